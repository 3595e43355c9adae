#pragma once
// Private: the loop skeletons shared by the elementwise kernels.
//
// map1/map2/map3 write a contiguous output from 1-3 strided inputs by calling a
// functor on raw element values. They iterate a simplified StridedIter, and
// every row ends in a loop over __restrict pointers that g++ -O3 vectorizes:
// directly where each input has stride 1 (or a broadcast stride 0), through
// gathered copies otherwise. Functors get and return storage values; `lift`
// adapts a functor written on compute values (bfloat16 loads as float32 and
// rounds back on store).

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <type_traits>

#include "kernels/row_clones.h"
#include "parallax/core/dtype.h"
#include "parallax/core/error.h"
#include "parallax/core/parallel.h"
#include "parallax/core/shape.h"
#include "parallax/kernels/copy.h"
#include "parallax/kernels/strided_iter.h"

namespace px::kernels::detail {

// The type a storage type computes in.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, BFloat16>, float, T>;

template <class T>
inline Compute<T> load(T value) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return static_cast<float>(value);
  } else {
    return value;
  }
}

template <class T>
inline T store(Compute<T> value) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16(value);
  } else {
    return value;
  }
}

// Wraps fn(Compute...) -> Compute into a functor on storage values of T.
template <class T, class Fn>
auto lift(Fn fn) {
  return [fn](auto... values) { return store<T>(fn(load(values)...)); };
}

// Calls fn(T{}) with T the storage type of `dtype`; bool reaching an arithmetic kernel is a bug.
template <class Fn>
void visit_numeric(DType dtype, Fn&& fn) {
  visit_dtype(dtype, [&](auto zero) {
    if constexpr (std::is_same_v<decltype(zero), bool>) {
      PX_ASSERT(false && "arithmetic kernel called on bool");
    } else {
      fn(zero);
    }
  });
}

// Integer arithmetic wraps around (two's complement) instead of overflowing, which is undefined.
template <class C>
inline C wrapping_add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <class C>
inline C wrapping_sub(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  } else {
    return a - b;
  }
}

template <class C>
inline C wrapping_mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

template <class C>
inline bool is_nan(C value) {
  if constexpr (std::is_floating_point_v<C>) {
    return value != value;
  } else {
    return false;
  }
}

// --- row loops: `n` elements, output stride 1 ---

// The contiguous row loops are PX_ROW_CLONES (kernels/row_clones.h): the
// float32 approximations get 4-8x faster on AVX2/AVX-512 machines. Every clone
// rounds alike (the kernel files turn multiply-add contraction off and ask for
// fused multiply-adds explicitly), so results are the same bits on every machine.

template <class Out, class X, class Fn>
PX_ROW_CLONES void row1_contiguous(Out* __restrict out, const X* __restrict x, int64_t n, const Fn& fn) {
  for (int64_t i = 0; i < n; ++i) out[i] = fn(x[i]);
}

template <class Out, class A, class B, class Fn>
PX_ROW_CLONES void row2_contiguous(Out* __restrict out, const A* __restrict a, const B* __restrict b, int64_t n,
                                   const Fn& fn) {
  for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], b[i]);
}

template <class Out, class A, class B, class Fn>
PX_ROW_CLONES void row2_scalar_b(Out* __restrict out, const A* __restrict a, B b, int64_t n, const Fn& fn) {
  for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], b);
}

template <class Out, class A, class B, class Fn>
PX_ROW_CLONES void row2_scalar_a(Out* __restrict out, A a, const B* __restrict b, int64_t n, const Fn& fn) {
  for (int64_t i = 0; i < n; ++i) out[i] = fn(a, b[i]);
}

template <class Out, class A, class B, class C, class Fn>
PX_ROW_CLONES void row3_contiguous(Out* __restrict out, const A* __restrict a, const B* __restrict b,
                                   const C* __restrict c, int64_t n, const Fn& fn) {
  for (int64_t i = 0; i < n; ++i) out[i] = fn(a[i], b[i], c[i]);
}

// Rows with a strided input are gathered, a block at a time, into buffers on
// the stack and run through the contiguous loops: the same code for every
// layout, so a strided input gives the same bits as a contiguous one, and it
// runs vectorized.
inline constexpr int64_t kGatherBlock = 256;

template <class T>
void gather(T* __restrict out, const T* __restrict in, int64_t step, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = in[i * step];
}

// body(begin, count) for consecutive blocks of at most kGatherBlock elements.
template <class Body>
void for_each_block(int64_t n, const Body& body) {
  for (int64_t begin = 0; begin < n; begin += kGatherBlock) body(begin, std::min(kGatherBlock, n - begin));
}

