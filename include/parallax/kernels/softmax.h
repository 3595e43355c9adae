#pragma once
// Fused softmax and log-softmax over one dim of a contiguous buffer viewed as
// [outer, n, inner]: the softmax runs along n. Numerically stable (the max is
// subtracted before exp). inner == 1 is the row case (last dim); inner > 1 runs
// down columns, vectorized across inner, so no transpose is needed.
// Instantiated for float, double and BFloat16 (computed in float32).

#include <cstdint>

namespace px::kernels {

template <class T>
void softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner);
template <class T>
void log_softmax(const T* x, T* y, int64_t outer, int64_t n, int64_t inner);

}  // namespace px::kernels
