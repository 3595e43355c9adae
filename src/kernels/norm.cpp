#include "parallax/kernels/norm.h"

#include <vector>

#include "kernels/softmax_math.h"
#include "parallax/core/parallel.h"

namespace px::kernels {

namespace {

using detail::Acc;

// y = (x - center) * rstd * weight + bias in one pass, the affine parts compiled in or out.
template <bool kWeight, bool kBias, class A>
PX_ROW_INLINE void normalize_row(const A* __restrict x, const A* __restrict weight, const A* __restrict bias,
                                 A* __restrict y, int64_t n, A pivot, A shift, A rstd) {
  for (int64_t i = 0; i < n; ++i) {
    A value = ((x[i] - pivot) - shift) * rstd;
    if constexpr (kWeight) value *= weight[i];
    if constexpr (kBias) value += bias[i];
    y[i] = value;
  }
}

// Normalizes `rows` rows of length n; `rms` skips the mean. Two passes over each row while it is in cache.
// Statistics are taken relative to the row's first element: x - x[0] is exact for nearby values, so a
// large common offset does not swamp float32 sums.
template <bool kWeight, bool kBias, class A>
PX_ROW_INLINE void norm_rows(const A* x, const A* weight, const A* bias, A* y, int64_t rows, int64_t n, A eps,
                             bool rms) {
  auto count = static_cast<A>(n);
  for (int64_t r = 0; r < rows; ++r) {
    const A* in = x + r * n;
    A pivot = rms ? A(0) : in[0];
    A shift = rms ? A(0) : detail::row_sum_dev(in, n, pivot) / count;  // mean - pivot
    A rstd = A(1) / std::sqrt(detail::row_sum_sq_dev(in, n, pivot, shift) / count + eps);
    normalize_row<kWeight, kBias>(in, weight, bias, y + r * n, n, pivot, shift, rstd);
  }
}

template <class A>
PX_ROW_INLINE void norm_rows(const A* x, const A* weight, const A* bias, A* y, int64_t rows, int64_t n, A eps,
                             bool rms) {
  if (n == 0) return;
  if (weight && bias) return norm_rows<true, true>(x, weight, bias, y, rows, n, eps, rms);
  if (weight) return norm_rows<true, false>(x, weight, bias, y, rows, n, eps, rms);
  if (bias) return norm_rows<false, true>(x, weight, bias, y, rows, n, eps, rms);
  norm_rows<false, false>(x, weight, bias, y, rows, n, eps, rms);
}

#if PX_KERNELS_HAVE_AVX2
PX_TARGET_AVX2 void norm_rows_avx2(const float* x, const float* weight, const float* bias, float* y, int64_t rows,
                                   int64_t n, float eps, bool rms) {
  norm_rows<float>(x, weight, bias, y, rows, n, eps, rms);
}
#endif

template <class A>
void norm_dispatch(const A* x, const A* weight, const A* bias, A* y, int64_t rows, int64_t n, A eps, bool rms) {
#if PX_KERNELS_HAVE_AVX2
  if constexpr (std::is_same_v<A, float>) {
    if (detail::cpu_has_avx2()) return norm_rows_avx2(x, weight, bias, y, rows, n, eps, rms);
  }
#endif
  norm_rows<A>(x, weight, bias, y, rows, n, eps, rms);
}

// A [n] parameter in the accumulation type: the buffer itself when the types agree, else a converted copy.
template <class T>
const Acc<T>* param_as_acc(const T* param, int64_t n, std::vector<Acc<T>>& copy) {
  if constexpr (std::is_same_v<T, Acc<T>>) {
    return param;
  } else {
    if (!param) return nullptr;
    copy.resize(static_cast<size_t>(n));
    detail::convert_row(param, copy.data(), n);
    return copy.data();
  }
}

template <class T>
void norm_impl(const T* x, const T* weight, const T* bias, T* y, int64_t rows, int64_t n, double eps, bool rms) {
  using A = Acc<T>;
  if (n == 0) return;
  std::vector<A> weight_copy, bias_copy;
  const A* w = param_as_acc(weight, n, weight_copy);
  const A* b = param_as_acc(bias, n, bias_copy);
  auto a_eps = static_cast<A>(eps);
  // Rows are independent: they run on the current pool (core/parallel.h) in chunks.
  parallel_for(rows, rows_per_chunk(n), [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, A>) {
      norm_dispatch<A>(x + begin * n, w, b, y + begin * n, end - begin, n, a_eps, rms);
    } else {
      // Storage-only types (bfloat16) go through float32 scratch rows.
      std::vector<A> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
      for (int64_t r = begin; r < end; ++r) {
        detail::convert_row(x + r * n, in.data(), n);
        norm_dispatch<A>(in.data(), w, b, out.data(), 1, n, a_eps, rms);
        detail::convert_row(out.data(), y + r * n, n);
      }
    }
  });
}

}  // namespace

template <class T>
void layer_norm(const T* x, const T* weight, const T* bias, T* y, int64_t rows, int64_t n, double eps) {
  norm_impl(x, weight, bias, y, rows, n, eps, /*rms=*/false);
}

template <class T>
void rms_norm(const T* x, const T* weight, T* y, int64_t rows, int64_t n, double eps) {
  norm_impl(x, weight, static_cast<const T*>(nullptr), y, rows, n, eps, /*rms=*/true);
}

template void layer_norm<float>(const float*, const float*, const float*, float*, int64_t, int64_t, double);
template void layer_norm<double>(const double*, const double*, const double*, double*, int64_t, int64_t, double);
template void layer_norm<BFloat16>(const BFloat16*, const BFloat16*, const BFloat16*, BFloat16*, int64_t, int64_t,
                                   double);
template void rms_norm<float>(const float*, const float*, float*, int64_t, int64_t, double);
template void rms_norm<double>(const double*, const double*, double*, int64_t, int64_t, double);
template void rms_norm<BFloat16>(const BFloat16*, const BFloat16*, BFloat16*, int64_t, int64_t, double);

}  // namespace px::kernels
