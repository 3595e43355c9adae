#pragma once
// The linalg family's functional API: thin wrappers over the dispatcher, so
// every call traces like any op. GEMM runs in OpenBLAS (f32, f64; bf16 via f32).

#include "parallax/core/tensor.h"

namespace px {

// torch.matmul: 1-D operands are a row (lhs) or a column (rhs) whose dim is
// dropped from the result; dims before the last two are batch dims and broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
// x·weightᵀ + bias with weight [out, in], x [..., in], bias [out] (optional: pass an undefined Tensor).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace px
