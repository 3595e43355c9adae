#pragma once
// Private numeric helpers shared by the softmax, normalization and loss kernels.
//
// Vectorization. Without -ffast-math, GCC and Clang vectorize neither a float
// reduction (its order is fixed) nor std::exp, and under the default
// -ftrapping-math they will not if-convert the range checks an exp needs. So:
//   - reductions keep kLanes independent partial sums, an order the vectorizer may keep;
//   - the float32 exp is written on GCC/Clang generic vectors (SSE2 on x86-64, NEON on
//     ARM), where selects are explicit;
//   - on x86-64 each float32 row kernel is also compiled for AVX2 (8 lanes) and chosen at
//     run time (cpu_has_avx2), since the portable build targets the SSE2 baseline; softmax
//     also for AVX-512 (16 lanes and 32 registers, chosen by cpu_has_avx512).
// Helpers that the AVX2 entry points use are PX_ROW_INLINE (always inlined), so that
// their bodies are compiled for the caller's instruction set.

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "parallax/core/dtype.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PX_KERNELS_HAVE_AVX2 1
#define PX_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define PX_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")))
#else
#define PX_KERNELS_HAVE_AVX2 0
#endif

#define PX_ROW_INLINE [[gnu::always_inline]] inline

namespace px::kernels::detail {

#if PX_KERNELS_HAVE_AVX2
inline bool cpu_has_avx2() {
  static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");  // set once
  return has_avx2;
}

inline bool cpu_has_avx512() {
  static const bool has_avx512 = cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
                                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                                 __builtin_cpu_supports("avx512bw");  // set once
  return has_avx512;
}
#endif

// float64 computes in float64; float32 and bfloat16 compute in float32.
template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Value conversion between storage and accumulation types; bfloat16 goes through float32.
template <class To, class From>
To convert(From value) {
  if constexpr (std::is_same_v<From, BFloat16> || std::is_same_v<To, BFloat16>) {
    return static_cast<To>(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

template <class To, class From>
void convert_row(const From* __restrict in, To* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = convert<To>(in[i]);
}

// ---- float32 exp on generic vectors ----

using Float4 = float __attribute__((vector_size(16)));
using UInt4 = uint32_t __attribute__((vector_size(16)));
using Float8 = float __attribute__((vector_size(32)));
using UInt8 = uint32_t __attribute__((vector_size(32)));
using Float16 = float __attribute__((vector_size(64)));
using UInt16 = uint32_t __attribute__((vector_size(64)));

template <class V>
struct UIntOf;
template <>
struct UIntOf<Float4> {
  using type = UInt4;
};
template <>
struct UIntOf<Float8> {
  using type = UInt8;
};
template <>
struct UIntOf<Float16> {
  using type = UInt16;
};

// exp of every lane within ~1.5 ulp: Cephes' polynomial after x = n ln2 + r, |r| <= ln2 / 2.
// Below -87 gives 0, above 88 gives +inf, NaN stays NaN. In place: vectors wider than the
// baseline ISA must not be passed by value (that would change the calling convention).
template <class V>
PX_ROW_INLINE void exp_in_place(V& x) {
  using U = typename UIntOf<V>::type;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  // Out-of-range lanes are not clamped first: whatever they compute (garbage exponent
  // bits, NaN from inf - inf) is replaced by the final selects, so in-range lanes get the
  // same bits as with a clamp, two blends cheaper.
  auto under = x < -87.0f;
  auto over = x > 88.0f;
  V shifted = x * kLog2e + kRound;
  U n = __builtin_bit_cast(U, shifted) - std::bit_cast<uint32_t>(kRound);  // round(x / ln2), as an integer
  V nf = shifted - kRound;
  V r = x - nf * kLn2Hi - nf * kLn2Lo;
  V p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  U scale_bits = (n + 127u) << 23;  // 2^n
  V result = (p * r * r + r + 1.0f) * __builtin_bit_cast(V, scale_bits);
  result = under ? V{} : result;
  x = over ? V{} + std::numeric_limits<float>::infinity() : result;
}

// Whole vectors move with memcpy; the last, partial one lane by lane, padded with `pad`.
// Vectors go by reference: wider-than-baseline vectors must not be passed by value.
template <class V>
PX_ROW_INLINE void load_padded(V& v, const float* x, int64_t count, float pad) {
  constexpr int64_t kWidth = sizeof(V) / sizeof(float);
  if (count == kWidth) {
    std::memcpy(&v, x, sizeof(V));
    return;
  }
  for (int64_t l = 0; l < kWidth; ++l) v[l] = l < count ? x[l] : pad;
}

template <class V>
PX_ROW_INLINE void store_partial(float* y, int64_t count, const V& v) {
  constexpr int64_t kWidth = sizeof(V) / sizeof(float);
  if (count == kWidth) {
    std::memcpy(y, &v, sizeof(V));
    return;
  }
  for (int64_t l = 0; l < count; ++l) y[l] = v[l];
}

// y = exp(x - shift) over a row; returns the sum of y.
template <class V>
PX_ROW_INLINE float exp_shifted_sum(const float* __restrict x, float* __restrict y, int64_t n, float shift) {
  constexpr int64_t kWidth = sizeof(V) / sizeof(float);
  int64_t body = n - n % kWidth;
  V total{};
  for (int64_t i = 0; i < body; i += kWidth) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    v -= shift;
    exp_in_place(v);
    total += v;
    std::memcpy(y + i, &v, sizeof(V));
  }
  if (body < n) {
    V v;
    load_padded(v, x + body, n - body, -std::numeric_limits<float>::infinity());
    v -= shift;
    exp_in_place(v);  // padded lanes give exp(-inf) = 0
    total += v;
    store_partial(y + body, n - body, v);
  }
  float sum = 0;
  for (int64_t l = 0; l < kWidth; ++l) sum += total[l];
  return sum;
}

// y = exp(x - shift) elementwise, with one shift per element.
template <class V>
PX_ROW_INLINE void exp_minus(const float* __restrict x, const float* __restrict shift, float* __restrict y, int64_t n) {
  constexpr int64_t kWidth = sizeof(V) / sizeof(float);
  int64_t body = n - n % kWidth;
  for (int64_t i = 0; i < body; i += kWidth) {
    V v, s;
    std::memcpy(&v, x + i, sizeof(V));
    std::memcpy(&s, shift + i, sizeof(V));
    v -= s;
    exp_in_place(v);
    std::memcpy(y + i, &v, sizeof(V));
  }
  if (body < n) {
    V v, s;
    load_padded(v, x + body, n - body, 0.0f);
    load_padded(s, shift + body, n - body, 0.0f);
    v -= s;
    exp_in_place(v);
    store_partial(y + body, n - body, v);
  }
}

// ---- row reductions with partial accumulators (both float and double) ----

inline constexpr int64_t kLanes = 16;

template <class A>
PX_ROW_INLINE A sum_partials(const A (&partial)[kLanes], A tail) {
  for (int64_t l = 0; l < kLanes; ++l) tail += partial[l];
  return tail;
}

template <class A>
PX_ROW_INLINE A row_sum(const A* __restrict x, int64_t n) {
  A partial[kLanes] = {};
  int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) partial[l] += x[i + l];
  }
  A tail = 0;
  for (int64_t i = body; i < n; ++i) tail += x[i];
  return sum_partials(partial, tail);
}

// Sum of (x - pivot): with a pivot near the values, float32 partial sums stay small and accurate.
template <class A>
PX_ROW_INLINE A row_sum_dev(const A* __restrict x, int64_t n, A pivot) {
  A partial[kLanes] = {};
  int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) partial[l] += x[i + l] - pivot;
  }
  A tail = 0;
  for (int64_t i = body; i < n; ++i) tail += x[i] - pivot;
  return sum_partials(partial, tail);
}

