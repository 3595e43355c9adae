// Unary maps, tensor-scalar ops and the fused GELU backward: the one-input kernels.
// No multiply-add contraction: the AVX2/AVX-512 clones of the row loops (see
// kernels/elementwise_loops.h) would otherwise fuse a*b+c where the baseline
// clone rounds twice, and results would differ in the last bit between
// machines. The float32 math asks for its fused multiply-adds explicitly
// (math::fma_), which round alike everywhere. First, so it covers every
// function this file instantiates, headers included.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif
#include <cmath>

#include "kernels/elementwise_loops.h"
#include "kernels/elementwise_math.h"
#include "parallax/kernels/elementwise.h"

namespace px::kernels {

namespace {

using detail::Compute;

template <class T, class Fn>
void map_lifted(T* out, std::span<const int64_t> shape, const T* x, std::span<const int64_t> x_strides, Fn fn) {
  detail::map1(out, shape, x, x_strides, detail::lift<T>(fn));
}

// The ops that only make sense on floating dtypes (C is float or double).
template <class T>
void floating_unary(UnaryOp op, T* out, std::span<const int64_t> shape, const T* x,
                    std::span<const int64_t> x_strides) {
  using C = Compute<T>;
  auto run = [&](auto fn) { map_lifted(out, shape, x, x_strides, fn); };
  switch (op) {
    case UnaryOp::Neg:
      return run([](C v) { return -v; });
    case UnaryOp::Abs:
      return run([](C v) { return std::abs(v); });
    case UnaryOp::Relu:
      return run([](C v) { return v < C(0) ? C(0) : v; });  // NaN stays NaN
    case UnaryOp::Exp:
      return run([](C v) { return math::exp_(v); });
    case UnaryOp::Log:
      return run([](C v) { return std::log(v); });
    case UnaryOp::Sqrt:
      return run([](C v) { return std::sqrt(v); });
    case UnaryOp::Rsqrt:
      return run([](C v) { return C(1) / std::sqrt(v); });
    case UnaryOp::Tanh:
      return run([](C v) { return math::tanh_(v); });
    case UnaryOp::Sigmoid:
      return run([](C v) { return math::sigmoid_(v); });
    case UnaryOp::Silu:
      return run([](C v) { return v * math::sigmoid_(v); });
    case UnaryOp::GeluErf:
      return run([](C v) { return math::gelu_erf(v); });
    case UnaryOp::GeluTanh:
      return run([](C v) { return math::gelu_tanh(v); });
  }
}

void int_unary(UnaryOp op, int64_t* out, std::span<const int64_t> shape, const int64_t* x,
               std::span<const int64_t> x_strides) {
  auto run = [&](auto fn) { detail::map1(out, shape, x, x_strides, fn); };
  auto negate = [](int64_t v) { return detail::wrapping_sub<int64_t>(0, v); };
  switch (op) {
    case UnaryOp::Neg:
      return run(negate);
    case UnaryOp::Abs:
      return run([negate](int64_t v) { return v < 0 ? negate(v) : v; });
    case UnaryOp::Relu:
      return run([](int64_t v) { return v < 0 ? int64_t{0} : v; });
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Silu:
    case UnaryOp::GeluErf:
    case UnaryOp::GeluTanh:
      PX_ASSERT(false && "floating-only unary op on int64");
      return;
  }
}

// x ** p, with the common exponents as plain arithmetic (faster, and exact where pow is not needed).
template <class T>
void power(T* out, std::span<const int64_t> shape, const T* x, std::span<const int64_t> x_strides, double exponent) {
  using C = Compute<T>;
  auto run = [&](auto fn) { map_lifted(out, shape, x, x_strides, fn); };
  if (exponent == 1.0) return run([](C v) { return v; });
  if (exponent == 2.0) return run([](C v) { return v * v; });
  if (exponent == 0.5) return run([](C v) { return std::sqrt(v); });
  if (exponent == -1.0) return run([](C v) { return C(1) / v; });
  const C p = static_cast<C>(exponent);
  run([p](C v) { return std::pow(v, p); });
}

template <class T>
void scalar_typed(ScalarOp op, T* out, std::span<const int64_t> shape, const T* x, std::span<const int64_t> x_strides,
                  double scalar) {
  using C = Compute<T>;
  const C s = static_cast<C>(scalar);
  auto run = [&](auto fn) { map_lifted(out, shape, x, x_strides, fn); };
  switch (op) {
    case ScalarOp::Add:
      return run([s](C v) { return detail::wrapping_add(v, s); });
    case ScalarOp::Sub:
      return run([s](C v) { return detail::wrapping_sub(v, s); });
    case ScalarOp::RSub:
      return run([s](C v) { return detail::wrapping_sub(s, v); });
    case ScalarOp::Mul:
      return run([s](C v) { return detail::wrapping_mul(v, s); });
    case ScalarOp::Div:
    case ScalarOp::RDiv:
    case ScalarOp::Pow:
      if constexpr (std::is_floating_point_v<C>) {
        if (op == ScalarOp::Div) return run([s](C v) { return v / s; });
        if (op == ScalarOp::RDiv) return run([s](C v) { return s / v; });
        return power(out, shape, x, x_strides, scalar);
      } else {
        PX_ASSERT(false && "floating-only scalar op on int64");
        return;
      }
  }
}

}  // namespace

void unary(UnaryOp op, DType dtype, void* out, std::span<const int64_t> shape, const void* x,
           std::span<const int64_t> x_strides) {
  detail::visit_numeric(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, int64_t>) {
      int_unary(op, static_cast<int64_t*>(out), shape, static_cast<const int64_t*>(x), x_strides);
    } else {
      floating_unary(op, static_cast<T*>(out), shape, static_cast<const T*>(x), x_strides);
    }
  });
}

void scalar_op(ScalarOp op, DType dtype, void* out, std::span<const int64_t> shape, const void* x,
               std::span<const int64_t> x_strides, double scalar) {
  if (dtype == DType::Int64) PX_ASSERT(scalar == std::trunc(scalar) && "int64 scalar op needs an integral scalar");
  detail::visit_numeric(dtype, [&](auto zero) {
    using T = decltype(zero);
    scalar_typed(op, static_cast<T*>(out), shape, static_cast<const T*>(x), x_strides, scalar);
  });
}

void gelu_backward(GeluApprox approx, DType dtype, void* out, std::span<const int64_t> shape, const void* grad,
                   std::span<const int64_t> grad_strides, const void* x, std::span<const int64_t> x_strides) {
  detail::visit_numeric(dtype, [&](auto zero) {
    using T = decltype(zero);
    using C = Compute<T>;
    if constexpr (std::is_floating_point_v<C>) {
      auto run = [&](auto fn) {
        detail::map2(static_cast<T*>(out), shape, static_cast<const T*>(grad), grad_strides, static_cast<const T*>(x),
                     x_strides, detail::lift<T>(fn));
      };
      switch (approx) {
        case GeluApprox::Erf:
          return run([](C g, C v) { return g * math::gelu_erf_grad(v); });
        case GeluApprox::Tanh:
          return run([](C g, C v) { return g * math::gelu_tanh_grad(v); });
      }
    } else {
      PX_ASSERT(false && "gelu_backward needs a floating dtype");
    }
  });
}

}  // namespace px::kernels
