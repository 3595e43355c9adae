#include "parallax/kernels/softmax.h"

#include <vector>

#include "kernels/softmax_math.h"

namespace px::kernels {

namespace {

using detail::Acc;
using detail::Float4;

// The vector type of the float32 exp for this accumulation type (void: scalar float64).
template <class A>
using BaseVector = std::conditional_t<std::is_same_v<A, float>, Float4, void>;

template <class A, class V>
PX_ROW_INLINE void softmax_row(const A* __restrict x, A* __restrict y, int64_t n, bool log) {
  A max = detail::row_max_of<A, V>(x, n);
  A total = detail::exp_row<A, V>(x, y, n, max);
  if (log) {
    A lse = max + std::log(total);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - lse;
    return;
  }
  A inv = A(1) / total;
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

// One [n, inner] slice, softmax down each column, vectorized across columns.
// `stats` holds 2 * inner scratch values: the column maxima, then the sums.
template <class A, class V>
PX_ROW_INLINE void softmax_columns(const A* __restrict x, A* __restrict y, int64_t n, int64_t inner, bool log,
                                   A* __restrict stats) {
  A* max = stats;
  A* total = stats + inner;
  for (int64_t k = 0; k < inner; ++k) {
    max[k] = -std::numeric_limits<A>::infinity();
    total[k] = 0;
  }
  for (int64_t j = 0; j < n; ++j) detail::max_into<A, V>(x + j * inner, max, inner);
  for (int64_t j = 0; j < n; ++j) {
    A* out = y + j * inner;
    detail::exp_row_minus<A, V>(x + j * inner, max, out, inner);
    for (int64_t k = 0; k < inner; ++k) total[k] += out[k];
  }
  if (log) {
    for (int64_t k = 0; k < inner; ++k) total[k] = max[k] + std::log(total[k]);  // logsumexp
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t k = 0; k < inner; ++k) y[j * inner + k] = x[j * inner + k] - total[k];
    }
    return;
  }
  for (int64_t k = 0; k < inner; ++k) total[k] = A(1) / total[k];
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < inner; ++k) y[j * inner + k] *= total[k];
  }
}

// Rows up to this many bytes have the next one prefetched while they compute.
inline constexpr int64_t kPrefetchRowBytes = 8 << 10;

// Asks for a row that is about to be read: the exp pass of this row is compute bound,
// so the next row's load from memory overlaps it instead of stalling the max pass.
template <class A>
PX_ROW_INLINE void prefetch_row(const A* x, int64_t n) {
  const char* bytes = reinterpret_cast<const char*>(x);
  for (int64_t b = 0; b < n * static_cast<int64_t>(sizeof(A)); b += 64) __builtin_prefetch(bytes + b);
}

template <class A, class V>
PX_ROW_INLINE void softmax_slices(const A* x, A* y, int64_t outer, int64_t n, int64_t inner, bool log, A* stats) {
  int64_t slice = n * inner;
  const bool prefetch = inner == 1 && n * static_cast<int64_t>(sizeof(A)) <= kPrefetchRowBytes;
  for (int64_t o = 0; o < outer; ++o) {
    if (inner == 1) {
      if (prefetch && o + 1 < outer) prefetch_row(x + (o + 1) * slice, n);
      softmax_row<A, V>(x + o * slice, y + o * slice, n, log);
    } else {
      softmax_columns<A, V>(x + o * slice, y + o * slice, n, inner, log, stats);
    }
  }
}

#if PX_KERNELS_HAVE_AVX2
PX_TARGET_AVX2 void softmax_slices_avx2(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log,
                                        float* stats) {
  softmax_slices<float, detail::Float8>(x, y, outer, n, inner, log, stats);
}
// 16 lanes and 32 registers: the exp's constants stay in registers and its selects become masks.
PX_TARGET_AVX512 void softmax_slices_avx512(const float* x, float* y, int64_t outer, int64_t n, int64_t inner,
                                            bool log, float* stats) {
  softmax_slices<float, detail::Float16>(x, y, outer, n, inner, log, stats);
}
#endif

// Picks the widest float32 code path this CPU runs.
template <class A>
void softmax_dispatch(const A* x, A* y, int64_t outer, int64_t n, int64_t inner, bool log, A* stats) {
#if PX_KERNELS_HAVE_AVX2
  if constexpr (std::is_same_v<A, float>) {
    if (detail::cpu_has_avx512()) return softmax_slices_avx512(x, y, outer, n, inner, log, stats);
    if (detail::cpu_has_avx2()) return softmax_slices_avx2(x, y, outer, n, inner, log, stats);
  }
#endif
  softmax_slices<A, BaseVector<A>>(x, y, outer, n, inner, log, stats);
}

template <class T>
void softmax_impl(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  using A = Acc<T>;
  std::vector<A> stats(static_cast<size_t>(2 * inner));
  if constexpr (std::is_same_v<T, A>) {
    softmax_dispatch<A>(x, y, outer, n, inner, log, stats.data());
  } else {
    // Storage-only types (bfloat16) compute each slice in float32 scratch.
    int64_t slice = n * inner;
    std::vector<A> in(static_cast<size_t>(slice)), out(static_cast<size_t>(slice));
    for (int64_t o = 0; o < outer; ++o) {
      detail::convert_row(x + o * slice, in.data(), slice);
      softmax_dispatch<A>(in.data(), out.data(), 1, n, inner, log, stats.data());
      detail::convert_row(out.data(), y + o * slice, slice);
    }
  }
}

}  // namespace

template <class T>
void softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  softmax_impl(x, y, outer, n, inner, /*log=*/false);
}

template <class T>
void log_softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  softmax_impl(x, y, outer, n, inner, /*log=*/true);
}

template void softmax<float>(const float*, float*, int64_t, int64_t, int64_t);
template void softmax<double>(const double*, double*, int64_t, int64_t, int64_t);
template void softmax<BFloat16>(const BFloat16*, BFloat16*, int64_t, int64_t, int64_t);
template void log_softmax<float>(const float*, float*, int64_t, int64_t, int64_t);
template void log_softmax<double>(const double*, double*, int64_t, int64_t, int64_t);
template void log_softmax<BFloat16>(const BFloat16*, BFloat16*, int64_t, int64_t, int64_t);

}  // namespace px::kernels
