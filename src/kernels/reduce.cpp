#include "parallax/kernels/reduce.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/row_clones.h"
#include "parallax/core/parallel.h"

namespace px::kernels {

namespace {

// Drops size-1 dims and merges neighbours whose elements form one strided run.
void coalesce(Shape& shape, Strides& strides) {
  Shape merged_shape;
  Strides merged_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!merged_shape.empty() && merged_strides.back() == strides[d] * shape[d]) {
      merged_shape.back() *= shape[d];
      merged_strides.back() = strides[d];
      continue;
    }
    merged_shape.push_back(shape[d]);
    merged_strides.push_back(strides[d]);
  }
  shape = std::move(merged_shape);
  strides = std::move(merged_strides);
}

// Calls row(offset, count, stride) for every innermost run of (shape, strides), in
// row-major order. A rank-0 shape is one run of one element; an empty shape none.
template <class RowFn>
void for_each_row(std::span<const int64_t> shape, std::span<const int64_t> strides, RowFn&& row) {
  if (shape.empty()) {
    row(int64_t{0}, int64_t{1}, int64_t{0});
    return;
  }
  if (numel(shape) == 0) return;
  size_t outer_rank = shape.size() - 1;
  int64_t outer_count = numel(shape.first(outer_rank));
  std::vector<int64_t> index(outer_rank, 0);
  int64_t offset = 0;
  for (int64_t o = 0; o < outer_count; ++o) {
    row(offset, shape[outer_rank], strides[outer_rank]);
    for (size_t d = outer_rank; d-- > 0;) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= (shape[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
}

// bfloat16 computes in float; every other type in itself.
template <class T>
using Value = std::conditional_t<std::is_same_v<T, BFloat16>, float, T>;

template <class T>
Value<T> load(T value) {
  return static_cast<Value<T>>(value);
}

template <class T, class V>
T store(V value) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

template <class V>
bool is_nan(V value) {
  if constexpr (std::is_floating_point_v<V>) {
    return value != value;
  } else {
    return false;
  }
}

// Floating sums accumulate in double (float32 rows of millions stay accurate); int64 in int64.
template <class T>
struct SumOp {
  using Acc = std::conditional_t<std::is_same_v<T, int64_t>, int64_t, double>;
  static Acc init() { return 0; }
  static Acc combine(Acc acc, Value<T> value) { return acc + static_cast<Acc>(value); }
  static Acc merge(Acc a, Acc b) { return a + b; }
  static T finish(Acc acc, double scale) {
    if constexpr (std::is_same_v<T, int64_t>) {
      return acc;  // int64 sums are never scaled (mean requires floating input)
    } else {
      return store<T>(acc * scale);
    }
  }
};

// NaN wins: once the accumulator is NaN, no comparison replaces it.
template <class T>
struct MaxOp {
  using Acc = Value<T>;
  static Acc init() {
    return std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                  : std::numeric_limits<Acc>::lowest();
  }
  static Acc combine(Acc acc, Acc value) { return (value > acc || is_nan(value)) ? value : acc; }
  static Acc merge(Acc a, Acc b) { return combine(a, b); }
  static T finish(Acc acc, double) { return store<T>(acc); }
};

template <class T>
struct MinOp {
  using Acc = Value<T>;
  static Acc init() {
    return std::numeric_limits<Acc>::has_infinity ? std::numeric_limits<Acc>::infinity()
                                                  : std::numeric_limits<Acc>::max();
  }
  static Acc combine(Acc acc, Acc value) { return (value < acc || is_nan(value)) ? value : acc; }
  static Acc merge(Acc a, Acc b) { return combine(a, b); }
  static T finish(Acc acc, double) { return store<T>(acc); }
};

template <class Op, class T>
void accumulate_row(typename Op::Acc* __restrict acc, const T* __restrict data, int64_t width, int64_t stride) {
  if (stride == 1) {
    for (int64_t j = 0; j < width; ++j) acc[j] = Op::combine(acc[j], load(data[j]));
    return;
  }
  for (int64_t j = 0; j < width; ++j) acc[j] = Op::combine(acc[j], load(data[j * stride]));
}

// A contiguous run reduced as the columns of a [count / kLanes, kLanes] matrix:
// independent lanes that the compiler vectorizes without reassociating one chain.
template <class Op, class T>
PX_ROW_CLONES typename Op::Acc reduce_contiguous(const T* data, int64_t count) {
  constexpr int64_t kLanes = 64;
  if (count < kLanes) {
    // What the lanes below compute for a short row (no full pass: a sequential loop), without
    // setting up and merging 64 lanes per row: rows of 16-32 elements (a LayerNorm's last dim)
    // spent most of their time there.
    typename Op::Acc total = Op::init();
    for (int64_t i = 0; i < count; ++i) total = Op::combine(total, load(data[i]));
    return total;
  }
  typename Op::Acc lanes[kLanes];
  std::fill(std::begin(lanes), std::end(lanes), Op::init());
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) accumulate_row<Op>(lanes, data + i, kLanes, 1);
  for (int64_t width = kLanes / 2; width >= 1; width /= 2) {  // pairwise, for accuracy
    for (int64_t k = 0; k < width; ++k) lanes[k] = Op::merge(lanes[k], lanes[k + width]);
  }
  typename Op::Acc total = lanes[0];
  for (; i < count; ++i) total = Op::combine(total, load(data[i]));
  return total;
}

// One output element: all reduced elements starting at `base`.
template <class Op, class T>
typename Op::Acc reduce_block(const T* base, const ReducePlan& plan) {
  typename Op::Acc acc = Op::init();
  for_each_row(plan.reduced_shape, plan.reduced_strides, [&](int64_t offset, int64_t count, int64_t stride) {
    const T* data = base + offset;
    if (stride == 1) {
      acc = Op::merge(acc, reduce_contiguous<Op>(data, count));
      return;
    }
    for (int64_t i = 0; i < count; ++i) acc = Op::combine(acc, load(data[i * stride]));
  });
  return acc;
}

// The input offsets of the outputs of (shape, strides), in row-major order.
std::vector<int64_t> offsets_of(std::span<const int64_t> shape, std::span<const int64_t> strides) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(numel(shape)));
  for_each_row(shape, strides, [&](int64_t offset, int64_t count, int64_t stride) {
    for (int64_t j = 0; j < count; ++j) offsets.push_back(offset + j * stride);
  });
  return offsets;
}

