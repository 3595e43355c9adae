#pragma once
// Rotary position embedding on a contiguous [batch, seq, dim] buffer (dim even):
// the pair (x[2i], x[2i+1]) at position t rotates by the angle t * frequency[i], or by
// its negative when `inverse` (which is also the VJP, a rotation being orthogonal).
// `frequency` holds dim / 2 values (the op computes them from theta and its scaling).
// Angles are computed in float64. Instantiated for float, double and BFloat16.

#include <cstdint>

namespace px::kernels {

template <class T>
void rope(const T* x, T* y, int64_t batch, int64_t seq, int64_t dim, const double* frequency, bool inverse);

}  // namespace px::kernels