template <class Out, class X, class Fn>
void row1_strided(Out* out, const X* x, int64_t step, int64_t n, const Fn& fn) {
  X xs[kGatherBlock];
  for_each_block(n, [&](int64_t begin, int64_t count) {
    gather(xs, x + begin * step, step, count);
    row1_contiguous(out + begin, xs, count, fn);
  });
}

template <class Out, class A, class B, class Fn>
void row2_strided(Out* out, const A* a, int64_t step_a, const B* b, int64_t step_b, int64_t n, const Fn& fn) {
  A as[kGatherBlock];
  B bs[kGatherBlock];
  for_each_block(n, [&](int64_t begin, int64_t count) {
    gather(as, a + begin * step_a, step_a, count);
    gather(bs, b + begin * step_b, step_b, count);
    row2_contiguous(out + begin, as, bs, count, fn);
  });
}

template <class Out, class A, class B, class C, class Fn>
void row3_strided(Out* out, const A* a, int64_t step_a, const B* b, int64_t step_b, const C* c, int64_t step_c,
                  int64_t n, const Fn& fn) {
  A as[kGatherBlock];
  B bs[kGatherBlock];
  C cs[kGatherBlock];
  for_each_block(n, [&](int64_t begin, int64_t count) {
    gather(as, a + begin * step_a, step_a, count);
    gather(bs, b + begin * step_b, step_b, count);
    gather(cs, c + begin * step_c, step_c, count);
    row3_contiguous(out + begin, as, bs, cs, count, fn);
  });
}

// --- whole-tensor maps ---

// The maps run on the current pool (core/parallel.h) in pieces of whole rows, or of segments of
// one long row: an elementwise result does not depend on how its elements are grouped.
inline constexpr int64_t kRowSegment = int64_t{1} << 14;
inline constexpr int64_t kParallelGrain = int64_t{1} << 16;  // elements per parallel chunk

// Calls piece(start, first, count) for every piece of every row: `count` elements of the row
// starting at its element `first`, operand k at start[k] + first * row_strides()[k].
template <size_t N, class Piece>
void parallel_rows(const StridedIter<N>& iter, const Piece& piece) {
  const int64_t n = iter.row_size(), rows = iter.num_rows();
  if (rows == 0 || n == 0) return;
  const int64_t segment = std::min(n, kRowSegment);
  const int64_t per_row = (n + segment - 1) / segment;
  parallel_for(rows * per_row, std::max<int64_t>(1, kParallelGrain / segment), [&](int64_t p0, int64_t p1) {
    int64_t row = p0 / per_row;
    iter.for_each_row(row, (p1 - 1) / per_row + 1, [&](const typename StridedIter<N>::Offsets& start) {
      const int64_t first = std::max(p0 - row * per_row, int64_t{0});
      const int64_t last = std::min(p1 - row * per_row, per_row);
      for (int64_t s = first; s < last; ++s) piece(start, s * segment, std::min(segment, n - s * segment));
      ++row;
    });
  });
}

// Whether operand k of the iteration is a transposed view: an outer dim steps
// through its memory faster than the rows do. Walked row by row, such an input
// costs a cache line and a page per element (1.5 GB/s for a transposed 2048 x
// 2048 float32 operand against 26 for a contiguous one), so the maps first
// copy it into the output's order with the tiled copy (kernels/copy.h) and run
// on that: one more pass over the input, in cache-friendly tiles.
template <size_t N>
bool walks_across(const StridedIter<N>& iter, size_t k) {
  constexpr int64_t kMinExtent = 32;  // smaller tiles do not pay for the extra pass
  const int64_t row_step = std::abs(iter.row_strides()[k]);
  if (row_step <= 1 || iter.row_size() < kMinExtent) return false;
  for (size_t d = 0; d + 1 < iter.dim_sizes().size(); ++d) {
    const int64_t step = std::abs(iter.dim_steps()[d][k]);
    if (iter.dim_sizes()[d] >= kMinExtent && step != 0 && step < row_step) return true;
  }
  return false;
}

// `x` (logical shape `shape`, strides `strides`) copied contiguous. A plain
// array rather than std::vector, which packs bool into bits.
template <class T>
std::unique_ptr<T[]> contiguous_copy(std::span<const int64_t> shape, const T* x, std::span<const int64_t> strides) {
  auto out = std::make_unique_for_overwrite<T[]>(static_cast<size_t>(px::numel(shape)));
  Strides unit = contiguous_strides(shape);
  // Any dtype of T's width copies T's bits unchanged (where() moves values as
  // unsigned words of their width).
  constexpr DType same_width = sizeof(T) == 1   ? DType::Bool
                               : sizeof(T) == 2 ? DType::BFloat16
                               : sizeof(T) == 4 ? DType::Float32
                                                : DType::Int64;
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  copy_strided(shape, {x, same_width, strides}, {out.get(), same_width, unit});
  return out;
}

