// Binary arithmetic, comparisons and where: the two- and three-input kernels.
// No multiply-add contraction: the AVX2/AVX-512 clones of the row loops (see
// kernels/elementwise_loops.h) would otherwise fuse a*b+c where the baseline
// clone rounds twice, and results would differ in the last bit between
// machines. First, so it covers every function this file instantiates, headers
// included.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif
#include "kernels/elementwise_loops.h"
#include "parallax/kernels/elementwise.h"

namespace px::kernels {

namespace {

using detail::Compute;

template <class T>
void binary_typed(BinaryOp op, T* out, std::span<const int64_t> shape, const T* a, std::span<const int64_t> a_strides,
                  const T* b, std::span<const int64_t> b_strides) {
  using C = Compute<T>;
  auto run = [&](auto fn) { detail::map2(out, shape, a, a_strides, b, b_strides, detail::lift<T>(fn)); };
  switch (op) {
    case BinaryOp::Add:
      return run([](C x, C y) { return detail::wrapping_add(x, y); });
    case BinaryOp::Sub:
      return run([](C x, C y) { return detail::wrapping_sub(x, y); });
    case BinaryOp::Mul:
      return run([](C x, C y) { return detail::wrapping_mul(x, y); });
    case BinaryOp::Div:
      if constexpr (std::is_floating_point_v<C>) {
        return run([](C x, C y) { return x / y; });
      } else {
        PX_ASSERT(false && "div needs a floating dtype");
        return;
      }
    // NaN wins in both, as in PyTorch.
    case BinaryOp::Maximum:
      return run([](C x, C y) { return (x > y || detail::is_nan(x)) ? x : y; });
    case BinaryOp::Minimum:
      return run([](C x, C y) { return (x < y || detail::is_nan(x)) ? x : y; });
  }
}

template <class T>
void compare_typed(CompareOp op, bool* out, std::span<const int64_t> shape, const T* a,
                   std::span<const int64_t> a_strides, const T* b, std::span<const int64_t> b_strides) {
  using detail::load;
  auto run = [&](auto fn) { detail::map2(out, shape, a, a_strides, b, b_strides, fn); };
  switch (op) {
    case CompareOp::Eq:
      return run([](T x, T y) { return load(x) == load(y); });
    case CompareOp::Ne:
      return run([](T x, T y) { return load(x) != load(y); });
    case CompareOp::Lt:
      return run([](T x, T y) { return load(x) < load(y); });
    case CompareOp::Le:
      return run([](T x, T y) { return load(x) <= load(y); });
    case CompareOp::Gt:
      return run([](T x, T y) { return load(x) > load(y); });
    case CompareOp::Ge:
      return run([](T x, T y) { return load(x) >= load(y); });
  }
}

// where only moves values, so it works on same-sized unsigned integers: one
// instantiation per element size, and bfloat16 needs no conversion.
template <class U>
void where_bits(void* out, std::span<const int64_t> shape, const bool* cond, std::span<const int64_t> cond_strides,
                const void* a, std::span<const int64_t> a_strides, const void* b, std::span<const int64_t> b_strides) {
  detail::map3(static_cast<U*>(out), shape, cond, cond_strides, static_cast<const U*>(a), a_strides,
               static_cast<const U*>(b), b_strides, [](bool c, U x, U y) {
                 U mask = U(0) - static_cast<U>(c);  // a mask, not a branch, so that it vectorizes
                 return static_cast<U>((x & mask) | (y & static_cast<U>(~mask)));
               });
}

}  // namespace

void binary(BinaryOp op, DType dtype, void* out, std::span<const int64_t> shape, const void* a,
            std::span<const int64_t> a_strides, const void* b, std::span<const int64_t> b_strides) {
  detail::visit_numeric(dtype, [&](auto zero) {
    using T = decltype(zero);
    binary_typed(op, static_cast<T*>(out), shape, static_cast<const T*>(a), a_strides, static_cast<const T*>(b),
                 b_strides);
  });
}

void compare(CompareOp op, DType dtype, bool* out, std::span<const int64_t> shape, const void* a,
             std::span<const int64_t> a_strides, const void* b, std::span<const int64_t> b_strides) {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    compare_typed(op, out, shape, static_cast<const T*>(a), a_strides, static_cast<const T*>(b), b_strides);
  });
}

void where(DType dtype, void* out, std::span<const int64_t> shape, const bool* cond,
           std::span<const int64_t> cond_strides, const void* a, std::span<const int64_t> a_strides, const void* b,
           std::span<const int64_t> b_strides) {
  switch (dtype_size(dtype)) {
    case 1:
      return where_bits<uint8_t>(out, shape, cond, cond_strides, a, a_strides, b, b_strides);
    case 2:
      return where_bits<uint16_t>(out, shape, cond, cond_strides, a, a_strides, b, b_strides);
    case 4:
      return where_bits<uint32_t>(out, shape, cond, cond_strides, a, a_strides, b, b_strides);
    case 8:
      return where_bits<uint64_t>(out, shape, cond, cond_strides, a, a_strides, b, b_strides);
    default:
      PX_ASSERT(false && "where: unexpected element size");
  }
}

}  // namespace px::kernels
