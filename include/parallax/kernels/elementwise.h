#pragma once
// Elementwise CPU kernels: plain functions on pointers, a shape and strides.
//
// Every kernel writes a contiguous row-major output of `shape`. Each input comes
// with its own strides in elements, already broadcast to `shape` (0 on broadcast
// dims; see broadcast_strides in strided_iter.h). Inputs must not overlap the
// output. Values are typed by `dtype`: float32, float64, int64 and bfloat16 (a
// storage type: loaded as float32, computed, rounded back on store); bool only
// where stated. The caller (the op's kernel) has checked dtypes and shapes.
//
// The loops have contiguous fast paths that g++ -O3 vectorizes (float32 exp,
// tanh, sigmoid, GELU use branch-free approximations accurate to a few ulp
// so that they vectorize too; float64 uses <cmath>).

#include <cstdint>
#include <span>

#include "parallax/core/dtype.h"

namespace px::kernels {

// Integer ops wrap around on overflow (two's complement), as in PyTorch.
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Maximum, Minimum };

enum class UnaryOp : uint8_t { Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Silu, GeluErf, GeluTanh };

// Ops of a tensor and a scalar `s`: x + s, x - s, s - x, x * s, x / s, s / x, x ** s.
enum class ScalarOp : uint8_t { Add, Sub, RSub, Mul, Div, RDiv, Pow };

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

enum class GeluApprox : uint8_t { Erf, Tanh };

// out = a <op> b. Maximum and minimum propagate NaN. Div is for floating dtypes.
void binary(BinaryOp op, DType dtype, void* out, std::span<const int64_t> shape, const void* a,
            std::span<const int64_t> a_strides, const void* b, std::span<const int64_t> b_strides);

// out = op(x). Neg, Abs and Relu also take int64; the rest are floating only.
void unary(UnaryOp op, DType dtype, void* out, std::span<const int64_t> shape, const void* x,
           std::span<const int64_t> x_strides);

// out = x <op> scalar. For int64 (Add, Sub, RSub, Mul only) the scalar must be integral.
void scalar_op(ScalarOp op, DType dtype, void* out, std::span<const int64_t> shape, const void* x,
               std::span<const int64_t> x_strides, double scalar);

// out (bool) = a <op> b; any dtype, bool included.
void compare(CompareOp op, DType dtype, bool* out, std::span<const int64_t> shape, const void* a,
             std::span<const int64_t> a_strides, const void* b, std::span<const int64_t> b_strides);

// out = cond ? a : b; a, b and out of `dtype` (any dtype).
void where(DType dtype, void* out, std::span<const int64_t> shape, const bool* cond,
           std::span<const int64_t> cond_strides, const void* a, std::span<const int64_t> a_strides, const void* b,
           std::span<const int64_t> b_strides);

// out = grad * gelu'(x), floating dtypes.
void gelu_backward(GeluApprox approx, DType dtype, void* out, std::span<const int64_t> shape, const void* grad,
                   std::span<const int64_t> grad_strides, const void* x, std::span<const int64_t> x_strides);

}  // namespace px::kernels