// Sum of ((x - pivot) - shift)^2: the second pass of a two-pass variance.
template <class A>
PX_ROW_INLINE A row_sum_sq_dev(const A* __restrict x, int64_t n, A pivot, A shift) {
  A partial[kLanes] = {};
  int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      A d = (x[i + l] - pivot) - shift;
      partial[l] += d * d;
    }
  }
  A tail = 0;
  for (int64_t i = body; i < n; ++i) tail += ((x[i] - pivot) - shift) * ((x[i] - pivot) - shift);
  return sum_partials(partial, tail);
}

// Maximum of a row; -inf for an empty row. NaNs are skipped here and propagate through the exp pass.
template <class A>
PX_ROW_INLINE A row_max(const A* __restrict x, int64_t n) {
  constexpr A kLowest = -std::numeric_limits<A>::infinity();
  A partial[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) partial[l] = kLowest;
  int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) partial[l] = x[i + l] > partial[l] ? x[i + l] : partial[l];
  }
  A best = kLowest;
  for (int64_t i = body; i < n; ++i) best = x[i] > best ? x[i] : best;
  for (int64_t l = 0; l < kLanes; ++l) best = partial[l] > best ? partial[l] : best;
  return best;
}

// ---- exp over rows, by accumulation type: vector float32 (V) or scalar float64 (V = void) ----

