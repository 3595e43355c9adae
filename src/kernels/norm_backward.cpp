// The fused backward of layer_norm and rms_norm (see kernels/norm.h).

#include <cmath>
#include <vector>

#include "kernels/softmax_math.h"
#include "parallax/core/parallel.h"
#include "parallax/kernels/norm.h"

namespace px::kernels {

namespace {

using detail::Acc;

// One row in the accumulation type; the statistics as the forward takes them (relative to the
// row's first element for layer_norm), so that xhat is the forward's own.
template <class A>
PX_ROW_INLINE void backward_row(const A* __restrict g, const A* __restrict x, const A* __restrict w, A* __restrict dx,
                                A* __restrict dw, int64_t n, A eps, bool center) {
  const auto count = static_cast<A>(n);
  const A pivot = center ? x[0] : A(0);
  const A shift = center ? detail::row_sum_dev(x, n, pivot) / count : A(0);
  const A rstd = A(1) / std::sqrt(detail::row_sum_sq_dev(x, n, pivot, shift) / count + eps);
  A sum_dxhat = 0, sum_dxhat_xhat = 0;
  for (int64_t i = 0; i < n; ++i) {
    const A xhat = ((x[i] - pivot) - shift) * rstd;
    const A dxhat = w != nullptr ? g[i] * w[i] : g[i];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * xhat;
    if (dw != nullptr) dw[i] += g[i] * xhat;
  }
  const A a = center ? sum_dxhat / count : A(0);
  const A b = sum_dxhat_xhat / count;
  for (int64_t i = 0; i < n; ++i) {
    const A xhat = ((x[i] - pivot) - shift) * rstd;
    const A dxhat = w != nullptr ? g[i] * w[i] : g[i];
    dx[i] = rstd * (dxhat - a - xhat * b);
  }
}

template <class A>
void backward_rows(const A* g, const A* x, const A* w, A* dx, A* dw, int64_t rows, int64_t n, A eps, bool center) {
  for (int64_t r = 0; r < rows; ++r) backward_row(g + r * n, x + r * n, w, dx + r * n, dw, n, eps, center);
}

#if PX_KERNELS_HAVE_AVX2
PX_TARGET_AVX2 void backward_rows_avx2(const float* g, const float* x, const float* w, float* dx, float* dw,
                                       int64_t rows, int64_t n, float eps, bool center) {
  backward_rows<float>(g, x, w, dx, dw, rows, n, eps, center);
}
#endif

template <class A>
void dispatch(const A* g, const A* x, const A* w, A* dx, A* dw, int64_t rows, int64_t n, A eps, bool center) {
#if PX_KERNELS_HAVE_AVX2
  if constexpr (std::is_same_v<A, float>) {
    if (detail::cpu_has_avx2()) return backward_rows_avx2(g, x, w, dx, dw, rows, n, eps, center);
  }
#endif
  backward_rows<A>(g, x, w, dx, dw, rows, n, eps, center);
}

}  // namespace

template <class T>
void norm_backward(const T* grad, const T* x, const T* weight, T* dx, T* dweight, int64_t rows, int64_t n, double eps,
                   bool center) {
  using A = Acc<T>;
  if (n == 0) return;
  std::vector<A> w_acc;
  const A* w = nullptr;
  if (weight != nullptr) {
    if constexpr (std::is_same_v<T, A>) {
      w = weight;
    } else {
      w_acc.resize(static_cast<size_t>(n));
      detail::convert_row(weight, w_acc.data(), n);
      w = w_acc.data();
    }
  }
  const auto a_eps = static_cast<A>(eps);
  // Row chunks run on the current pool (core/parallel.h); each sums its rows' weight gradient
  // into its own row of partials, and the partials add up in chunk order below: the chunks
  // depend only on the shape, so the bits do not depend on the thread count.
  const int64_t grain = rows_per_chunk(n);
  const Chunks chunks(rows, grain);
  std::vector<A> partials(dweight != nullptr ? static_cast<size_t>(chunks.count * n) : 0, A(0));
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    A* dw = dweight != nullptr ? partials.data() + (begin / chunks.size) * n : nullptr;
    if constexpr (std::is_same_v<T, A>) {
      dispatch<A>(grad + begin * n, x + begin * n, w, dx + begin * n, dw, end - begin, n, a_eps, center);
    } else {
      // Storage-only types (bfloat16) go through float32 scratch rows.
      std::vector<A> g_row(static_cast<size_t>(n)), x_row(static_cast<size_t>(n)), dx_row(static_cast<size_t>(n));
      for (int64_t r = begin; r < end; ++r) {
        detail::convert_row(grad + r * n, g_row.data(), n);
        detail::convert_row(x + r * n, x_row.data(), n);
        dispatch<A>(g_row.data(), x_row.data(), w, dx_row.data(), dw, 1, n, a_eps, center);
        detail::convert_row(dx_row.data(), dx + r * n, n);
      }
    }
  });
  if (dweight == nullptr) return;
  std::vector<A> dw(static_cast<size_t>(n), A(0));
  for (int64_t c = 0; c < chunks.count; ++c) {
    const A* part = partials.data() + c * n;
    for (int64_t i = 0; i < n; ++i) dw[static_cast<size_t>(i)] += part[i];
  }
  detail::convert_row(dw.data(), dweight, n);
}

template void norm_backward<float>(const float*, const float*, const float*, float*, float*, int64_t, int64_t, double,
                                   bool);
template void norm_backward<double>(const double*, const double*, const double*, double*, double*, int64_t, int64_t,
                                    double, bool);
template void norm_backward<BFloat16>(const BFloat16*, const BFloat16*, const BFloat16*, BFloat16*, BFloat16*, int64_t,
                                      int64_t, double, bool);

}  // namespace px::kernels
