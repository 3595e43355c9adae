#pragma once
// Rotary position embedding on a contiguous [batch, seq, dim] buffer (dim even):
// the pair (x[2i], x[2i+1]) at position t rotates by the angle t * theta^(-2i/dim),
// or by its negative when `inverse` (which is also the VJP, a rotation being orthogonal).
// Angles are computed in float64. Instantiated for float, double and BFloat16.

#include <cstdint>

namespace px::kernels {

template <class T>
void rope(const T* x, T* y, int64_t batch, int64_t seq, int64_t dim, double theta, bool inverse);

}  // namespace px::kernels
