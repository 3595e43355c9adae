#pragma once
// Fused softmax and log-softmax over one dim of a contiguous buffer viewed as
// [outer, n, inner]: the softmax runs along n. Numerically stable (the max is
// subtracted before exp). inner == 1 is the row case (last dim); inner > 1 runs
// down columns, vectorized across inner, so no transpose is needed.
// Instantiated for float, double and BFloat16 (computed in float32), as are the backwards below.

#include <cstdint>

namespace px::kernels {

template <class T>
void softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner);
template <class T>
void log_softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner);

// The backward of either over the same [outer, n, inner] view, from the forward's output y and
// its gradient: with s the sum along n of each row (float64 for double, float32 otherwise),
//   softmax_backward:      dx = y * (grad - s),     s = sum(grad * y)
//   log_softmax_backward:  dx = grad - exp(y) * s,  s = sum(grad)
// Row r, for r in [0, outer * inner), is the line (r / inner, :, r % inner) along n. Rows are
// independent: the *_rows forms compute rows [begin, end) only (touching no other row's dx), the
// unit of work for a caller that spreads rows over threads; the others compute all rows.
template <class T>
void softmax_backward(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner);
template <class T>
void log_softmax_backward(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner);
template <class T>
void softmax_backward_rows(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, int64_t begin,
                           int64_t end);
template <class T>
void log_softmax_backward_rows(const T* grad, const T* y, T* dx, int64_t outer, int64_t n, int64_t inner, int64_t begin,
                               int64_t end);

}  // namespace px::kernels
