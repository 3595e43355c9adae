#include "parallax/kernels/softmax.h"

#include <algorithm>
#include <vector>

#include "kernels/softmax_math.h"
#include "parallax/core/parallel.h"

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
PX_TARGET_AVX512 void softmax_slices_avx512(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log,
                                            float* stats) {
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

// Outer slices are independent: they run on the current pool (core/parallel.h) in chunks.
template <class T>
void softmax_impl(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  using A = Acc<T>;
  const int64_t slice = n * inner;
  parallel_for(outer, rows_per_chunk(slice), [&](int64_t begin, int64_t end) {
    std::vector<A> stats(static_cast<size_t>(2 * inner));
    if constexpr (std::is_same_v<T, A>) {
      softmax_dispatch<A>(x + begin * slice, y + begin * slice, end - begin, n, inner, log, stats.data());
    } else {
      // Storage-only types (bfloat16) compute each slice in float32 scratch.
      std::vector<A> in(static_cast<size_t>(slice)), out(static_cast<size_t>(slice));
      for (int64_t o = begin; o < end; ++o) {
        detail::convert_row(x + o * slice, in.data(), slice);
        softmax_dispatch<A>(in.data(), out.data(), 1, n, inner, log, stats.data());
        detail::convert_row(out.data(), y + o * slice, slice);
      }
    }
  });
}

// ---- the backward: dx from grad and the forward's output y, row by row ----

// y = exp(x) over a row: float32 on vectors V, float64 (V = void) with std::exp.
template <class A, class V>
PX_ROW_INLINE void exp_row_of(const A* __restrict x, A* __restrict y, int64_t n) {
  if constexpr (std::is_void_v<V>) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
  } else {
    constexpr int64_t kWidth = sizeof(V) / sizeof(float);
    int64_t body = n - n % kWidth;
    for (int64_t i = 0; i < body; i += kWidth) {
      V v;
      std::memcpy(&v, x + i, sizeof(V));
      detail::exp_in_place(v);
      std::memcpy(y + i, &v, sizeof(V));
    }
    if (body < n) {
      V v;
      detail::load_padded(v, x + body, n - body, 0.0f);
      detail::exp_in_place(v);
      detail::store_partial(y + body, n - body, v);
    }
  }
}

// Sum of a * b over a row, with the kLanes partial sums of detail::row_sum.
template <class A>
PX_ROW_INLINE A row_dot(const A* __restrict a, const A* __restrict b, int64_t n) {
  A partial[detail::kLanes] = {};
  int64_t body = n - n % detail::kLanes;
  for (int64_t i = 0; i < body; i += detail::kLanes) {
    for (int64_t l = 0; l < detail::kLanes; ++l) partial[l] += a[i + l] * b[i + l];
  }
  A tail = 0;
  for (int64_t i = body; i < n; ++i) tail += a[i] * b[i];
  return detail::sum_partials(partial, tail);
}

// One contiguous row (inner == 1): its sum, then dx.
template <class A, class V>
PX_ROW_INLINE void backward_row(const A* __restrict g, const A* __restrict y, A* __restrict dx, int64_t n, bool log) {
  if (log) {
    const A s = detail::row_sum(g, n);
    exp_row_of<A, V>(y, dx, n);
    for (int64_t i = 0; i < n; ++i) dx[i] = g[i] - dx[i] * s;
    return;
  }
  const A s = row_dot(g, y, n);
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (g[i] - s);
}

// Down columns (inner > 1), one step j along n for w adjacent columns (rows) at a time, as the
// forward's column sums go: first each column's sum, total[k] += ...
template <class A>
PX_ROW_INLINE void accumulate_columns(const A* __restrict g, const A* __restrict y, A* __restrict total, int64_t w,
                                      bool log) {
  if (log) {
    for (int64_t k = 0; k < w; ++k) total[k] += g[k];
    return;
  }
  for (int64_t k = 0; k < w; ++k) total[k] += g[k] * y[k];
}

// ... then dx from the finished sums.
template <class A, class V>
PX_ROW_INLINE void output_columns(const A* __restrict g, const A* __restrict y, const A* __restrict total,
                                  A* __restrict dx, int64_t w, bool log) {
  if (log) {
    exp_row_of<A, V>(y, dx, w);
    for (int64_t k = 0; k < w; ++k) dx[k] = g[k] - dx[k] * total[k];
    return;
  }
  for (int64_t k = 0; k < w; ++k) dx[k] = y[k] * (g[k] - total[k]);
}

// Scratch values backward_range needs: the column sums (inner > 1) and, for storage-only types
// (bfloat16), float32 copies of grad, y and dx for one row (or one step of a run of columns).
template <class T>
int64_t backward_scratch_size(int64_t n, int64_t inner) {
  int64_t size = inner > 1 ? inner : 0;
  if constexpr (!std::is_same_v<T, Acc<T>>) size += 3 * (inner > 1 ? inner : n);
  return size;
}

