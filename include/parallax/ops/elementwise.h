#pragma once
// The elementwise ops as C++ functions and operators: thin wrappers over the
// dispatcher, so they run eagerly, on meta tensors, or into a trace alike.
//
// Tensor-tensor ops broadcast (NumPy rules) and need equal dtypes; they take
// f32, f64, bf16 and i64 (div and the transcendental ops: floating only).
// Tensor-scalar forms keep the tensor's dtype; on i64 tensors +, -, * take
// integral scalars only (a DTypeError otherwise: cast to a floating dtype first).
//
//   Tensor y = px::gelu(x * 2.0 + bias, "tanh");
//   Tensor mask = px::gt(y, threshold);           // bool
//   Tensor z = px::where(mask, y, px::neg(y));

#include <string_view>

#include "parallax/core/tensor.h"

namespace px {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor add(const Tensor& x, double scalar);  // add_scalar
Tensor sub(const Tensor& x, double scalar);  // sub_scalar
Tensor mul(const Tensor& x, double scalar);  // mul_scalar
Tensor div(const Tensor& x, double scalar);  // div_scalar
Tensor add(double scalar, const Tensor& x);  // add_scalar
Tensor sub(double scalar, const Tensor& x);  // rsub_scalar: scalar - x
Tensor mul(double scalar, const Tensor& x);  // mul_scalar
Tensor div(double scalar, const Tensor& x);  // rdiv_scalar: scalar / x
Tensor pow(const Tensor& x, double exponent);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor silu(const Tensor& x);
// approximate: "none" (exact, with erf) or "tanh".
Tensor gelu(const Tensor& x, std::string_view approximate = "none");

// cond ? a : b, elementwise; cond is bool; all three broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// Comparisons: bool results, any dtype (both the same), broadcasting.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// Comparison operators are left out on purpose: Tensor == Tensor reads as identity.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& x, double scalar);
Tensor operator-(const Tensor& x, double scalar);
Tensor operator*(const Tensor& x, double scalar);
Tensor operator/(const Tensor& x, double scalar);
Tensor operator+(double scalar, const Tensor& x);
Tensor operator-(double scalar, const Tensor& x);
Tensor operator*(double scalar, const Tensor& x);
Tensor operator/(double scalar, const Tensor& x);
Tensor operator-(const Tensor& x);

}  // namespace px