// Row reductions: the reduced elements of one output are the inner loop. Outputs are
// independent, so they run on the current pool (core/parallel.h), each computed as alone.
template <class Op, class T>
void reduce_rows(const T* in, const ReducePlan& plan, T* out, double scale) {
  const std::vector<int64_t> offsets = offsets_of(plan.kept_shape, plan.kept_strides);
  parallel_for(static_cast<int64_t>(offsets.size()), rows_per_chunk(plan.reduced_count()),
               [&](int64_t begin, int64_t end) {
                 for (int64_t i = begin; i < end; ++i)
                   out[i] = Op::finish(reduce_block<Op>(in + offsets[static_cast<size_t>(i)], plan), scale);
               });
}

// Four rows per pass over the accumulators: a quarter of their loads and stores.
template <class Op, class T>
PX_ROW_CLONES void accumulate_rows(typename Op::Acc* __restrict acc, const T* data, int64_t rows, int64_t row_stride,
                                   int64_t width, int64_t stride) {
  int64_t r = 0;
  for (; stride == 1 && r + 4 <= rows; r += 4) {
    const T* __restrict p0 = data + r * row_stride;
    const T* __restrict p1 = p0 + row_stride;
    const T* __restrict p2 = p1 + row_stride;
    const T* __restrict p3 = p2 + row_stride;
    for (int64_t j = 0; j < width; ++j) {
      acc[j] = Op::combine(Op::combine(Op::combine(Op::combine(acc[j], load(p0[j])), load(p1[j])), load(p2[j])),
                           load(p3[j]));
    }
  }
  for (; r < rows; ++r) accumulate_row<Op>(acc, data + r * row_stride, width, stride);
}