// Rows [begin, end) of the [outer, n, inner] view (row r is (r / inner, :, r % inner)). Down
// columns, a range's rows within one outer slice are adjacent columns, done together.
template <class T, class V>
PX_ROW_INLINE void backward_range(const T* g, const T* y, T* dx, int64_t n, int64_t inner, int64_t begin, int64_t end,
                                  bool log, Acc<T>* scratch) {
  using A = Acc<T>;
  constexpr bool kDirect = std::is_same_v<T, A>;
  if (inner == 1) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t at = r * n;
      if constexpr (kDirect) {
        backward_row<A, V>(g + at, y + at, dx + at, n, log);
      } else {
        A* gs = scratch;
        A* ys = scratch + n;
        A* ds = scratch + 2 * n;
        detail::convert_row(g + at, gs, n);
        detail::convert_row(y + at, ys, n);
        backward_row<A, V>(gs, ys, ds, n, log);
        detail::convert_row(ds, dx + at, n);
      }
    }
    return;
  }
  A* total = scratch;
  A* gs = scratch + inner;
  A* ys = gs + inner;
  A* ds = ys + inner;
  for (int64_t r = begin; r < end;) {
    const int64_t k0 = r % inner;
    const int64_t w = std::min(inner - k0, end - r);
    const int64_t base = (r / inner) * n * inner + k0;
    std::fill(total, total + w, A(0));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = base + j * inner;
      if constexpr (kDirect) {
        accumulate_columns(g + at, y + at, total, w, log);
      } else {
        detail::convert_row(g + at, gs, w);
        if (!log) detail::convert_row(y + at, ys, w);
        accumulate_columns(gs, ys, total, w, log);
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = base + j * inner;
      if constexpr (kDirect) {
        output_columns<A, V>(g + at, y + at, total, dx + at, w, log);
      } else {
        detail::convert_row(g + at, gs, w);
        detail::convert_row(y + at, ys, w);
        output_columns<A, V>(gs, ys, total, ds, w, log);
        detail::convert_row(ds, dx + at, w);
      }
    }
    r += w;
  }
}

#if PX_KERNELS_HAVE_AVX2
template <class T>
PX_TARGET_AVX2 void backward_range_avx2(const T* g, const T* y, T* dx, int64_t n, int64_t inner, int64_t begin,
                                        int64_t end, bool log, float* scratch) {
  backward_range<T, detail::Float8>(g, y, dx, n, inner, begin, end, log, scratch);
}
template <class T>
PX_TARGET_AVX512 void backward_range_avx512(const T* g, const T* y, T* dx, int64_t n, int64_t inner, int64_t begin,
                                            int64_t end, bool log, float* scratch) {
  backward_range<T, detail::Float16>(g, y, dx, n, inner, begin, end, log, scratch);
}
#endif

// The backward of rows [begin, end), on the widest float32 code path this CPU runs.
template <class T>
void softmax_backward_impl(const T* g, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, int64_t begin,
                           int64_t end, bool log) {
  using A = Acc<T>;
  begin = std::max<int64_t>(begin, 0);
  end = std::min(end, outer * inner);
  if (n == 0 || begin >= end) return;
  std::vector<A> scratch(static_cast<size_t>(backward_scratch_size<T>(n, inner)));
#if PX_KERNELS_HAVE_AVX2
  if constexpr (std::is_same_v<A, float>) {
    if (detail::cpu_has_avx512()) return backward_range_avx512<T>(g, y, dx, n, inner, begin, end, log, scratch.data());
    if (detail::cpu_has_avx2()) return backward_range_avx2<T>(g, y, dx, n, inner, begin, end, log, scratch.data());
  }
#endif
  backward_range<T, BaseVector<A>>(g, y, dx, n, inner, begin, end, log, scratch.data());
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

template <class T>
void softmax_backward_rows(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, int64_t begin,
                           int64_t end) {
  softmax_backward_impl(grad, y, dx, outer, n, inner, begin, end, /*log=*/false);
}

template <class T>
void log_softmax_backward_rows(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, int64_t begin,
                               int64_t end) {
  softmax_backward_impl(grad, y, dx, outer, n, inner, begin, end, /*log=*/true);
}

// Rows run on the current pool (core/parallel.h) in chunks.
template <class T>
void softmax_backward(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner) {
  parallel_for(outer * inner, rows_per_chunk(n),
               [&](int64_t begin, int64_t end) { softmax_backward_rows(grad, y, dx, outer, n, inner, begin, end); });
}

template <class T>
void log_softmax_backward(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner) {
  parallel_for(outer * inner, rows_per_chunk(n), [&](int64_t begin, int64_t end) {
    log_softmax_backward_rows(grad, y, dx, outer, n, inner, begin, end);
  });
}

#define PX_INSTANTIATE_SOFTMAX_BACKWARD(T)                                                                     \
  template void softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t);                        \
  template void log_softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, int64_t);                    \
  template void softmax_backward_rows<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t); \
  template void log_softmax_backward_rows<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t);

PX_INSTANTIATE_SOFTMAX_BACKWARD(float)
PX_INSTANTIATE_SOFTMAX_BACKWARD(double)
PX_INSTANTIATE_SOFTMAX_BACKWARD(BFloat16)
#undef PX_INSTANTIATE_SOFTMAX_BACKWARD

}  // namespace px::kernels
