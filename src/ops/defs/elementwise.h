#pragma once
// Private: the elementwise op family (registered by register_elementwise.cpp)
// and the helpers its definitions share (elementwise_common.cpp).
//
// Cost convention (flops per output element): 1 for +, -, *, /, max, min, abs,
// neg, relu, comparisons and selects (one vector instruction each); sqrt 1 and
// rsqrt 2 (hardware instructions); a transcendental (exp, log, tanh, erf, a
// general pow) counts 10, roughly the polynomial that evaluates it; composites
// add up their parts (sigmoid 12, silu 13, gelu 15, gelu_backward 25). All of
// these ops are memory-bound in practice: bytes moved dominate their cost.

#include <functional>
#include <span>
#include <string_view>

#include "parallax/ops/op_def.h"

namespace px::defs {

// binary.cpp: tensor-tensor arithmetic with broadcasting.
OpDef def_add();
OpDef def_sub();
OpDef def_mul();
OpDef def_div();
OpDef def_maximum();
OpDef def_minimum();

// binary_scalar.cpp: tensor-scalar arithmetic (the scalar is the attribute `scalar`, or `exponent` for pow).
OpDef def_add_scalar();
OpDef def_sub_scalar();
OpDef def_rsub_scalar();
OpDef def_mul_scalar();
OpDef def_div_scalar();
OpDef def_rdiv_scalar();
OpDef def_pow();

// unary.cpp
OpDef def_neg();
OpDef def_abs();
OpDef def_exp();
OpDef def_log();
OpDef def_sqrt();
OpDef def_rsqrt();
OpDef def_tanh();
OpDef def_sigmoid();
OpDef def_relu();
OpDef def_silu();

// unary_gelu.cpp: gelu and its fused backward (the VJP of gelu; differentiable itself).
OpDef def_gelu();
OpDef def_gelu_backward();

// compare.cpp: comparisons with broadcasting, bool results, no VJP.
OpDef def_eq();
OpDef def_ne();
OpDef def_lt();
OpDef def_le();
OpDef def_gt();
OpDef def_ge();

// where.cpp
OpDef def_where();

// --- shared helpers (elementwise_common.cpp) ---

inline constexpr DType kArithmeticDTypes[] = {DType::Float32, DType::Float64, DType::BFloat16, DType::Int64};

// Throws DTypeError naming `op` and `meta` unless meta's dtype is one of `allowed`.
void require_dtype_in(std::string_view op, const TensorMeta& meta, std::span<const DType> allowed);

// `tensor`'s strides seen through broadcasting as `out_shape` (0 on broadcast dims).
Strides broadcast_strides_of(const Tensor& tensor, const Shape& out_shape);

// The gradient of a (possibly broadcast) input from the gradient of the output:
// summed back to the input's shape. Undefined for non-floating inputs.
Tensor input_grad(const Tensor& input, const Tensor& grad);

// A 0-d tensor holding `value`, made with the "full" op so that it traces; it broadcasts against anything.
Tensor scalar_tensor(double value, DType dtype);

// The VJP of a one-input op from grad_fn(grad, ctx); the gradient is undefined
// where none flows in or the input is not floating.
VjpFn single_input_vjp(std::function<Tensor(const Tensor& grad, const VjpContext& ctx)> grad_fn);

// Cost function with a fixed number of flops per output element.
CostFn flops_per_element(double flops);

}  // namespace px::defs