template <class Out, class X, class Fn>
void map1(Out* out, std::span<const int64_t> shape, const X* x, std::span<const int64_t> x_strides, const Fn& fn) {
  Strides out_strides = contiguous_strides(shape);
  StridedIter<2> iter(shape, {out_strides, x_strides});
  if (walks_across(iter, 1)) {
    auto xs = contiguous_copy(shape, x, x_strides);
    return map1(out, shape, xs.get(), out_strides, fn);
  }
  const int64_t step = iter.row_strides()[1];
  parallel_rows(iter, [&](const StridedIter<2>::Offsets& start, int64_t first, int64_t n) {
    Out* o = out + start[0] + first;
    const X* xs = x + start[1] + first * step;
    if (step == 1) {
      row1_contiguous(o, xs, n, fn);
    } else {
      row1_strided(o, xs, step, n, fn);
    }
  });
}

template <class Out, class A, class B, class Fn>
void map2(Out* out, std::span<const int64_t> shape, const A* a, std::span<const int64_t> a_strides, const B* b,
          std::span<const int64_t> b_strides, const Fn& fn) {
  Strides out_strides = contiguous_strides(shape);
  StridedIter<3> iter(shape, {out_strides, a_strides, b_strides});
  if (walks_across(iter, 1)) {
    auto as = contiguous_copy(shape, a, a_strides);
    return map2(out, shape, as.get(), out_strides, b, b_strides, fn);
  }
  if (walks_across(iter, 2)) {
    auto bs = contiguous_copy(shape, b, b_strides);
    return map2(out, shape, a, a_strides, bs.get(), out_strides, fn);
  }
  const int64_t step_a = iter.row_strides()[1];
  const int64_t step_b = iter.row_strides()[2];
  parallel_rows(iter, [&](const StridedIter<3>::Offsets& start, int64_t first, int64_t n) {
    Out* o = out + start[0] + first;
    const A* as = a + start[1] + first * step_a;
    const B* bs = b + start[2] + first * step_b;
    if (step_a == 1 && step_b == 1) {
      row2_contiguous(o, as, bs, n, fn);
    } else if (step_a == 1 && step_b == 0) {
      row2_scalar_b(o, as, *bs, n, fn);
    } else if (step_a == 0 && step_b == 1) {
      row2_scalar_a(o, *as, bs, n, fn);
    } else {
      row2_strided(o, as, step_a, bs, step_b, n, fn);
    }
  });
}

template <class Out, class A, class B, class C, class Fn>
void map3(Out* out, std::span<const int64_t> shape, const A* a, std::span<const int64_t> a_strides, const B* b,
          std::span<const int64_t> b_strides, const C* c, std::span<const int64_t> c_strides, const Fn& fn) {
  Strides out_strides = contiguous_strides(shape);
  StridedIter<4> iter(shape, {out_strides, a_strides, b_strides, c_strides});
  if (walks_across(iter, 1)) {
    auto as = contiguous_copy(shape, a, a_strides);
    return map3(out, shape, as.get(), out_strides, b, b_strides, c, c_strides, fn);
  }
  if (walks_across(iter, 2)) {
    auto bs = contiguous_copy(shape, b, b_strides);
    return map3(out, shape, a, a_strides, bs.get(), out_strides, c, c_strides, fn);
  }
  if (walks_across(iter, 3)) {
    auto cs = contiguous_copy(shape, c, c_strides);
    return map3(out, shape, a, a_strides, b, b_strides, cs.get(), out_strides, fn);
  }
  const int64_t step_a = iter.row_strides()[1];
  const int64_t step_b = iter.row_strides()[2];
  const int64_t step_c = iter.row_strides()[3];
  parallel_rows(iter, [&](const StridedIter<4>::Offsets& start, int64_t first, int64_t n) {
    Out* o = out + start[0] + first;
    const A* as = a + start[1] + first * step_a;
    const B* bs = b + start[2] + first * step_b;
    const C* cs = c + start[3] + first * step_c;
    if (step_a == 1 && step_b == 1 && step_c == 1) {
      row3_contiguous(o, as, bs, cs, n, fn);
    } else {
      row3_strided(o, as, step_a, bs, step_b, cs, step_c, n, fn);
    }
  });
}

}  // namespace px::kernels::detail
