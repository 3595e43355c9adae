#include "dist/reduce_kernels.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "parallax/core/error.h"

namespace px::dist::threads {
namespace {

// The type a reduction computes in: bfloat16 widens to float32, everything else is itself.
template <class T>
struct Compute {
  using type = T;
};
template <>
struct Compute<BFloat16> {
  using type = float;
};

template <class T>
typename Compute<T>::type widen(T value) {
  return value;
}
template <class T>
T narrow(typename Compute<T>::type value) {
  return value;
}

// BFloat16's own conversions, written without branches so that the loops vectorize
// (the NaN case is a select): round to nearest even, NaN stays a quiet NaN.
inline float widen(BFloat16 value) { return std::bit_cast<float>(static_cast<uint32_t>(value.bits) << 16); }
template <>
inline BFloat16 narrow<BFloat16>(float value) {
  const uint32_t wide = std::bit_cast<uint32_t>(value);
  const uint32_t rounded = (wide + 0x7fffu + ((wide >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (wide >> 16) | 0x40u;
  BFloat16 out;
  out.bits = static_cast<uint16_t>((wide & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  return out;
}

// Max and Min propagate NaN (a NaN on any rank is the result), as a sum would.
struct SumOp {
  template <class A>
  A operator()(A a, A b) const {
    return a + b;
  }
  // Signed overflow would be undefined behaviour: int64 sums wrap instead.
  int64_t operator()(int64_t a, int64_t b) const {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  bool operator()(bool a, bool b) const { return a || b; }
};
struct MaxOp {
  template <class A>
  A operator()(A a, A b) const {
    return (a != a || a > b) ? a : b;
  }
  bool operator()(bool a, bool b) const { return a || b; }
};
struct MinOp {
  template <class A>
  A operator()(A a, A b) const {
    return (a != a || a < b) ? a : b;
  }
  bool operator()(bool a, bool b) const { return a && b; }
};

// Small enough that the accumulator tile stays in L1 next to the inputs' tiles.
constexpr int64_t kTile = 2048;

// The buffers' element `start`, typed (the pointer arrays hold byte pointers).
template <class T>
const T* at(const std::byte* base, int64_t start) {
  return reinterpret_cast<const T*>(base) + start;
}
template <class T>
T* at(std::byte* base, int64_t start) {
  return reinterpret_cast<T*>(base) + start;
}

template <class T, class Op, bool kAvg>
[[gnu::always_inline]] inline void reduce_tiles(const std::byte* const* srcs, int nsrc, std::byte* const* dsts,
                                                int ndst, int64_t count) {
  using A = typename Compute<T>::type;
  A acc[kTile];
  for (int64_t start = 0; start < count; start += kTile) {
    const int64_t len = std::min(kTile, count - start);
    const T* s0 = at<T>(srcs[0], start);
    if (nsrc == 1) {
      for (int64_t i = 0; i < len; ++i) acc[i] = widen(s0[i]);
    } else {
      const T* s1 = at<T>(srcs[1], start);
      for (int64_t i = 0; i < len; ++i) acc[i] = Op{}(widen(s0[i]), widen(s1[i]));
    }
    for (int j = 2; j < nsrc; ++j) {
      const T* sj = at<T>(srcs[j], start);
      for (int64_t i = 0; i < len; ++i) acc[i] = Op{}(acc[i], widen(sj[i]));
    }
    T* d0 = at<T>(dsts[0], start);
    if constexpr (kAvg) {
      const A divisor = static_cast<A>(nsrc);
      if (std::is_floating_point_v<A> && (nsrc & (nsrc - 1)) == 0) {
        // x * (1/n) is x / n correctly rounded when n is a power of two, and much cheaper.
        const A scale = A(1) / divisor;
        for (int64_t i = 0; i < len; ++i) d0[i] = narrow<T>(acc[i] * scale);
      } else {
        for (int64_t i = 0; i < len; ++i) d0[i] = narrow<T>(acc[i] / divisor);
      }
    } else {
      for (int64_t i = 0; i < len; ++i) d0[i] = narrow<T>(acc[i]);
    }
    for (int k = 1; k < ndst; ++k) {
      copy_bytes(dsts[k] + start * static_cast<int64_t>(sizeof(T)), reinterpret_cast<const std::byte*>(d0),
                 len * static_cast<int64_t>(sizeof(T)));
    }
  }
}

// The tile loops compiled twice: for the baseline ISA and, where the CPU has it, for AVX2
// (twice the vector width; bfloat16's conversions are compute-bound on SSE2). Both give the
// same bits: the arithmetic is the same IEEE operations in the same order.
template <class T, class Op, bool kAvg>
void tiles_baseline(const std::byte* const* srcs, int nsrc, std::byte* const* dsts, int ndst, int64_t count) {
  reduce_tiles<T, Op, kAvg>(srcs, nsrc, dsts, ndst, count);
}

#if defined(__x86_64__) || defined(__i386__)
template <class T, class Op, bool kAvg>
__attribute__((target("avx2"))) void tiles_avx2(const std::byte* const* srcs, int nsrc, std::byte* const* dsts,
                                                int ndst, int64_t count) {
  reduce_tiles<T, Op, kAvg>(srcs, nsrc, dsts, ndst, count);
}
#endif

template <class T, class Op, bool kAvg>
void run_tiles(const std::byte* const* srcs, int nsrc, std::byte* const* dsts, int ndst, int64_t count) {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx2")) return tiles_avx2<T, Op, kAvg>(srcs, nsrc, dsts, ndst, count);
#endif
  tiles_baseline<T, Op, kAvg>(srcs, nsrc, dsts, ndst, count);
}

template <class T>
void reduce_typed(ReduceOp op, const std::byte* const* srcs, int nsrc, std::byte* const* dsts, int ndst,
                  int64_t count) {
  switch (op) {
    case ReduceOp::Sum:
      return run_tiles<T, SumOp, false>(srcs, nsrc, dsts, ndst, count);
    case ReduceOp::Max:
      return run_tiles<T, MaxOp, false>(srcs, nsrc, dsts, ndst, count);
    case ReduceOp::Min:
      return run_tiles<T, MinOp, false>(srcs, nsrc, dsts, ndst, count);
    case ReduceOp::Avg:
      if constexpr (std::is_same_v<T, bool>) {
        PX_ASSERT(false && "Avg on bool is rejected before the collective starts");
      } else {
        return run_tiles<T, SumOp, true>(srcs, nsrc, dsts, ndst, count);
      }
  }
}

}  // namespace

void reduce_into(DType dtype, ReduceOp op, const std::byte* const* srcs, int nsrc, std::byte* const* dsts, int ndst,
                 int64_t count) {
  if (count <= 0) return;
  visit_dtype(dtype, [&](auto zero) { reduce_typed<decltype(zero)>(op, srcs, nsrc, dsts, ndst, count); });
}

void copy_bytes(std::byte* dst, const std::byte* src, int64_t nbytes) {
  if (nbytes <= 0 || dst == src) return;
  std::memcpy(dst, src, static_cast<size_t>(nbytes));
}

}  // namespace px::dist::threads