// y = exp(x - shift); returns the sum of y.
template <class A, class V>
PX_ROW_INLINE A exp_row(const A* __restrict x, A* __restrict y, int64_t n, A shift) {
  if constexpr (std::is_void_v<V>) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - shift);
    return row_sum(y, n);
  } else {
    return exp_shifted_sum<V>(x, y, n, shift);
  }
}

// y = exp(x - shift) with one shift per element.
template <class A, class V>
PX_ROW_INLINE void exp_row_minus(const A* x, const A* shift, A* y, int64_t n) {
  if constexpr (std::is_void_v<V>) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - shift[i]);
  } else {
    exp_minus<V>(x, shift, y, n);
  }
}

// max[k] = max(max[k], x[k]); NaNs in x are skipped (they propagate through the exp pass).
// The float32 form uses explicit vector selects: the scalar select does not vectorize under -ftrapping-math.
template <class A, class V>
PX_ROW_INLINE void max_into(const A* __restrict x, A* __restrict max, int64_t n) {
  int64_t body = 0;
  if constexpr (!std::is_void_v<V>) {
    constexpr int64_t kWidth = sizeof(V) / sizeof(float);
    body = n - n % kWidth;
    for (int64_t i = 0; i < body; i += kWidth) {
      V v, m;
      std::memcpy(&v, x + i, sizeof(V));
      std::memcpy(&m, max + i, sizeof(V));
      m = v > m ? v : m;
      std::memcpy(max + i, &m, sizeof(V));
    }
  }
  for (int64_t i = body; i < n; ++i) max[i] = x[i] > max[i] ? x[i] : max[i];
}

// Maximum of a row; -inf for an empty row. NaNs are skipped.
template <class A, class V>
PX_ROW_INLINE A row_max_of(const A* __restrict x, int64_t n) {
  if constexpr (std::is_void_v<V>) {
    return row_max(x, n);
  } else {
    constexpr int64_t kWidth = sizeof(V) / sizeof(float);
    constexpr float kLowest = -std::numeric_limits<float>::infinity();
    // Four independent maxima, so the loop is not one chain of dependent compares.
    int64_t body4 = n - n % (4 * kWidth);
    V best = V{} + kLowest, best1 = best, best2 = best, best3 = best;
    for (int64_t i = 0; i < body4; i += 4 * kWidth) {
      V v0, v1, v2, v3;
      std::memcpy(&v0, x + i, sizeof(V));
      std::memcpy(&v1, x + i + kWidth, sizeof(V));
      std::memcpy(&v2, x + i + 2 * kWidth, sizeof(V));
      std::memcpy(&v3, x + i + 3 * kWidth, sizeof(V));
      best = v0 > best ? v0 : best;
      best1 = v1 > best1 ? v1 : best1;
      best2 = v2 > best2 ? v2 : best2;
      best3 = v3 > best3 ? v3 : best3;
    }
    best = best1 > best ? best1 : best;
    best = best2 > best ? best2 : best;
    best = best3 > best ? best3 : best;
    int64_t body = n - n % kWidth;
    for (int64_t i = body4; i < body; i += kWidth) {
      V v;
      std::memcpy(&v, x + i, sizeof(V));
      best = v > best ? v : best;
    }
    float result = kLowest;
    for (int64_t l = 0; l < kWidth; ++l) result = best[l] > result ? best[l] : result;
    for (int64_t i = body; i < n; ++i) result = x[i] > result ? x[i] : result;
    return result;
  }
}

// log(sum(exp(x))) of a row, stably; `scratch` holds n values.
template <class A, class V>
PX_ROW_INLINE A row_logsumexp(const A* __restrict x, int64_t n, A* __restrict scratch) {
  A max = row_max_of<A, V>(x, n);
  return max + std::log(exp_row<A, V>(x, scratch, n, max));
}

}  // namespace px::kernels::detail
