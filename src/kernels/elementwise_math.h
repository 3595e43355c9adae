#pragma once
// Private: the scalar math behind the elementwise kernels.
//
// float32 uses branch-free approximations (bit-mask selects instead of
// branches, bit casts instead of library calls, explicit fused multiply-adds)
// so that g++ vectorizes the loops that call them. Measured relative error
// (tests/kernels/elementwise_test.cpp), in units of float32 epsilon 1.19e-7:
// exp 0.8, sigmoid and silu 2, tanh 2.2; GELU 4 (exact) and 7.5 (tanh form) for
// x >= -3, and below 1e-5 down its far negative tail (where |gelu(x)| < 1e-2 and
// the rounding of the exponent's argument dominates). float64 uses <cmath>. The
// formulas avoid cancellation: sigmoid from exp(-|x|), the normal CDF from its
// smaller tail, tanh-GELU as x * sigmoid(2u).
//
// The fused multiply-adds cost a libm call each on x86-64 CPUs without FMA
// (before 2013's Haswell), where these kernels run about 10x slower than with
// separate multiplies and adds; elsewhere they make them about 2x faster.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace px::kernels::math {

inline constexpr double kSqrtHalf = 0.70710678118654752440;    // 1/sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2*pi)
inline constexpr double kGeluTanhC = 0.79788456080286535588;   // sqrt(2/pi)
inline constexpr double kGeluTanhK = 0.044715;

// cond ? a : b through bit masks. A plain ?: lets g++ thread the comparison into
// branches and sink the arithmetic into them, which stops vectorization (with
// -ftrapping-math it may not speculate that arithmetic back).
template <class C>
inline C select(bool cond, C a, C b) {
  using Bits = std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>;
  Bits mask = Bits{0} - static_cast<Bits>(cond);
  return std::bit_cast<C>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask));
}

// a*b + c rounded once. IEEE fma is exactly rounded, so it gives the same bits
// everywhere: one instruction in the AVX2/AVX-512 clones and on ARM, a libm call
// (slow, but exact) in the baseline x86-64 build. It is both faster and more
// accurate than a multiply and an add, which are rounded separately here.
inline float fma_(float a, float b, float c) { return std::fma(a, b, c); }

// exp(x) for float32 x in [-86.64, 88.72], unchecked: x = n*ln2 + r with
// |r| <= ln2/2 (Cody-Waite, n*kLn2Hi exact), exp(r) by a degree-6 Chebyshev fit
// (error 2e-9), times 2^n built from the exponent bits of the rounding shift.
inline float exp_f32_in_range(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  // 1.5 * 2^23 rounds x*log2e to an integer n; the 126 puts n + 126 in the low
  // mantissa bits, which shifted up are the exponent of 2^(n-1).
  constexpr float kShift = 12582912.0f + 126.0f;
  float shifted = fma_(x, kLog2e, kShift);
  float n = shifted - kShift;
  float r = fma_(n, -kLn2Lo, fma_(n, -kLn2Hi, x));
  float p = 0.0013941108434f;
  p = fma_(p, r, 0.00837512639815f);
  p = fma_(p, r, 0.0416663528968f);
  p = fma_(p, r, 0.166664155147f);
  p = fma_(p, r, 0.500000004712f);
  p = fma_(p, r, 1.00000003772f);
  p = fma_(p, r, 1.0f);
  // 2^n as 2 * 2^(n-1): n reaches 128 near ln(FLT_MAX), one past the largest exponent.
  float half_scale = std::bit_cast<float>(std::bit_cast<uint32_t>(shifted) << 23);
  return (p + p) * half_scale;
}

inline constexpr float kExpF32Hi = 88.72283905f;   // ln(FLT_MAX)
inline constexpr float kExpF32Lo = -86.64339256f;  // ln(2^-125): keeps 2^(n-1) a normal float

// exp(x) for float32 x <= 0 (the Gaussian's exp(-x^2/2)); flushes below 2^-125 to 0.
inline float exp_f32_nonpositive(float x) { return select(x < kExpF32Lo, 0.0f, exp_f32_in_range(x)); }

// exp(x) for float32: results below 2^-125 flush to zero; above FLT_MAX give
// +inf; NaN stays NaN. Out-of-range x is not clamped first (a clamp would be
// threaded into branches): the garbage computed there is replaced by the selects.
inline float exp_f32(float x) {
  float result = select(x > kExpF32Hi, std::numeric_limits<float>::infinity(), exp_f32_in_range(x));
  return select(x < kExpF32Lo, 0.0f, result);
}

// tanh(x) for float32: the odd rational minimax approximation p(x)/q(x) of
// degrees 13/6 that Eigen and XLA use, on x clamped to +-7.905 (where tanh
// rounds to +-1 in float32); tiny x returns x.
inline float tanh_f32(float x) {
  constexpr float kClamp = 7.90531110763549805f;
  float xc = select(x > kClamp, kClamp, select(x < -kClamp, -kClamp, x));  // NaN passes through
  float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = fma_(p, x2, 2.00018790482477e-13f);
  p = fma_(p, x2, -8.60467152213735e-11f);
  p = fma_(p, x2, 5.12229709037114e-08f);
  p = fma_(p, x2, 1.48572235717979e-05f);
  p = fma_(p, x2, 6.37261928875436e-04f);
  p = fma_(p, x2, 4.89352455891786e-03f);
  float q = 1.19825839466702e-06f;
  q = fma_(q, x2, 1.18534705686654e-04f);
  q = fma_(q, x2, 2.26843463243900e-03f);
  q = fma_(q, x2, 4.89352518554385e-03f);
  return select(std::abs(x) < 0.0004f, x, xc * p / q);
}

