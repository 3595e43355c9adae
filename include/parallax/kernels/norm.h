#pragma once
// Fused normalization kernels over the rows of a contiguous [rows, n] buffer.
// Each row is read from memory once and normalized while it sits in cache.
// weight and bias are contiguous [n] buffers or null (no affine part).
// Instantiated for float, double and BFloat16 (computed in float32).

#include <cstdint>

namespace px::kernels {

// y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance (two-pass, so it is exact
// for rows with a large mean).
template <class T>
void layer_norm(const T* x, const T* weight, const T* bias, T* y, int64_t rows, int64_t n, double eps);

// y = x / sqrt(mean(x^2) + eps) * weight.
template <class T>
void rms_norm(const T* x, const T* weight, T* y, int64_t rows, int64_t n, double eps);

// The backward of either, one pass per row with its statistics recomputed: with xhat the
// normalized row, rstd its 1/sqrt(var + eps) and dxhat = grad * weight,
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))   (layer_norm: center = true;
//   rms_norm drops the mean(dxhat) term), and, when dweight is not null, dweight = sum over the
// rows of grad * xhat (accumulated in float64 for double, float32 otherwise). weight may be null.
template <class T>
void norm_backward(const T* grad, const T* x, const T* weight, T* dx, T* dweight, int64_t rows, int64_t n, double eps,
                   bool center);

}  // namespace px::kernels
