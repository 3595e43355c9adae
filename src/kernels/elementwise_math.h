#pragma once
// Private: the scalar math behind the elementwise kernels.
//
// float32 uses branch-free approximations (bit-mask selects instead of
// branches, bit casts instead of library calls) so that g++ vectorizes the loops
// that call them. Measured relative error (tests/kernels/elementwise_test.cpp):
// exp, tanh, sigmoid, silu within 3 ulp; GELU within 8 ulp for x >= -3, and
// below 2e-5 down its far negative tail (where |gelu(x)| < 1e-2 and the error of
// the exponent's argument dominates). float64 uses <cmath>. The formulas avoid
// cancellation: sigmoid from exp(-|x|), the normal CDF from erfc, tanh-GELU as
// x * sigmoid(2u).

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

// exp(x) for float32: x = n*ln2 + r with |r| <= ln2/2, exp(r) by its degree-7
// Taylor polynomial (truncation < 5e-9), times 2^n built from exponent bits.
// Results below 2^-125 flush to zero; above FLT_MAX give +inf; NaN stays NaN.
// Out-of-range x is not clamped first (a clamp would be threaded into branches):
// the garbage it computes there is replaced by the final selects.
inline float exp_f32(float x) {
  constexpr float kHi = 88.72283905f;   // ln(FLT_MAX)
  constexpr float kLo = -86.64339256f;  // ln(2^-125): keeps 2^(n-1) a normal float
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // ln2 split so that n*kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float shifted = x * kLog2e + kShift;
  float n = shifted - kShift;
  uint32_t n_bits = std::bit_cast<uint32_t>(shifted) - std::bit_cast<uint32_t>(kShift);  // n, two's complement
  float r = (x - n * kLn2Hi) - n * kLn2Lo;
  // Estrin's scheme: a dependency chain of 3 multiply-adds instead of 7, one more multiply.
  float r2 = r * r;
  float r4 = r2 * r2;
  float a0 = r + 1.0f;
  float a1 = r * (1.0f / 6.0f) + 0.5f;
  float a2 = r * (1.0f / 120.0f) + 1.0f / 24.0f;
  float a3 = r * (1.0f / 5040.0f) + 1.0f / 720.0f;
  float p = (a1 * r2 + a0) + (a3 * r2 + a2) * r4;
  // 2^n as 2 * 2^(n-1): n reaches 128 near ln(FLT_MAX), one past the largest exponent.
  float scale = std::bit_cast<float>((n_bits + 126u) << 23);
  float result = select(x > kHi, std::numeric_limits<float>::infinity(), (p + p) * scale);
  return select(x < kLo, 0.0f, result);
}

// tanh(x) for float32: the odd rational minimax approximation p(x)/q(x) of
// degrees 13/6 that Eigen and XLA use, on x clamped to +-7.905 (where tanh
// rounds to +-1 in float32); tiny x returns x.
inline float tanh_f32(float x) {
  constexpr float kClamp = 7.90531110763549805f;
  float xc = select(x > kClamp, kClamp, select(x < -kClamp, -kClamp, x));  // NaN passes through
  float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
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

// erfc(z) for float32 z >= 0: Numerical Recipes' Chebyshev fit t * exp(-z^2 + P(t)),
// t = 1/(1 + z/2), relative error < 1.2e-7 for every z, so the tail keeps its digits.
// The caller passes z^2 too, computed with as few roundings as it can (its
// absolute error becomes the relative error of the result).
inline float erfc_nonneg_f32(float z, float z_squared) {
  float t = 1.0f / (1.0f + 0.5f * z);
  // Estrin's scheme rather than Horner's: three more multiplies, but a dependency chain of
  // 4 multiply-adds instead of 9, which lets the out-of-order core overlap more elements.
  float t2 = t * t;
  float t4 = t2 * t2;
  float t8 = t4 * t4;
  float q0 = 1.00002368f * t + -1.26551223f;
  float q1 = 0.09678418f * t + 0.37409196f;
  float q2 = 0.27886807f * t + -0.18628806f;
  float q3 = 1.48851587f * t + -1.13520398f;
  float q4 = 0.17087277f * t + -0.82215223f;
  float r0 = q1 * t2 + q0;
  float r1 = q3 * t2 + q2;
  float p = (r1 * t4 + r0) + q4 * t8;
  return t * exp_f32(p - z_squared);
}

// sigmoid(x) = 1 / (1 + exp(-x)) without overflow: from e = exp(-|x|) <= 1,
// sigmoid is 1/(1+e) for x >= 0 and e/(1+e) below.
template <class C>
inline C sigmoid_(C x) {
  C e = exp_(-std::abs(x));
  C r = C(1) / (C(1) + e);
  return select(x < C(0), e * r, r);
}

// Phi(x), the standard normal CDF, = erfc(-x/sqrt2)/2: accurate in both tails.
template <class C>
inline C normal_cdf(C x) {
  if constexpr (std::is_same_v<C, float>) {
    // z = |x|/sqrt2 and z^2 = x^2/2 (one rounding instead of three).
    float half_tail = 0.5f * erfc_nonneg_f32(std::abs(x) * static_cast<float>(kSqrtHalf), 0.5f * x * x);
    return select(x < 0.0f, half_tail, 1.0f - half_tail);
  } else {
    return 0.5 * std::erfc(-x * kSqrtHalf);
  }
}

template <class C>
inline C normal_pdf(C x) {
  return C(kInvSqrt2Pi) * exp_(C(-0.5) * x * x);
}

// u of the tanh GELU approximation: 0.5x(1 + tanh(u)) = x * sigmoid(2u).
template <class C>
inline C gelu_tanh_2u(C x) {
  return C(2 * kGeluTanhC) * (x + C(kGeluTanhK) * x * x * x);
}

template <class C>
inline C gelu_erf(C x) {
  return x * normal_cdf(x);
}
template <class C>
inline C gelu_tanh(C x) {
  return x * sigmoid_(gelu_tanh_2u(x));
}

// d/dx gelu(x) = Phi(x) + x * phi(x).
template <class C>
inline C gelu_erf_grad(C x) {
  return normal_cdf(x) + x * normal_pdf(x);
}

// d/dx [x * s(2u)] = s + x * s * (1 - s) * 2u', with s and 1 - s both from exp(-|2u|).
template <class C>
inline C gelu_tanh_grad(C x) {
  C v = gelu_tanh_2u(x);
  C e = exp_(-std::abs(v));
  C r = C(1) / (C(1) + e);
  C s = select(v < C(0), e * r, r);
  C one_minus_s = select(v < C(0), r, e * r);
  C dv = C(2 * kGeluTanhC) * (C(1) + C(3 * kGeluTanhK) * x * x);
  return s + x * s * one_minus_s * dv;
}

}  // namespace px::kernels::math