template <class C>
inline C exp_(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_f32(x);
  } else {
    return std::exp(x);
  }
}

template <class C>
inline C tanh_(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return tanh_f32(x);
  } else {
    return std::tanh(x);
  }
}

// exp(-|x|), which sigmoid and its relatives build on.
template <class C>
inline C exp_neg_abs(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_f32_nonpositive(-std::abs(x));
  } else {
    return std::exp(-std::abs(x));
  }
}

// The Gaussian at x, in the two forms the exact GELU needs (float32):
//   gauss = exp(-x^2/2), the standard normal density without its 1/sqrt(2pi);
//   tail  = Phi(-|x|) = t S(t) gauss, t = 1/(1 + 0.3|x|).
// S(t) = Phi(-a) exp(a^2/2) / t is smooth on t in (0, 1], going from 0.5 at a = 0
// to 0.3/sqrt(2pi) as a grows, so a degree-9 polynomial fits it to 2e-8 relative
// error for |x| <= 13.5 (beyond, the tail is below float32's normal range).
// The coefficients are a Chebyshev fit: scripts/fit-gelu-coefficients.py.
// The tail's relative error is dominated by the rounding of x^2/2 (its absolute
// error is the relative error of gauss): below 3e-7 for |x| <= 3, 4e-6 at 12.
struct Gaussian {
  float gauss;
  float tail;
};

inline Gaussian gaussian_f32(float x) {
  float a = std::abs(x);
  float t = 1.0f / fma_(0.3f, a, 1.0f);
  float s = -0.02085754845f;
  s = fma_(s, t, 0.1137380478f);
  s = fma_(s, t, -0.2313456705f);
  s = fma_(s, t, 0.1960452425f);
  s = fma_(s, t, -0.08302591112f);
  s = fma_(s, t, 0.09811377097f);
  s = fma_(s, t, 0.07770884967f);
  s = fma_(s, t, 0.1103812324f);
  s = fma_(s, t, 0.1195544155f);
  s = fma_(s, t, 0.1196875695f);
  float gauss = exp_f32_nonpositive((-0.5f * a) * a);  // -a/2 is exact: x^2/2 rounds once
  return {gauss, (t * s) * gauss};
}

// sigmoid(x) = 1 / (1 + exp(-x)) without overflow: from e = exp(-|x|) <= 1,
// sigmoid is 1/(1+e) for x >= 0 and e/(1+e) below.
template <class C>
inline C sigmoid_(C x) {
  C e = exp_neg_abs(x);
  C r = C(1) / (C(1) + e);
  return select(x < C(0), e * r, r);
}

// Phi(x), the standard normal CDF, from its smaller tail: accurate in both tails.
template <class C>
inline C normal_cdf(C x) {
  if constexpr (std::is_same_v<C, float>) {
    float tail = gaussian_f32(x).tail;
    return select(x < 0.0f, tail, 1.0f - tail);
  } else {
    return 0.5 * std::erfc(-x * kSqrtHalf);
  }
}

// v = 2u of the tanh GELU approximation, 0.5x(1 + tanh(u)) = x * sigmoid(2u),
// u = sqrt(2/pi) (x + k x^3), and its derivative.
template <class C>
inline C gelu_tanh_2u(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return x * fma_(static_cast<float>(2 * kGeluTanhC * kGeluTanhK), x * x, static_cast<float>(2 * kGeluTanhC));
  } else {
    return 2 * kGeluTanhC * (x + kGeluTanhK * x * x * x);
  }
}

template <class C>
inline C gelu_tanh_2u_grad(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return fma_(static_cast<float>(6 * kGeluTanhC * kGeluTanhK), x * x, static_cast<float>(2 * kGeluTanhC));
  } else {
    return 2 * kGeluTanhC * (1 + 3 * kGeluTanhK * x * x);
  }
}

template <class C>
inline C gelu_erf(C x) {
  return x * normal_cdf(x);
}
template <class C>
inline C gelu_tanh(C x) {
  return x * sigmoid_(gelu_tanh_2u(x));
}

// d/dx gelu(x) = Phi(x) + x * phi(x); float32 takes both from one exp.
template <class C>
inline C gelu_erf_grad(C x) {
  if constexpr (std::is_same_v<C, float>) {
    Gaussian g = gaussian_f32(x);
    float cdf = select(x < 0.0f, g.tail, 1.0f - g.tail);
    return fma_(x, static_cast<float>(kInvSqrt2Pi) * g.gauss, cdf);
  } else {
    return normal_cdf(x) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
  }
}

// d/dx [x * s(v)] = s + x * s * (1 - s) * v', with s and 1 - s both from exp(-|v|).
template <class C>
inline C gelu_tanh_grad(C x) {
  C v = gelu_tanh_2u(x);
  C e = exp_neg_abs(v);
  C r = C(1) / (C(1) + e);
  C s = select(v < C(0), e * r, r);
  C one_minus_s = select(v < C(0), r, e * r);
  return s + x * s * one_minus_s * gelu_tanh_2u_grad(x);
}

}  // namespace px::kernels::math
