#pragma once
// Private: matmul and linear, and the operand layouts they share.

#include "ops/defs/common.h"
#include "parallax/kernels/gemm.h"

namespace px::defs {

OpDef def_matmul();
OpDef def_linear();

// The matrix of a matmul operand's last two dims (a 1-D lhs is one row, a 1-D rhs one column).
kernels::MatrixLayout lhs_matrix(const Tensor& a);
kernels::MatrixLayout rhs_matrix(const Tensor& b);
// The strides of `t`'s batch dims (all but its matrix dims) aligned right to
// `batch`; 0 where `t` broadcasts.
Strides batch_strides(const Tensor& t, const Shape& batch);
// Runs the batched GEMM for dense f32, f64 or bf16 operands into contiguous `out`.
void run_batched_matmul(const Tensor& a, const Tensor& b, const Tensor& out, const kernels::BatchedMatmul& args,
                        double beta);
// Throws DTypeError naming `op` unless every meta shares one dtype that GEMM supports (f32, f64, bf16).
void require_gemm_dtype(std::string_view op, const std::vector<TensorMeta>& metas);

}  // namespace px::defs