// Column reductions: the innermost kept dim is the inner loop, so whole rows of
// the input accumulate into a row of accumulators (e.g. summing a batch dim away). Blocks of
// columns run on the current pool; each column accumulates in the same order as without it.
template <class Op, class T>
void reduce_columns(const T* in, const ReducePlan& plan, T* out, double scale) {
  constexpr int64_t kColumnBlock = 256;
  size_t outer_rank = plan.kept_shape.size() - 1;
  int64_t width = plan.kept_shape.back();
  int64_t width_stride = plan.kept_strides.back();
  const std::vector<int64_t> outer = offsets_of(std::span<const int64_t>(plan.kept_shape.data(), outer_rank),
                                                std::span<const int64_t>(plan.kept_strides.data(), outer_rank));
  const int64_t blocks_per_row = (width + kColumnBlock - 1) / kColumnBlock;
  const int64_t pieces = static_cast<int64_t>(outer.size()) * blocks_per_row;
  const int64_t grain =
      std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, plan.reduced_count() * kColumnBlock));
  parallel_for(pieces, grain, [&](int64_t begin, int64_t end) {
    std::vector<typename Op::Acc> acc(static_cast<size_t>(std::min(width, kColumnBlock)));
    for (int64_t piece = begin; piece < end; ++piece) {
      const int64_t row = piece / blocks_per_row;
      const int64_t j0 = (piece % blocks_per_row) * kColumnBlock;
      const int64_t columns = std::min(kColumnBlock, width - j0);
      const int64_t kept_offset = outer[static_cast<size_t>(row)] + j0 * width_stride;
      std::fill(acc.begin(), acc.begin() + columns, Op::init());
      for_each_row(plan.reduced_shape, plan.reduced_strides, [&](int64_t offset, int64_t count, int64_t stride) {
        accumulate_rows<Op>(acc.data(), in + kept_offset + offset, count, stride, columns, width_stride);
      });
      T* out_row = out + row * width + j0;
      for (int64_t j = 0; j < columns; ++j) out_row[j] = Op::finish(acc[static_cast<size_t>(j)], scale);
    }
  });
}

template <class Op, class T>
void run_reduce(const T* in, const ReducePlan& plan, T* out, double scale) {
  bool columns = !plan.kept_shape.empty() && !plan.reduced_shape.empty() &&
                 std::abs(plan.kept_strides.back()) < std::abs(plan.reduced_strides.back());
  if (columns) {
    reduce_columns<Op>(in, plan, out, scale);
  } else {
    reduce_rows<Op>(in, plan, out, scale);
  }
}

}  // namespace

ReducePlan make_reduce_plan(std::span<const int64_t> shape, std::span<const int64_t> strides,
                            std::span<const int64_t> dims) {
  ReducePlan plan;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    (reduced ? plan.reduced_shape : plan.kept_shape).push_back(shape[d]);
    (reduced ? plan.reduced_strides : plan.kept_strides).push_back(strides[d]);
  }
  coalesce(plan.kept_shape, plan.kept_strides);
  coalesce(plan.reduced_shape, plan.reduced_strides);
  return plan;
}

template <class T>
void reduce(ReduceOp op, const T* in, const ReducePlan& plan, T* out, double scale) {
  switch (op) {
    case ReduceOp::Sum:
      return run_reduce<SumOp<T>>(in, plan, out, scale);
    case ReduceOp::Max:
      return run_reduce<MaxOp<T>>(in, plan, out, scale);
    case ReduceOp::Min:
      return run_reduce<MinOp<T>>(in, plan, out, scale);
  }
}

template <class T>
void argmax(const T* in, const ReducePlan& plan, int64_t* out) {
  int64_t position = 0;
  auto one_output = [&](const T* base) {
    Value<T> best{};
    int64_t best_index = -1, index = 0;
    for_each_row(plan.reduced_shape, plan.reduced_strides, [&](int64_t offset, int64_t count, int64_t stride) {
      for (int64_t i = 0; i < count; ++i, ++index) {
        Value<T> value = load(base[offset + i * stride]);
        bool better = best_index < 0 || (!is_nan(best) && (is_nan(value) || value > best));
        if (better) {
          best = value;
          best_index = index;
        }
      }
    });
    out[position++] = std::max<int64_t>(best_index, 0);
  };
  for_each_row(plan.kept_shape, plan.kept_strides, [&](int64_t offset, int64_t count, int64_t stride) {
    for (int64_t j = 0; j < count; ++j) one_output(in + offset + j * stride);
  });
}

template void reduce<float>(ReduceOp, const float*, const ReducePlan&, float*, double);
template void reduce<double>(ReduceOp, const double*, const ReducePlan&, double*, double);
template void reduce<int64_t>(ReduceOp, const int64_t*, const ReducePlan&, int64_t*, double);
template void reduce<BFloat16>(ReduceOp, const BFloat16*, const ReducePlan&, BFloat16*, double);
template void argmax<float>(const float*, const ReducePlan&, int64_t*);
template void argmax<double>(const double*, const ReducePlan&, int64_t*);
template void argmax<int64_t>(const int64_t*, const ReducePlan&, int64_t*);
template void argmax<BFloat16>(const BFloat16*, const ReducePlan&, int64_t*);

}  // namespace px::kernels
