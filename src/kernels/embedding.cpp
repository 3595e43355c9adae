#include "parallax/kernels/embedding.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "parallax/core/dtype.h"
#include "parallax/core/error.h"

namespace px::kernels {

namespace {

// Checks every index before any output is written.
void check_indices(const char* op, const char* range_name, const int64_t* indices, int64_t count, int64_t limit) {
  for (int64_t i = 0; i < count; ++i) {
    if (indices[i] < 0 || indices[i] >= limit) {
      throw ValueError(std::string(op) + ": index " + std::to_string(indices[i]) + " at position " + std::to_string(i) +
                       " is out of range for " + range_name + " " + std::to_string(limit) + " (valid: 0.." +
                       std::to_string(limit - 1) + ")");
    }
  }
}

}  // namespace

template <class T>
void embedding(const T* weight, int64_t vocab, int64_t dim, const int64_t* indices, int64_t count, T* out) {
  check_indices("embedding", "vocabulary size", indices, count, vocab);
  for (int64_t i = 0; i < count; ++i) std::copy_n(weight + indices[i] * dim, dim, out + i * dim);
}

template <class T>
void embedding_backward(const T* grad, const int64_t* indices, int64_t count, int64_t dim, int64_t vocab, T* out) {
  check_indices("embedding_backward", "num_weights", indices, count, vocab);
  if constexpr (std::is_same_v<T, BFloat16>) {
    // Accumulate in float32: repeated bfloat16 additions would lose the small contributions.
    std::vector<float> sums(static_cast<size_t>(vocab * dim));
    for (int64_t i = 0; i < count; ++i) {
      float* row = sums.data() + indices[i] * dim;
      for (int64_t d = 0; d < dim; ++d) row[d] += static_cast<float>(grad[i * dim + d]);
    }
    for (int64_t k = 0; k < vocab * dim; ++k) {
      out[k] = BFloat16(static_cast<float>(out[k]) + sums[static_cast<size_t>(k)]);
    }
  } else {
    for (int64_t i = 0; i < count; ++i) {
      T* __restrict row = out + indices[i] * dim;
      const T* __restrict src = grad + i * dim;
      for (int64_t d = 0; d < dim; ++d) row[d] += src[d];
    }
  }
}

template <class T>
void one_hot(const int64_t* indices, int64_t count, int64_t classes, T* out) {
  check_indices("one_hot", "num_classes", indices, count, classes);
  T one;
  if constexpr (std::is_same_v<T, BFloat16>) {
    one = BFloat16(1.0f);
  } else {
    one = static_cast<T>(1);
  }
  for (int64_t i = 0; i < count; ++i) out[i * classes + indices[i]] = one;
}

#define PX_INSTANTIATE_GATHER(T)                                                       \
  template void embedding<T>(const T*, int64_t, int64_t, const int64_t*, int64_t, T*); \
  template void one_hot<T>(const int64_t*, int64_t, int64_t, T*);
PX_INSTANTIATE_GATHER(float)
PX_INSTANTIATE_GATHER(double)
PX_INSTANTIATE_GATHER(BFloat16)
PX_INSTANTIATE_GATHER(int64_t)
PX_INSTANTIATE_GATHER(bool)
#undef PX_INSTANTIATE_GATHER

template void embedding_backward<float>(const float*, const int64_t*, int64_t, int64_t, int64_t, float*);
template void embedding_backward<double>(const double*, const int64_t*, int64_t, int64_t, int64_t, double*);
template void embedding_backward<BFloat16>(const BFloat16*, const int64_t*, int64_t, int64_t, int64_t, BFloat16*);

}  // namespace px::kernels
