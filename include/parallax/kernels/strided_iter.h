#pragma once
// An N-operand strided iteration space for elementwise-style kernels.
//
// The operands (typically the output first, then the inputs) share one logical
// shape; each has its own strides, in elements, with 0 on broadcast dims. The
// space is simplified before iterating: size-1 dims are dropped and adjacent
// dims are merged wherever every operand steps through them as one. So a
// contiguous tensor becomes one long row, `[B,T,D] + [D]` becomes rows of D with
// the bias stride 1, and kernels only write a plain inner loop over a row.
//
//   StridedIter<3> it(out_shape, {out_strides, a_strides, b_strides});
//   it.for_each_row([&](const std::array<int64_t, 3>& start) {
//     // it.row_size() elements; operand k steps it.row_strides()[k] from start[k]
//   });

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "parallax/core/shape.h"

namespace px::kernels {

// Strides that view a tensor of `shape` and `strides` as `out_shape` under NumPy
// broadcasting: missing leading dims and stretched size-1 dims get stride 0.
// The shapes must be broadcast-compatible (checked by the op's inference).
inline Strides broadcast_strides(std::span<const int64_t> shape, std::span<const int64_t> strides,
                                 std::span<const int64_t> out_shape) {
  Strides out(out_shape.size(), 0);
  size_t lead = out_shape.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == out_shape[lead + d]) out[lead + d] = strides[d];
  }
  return out;
}

template <size_t N>
class StridedIter {
 public:
  using Offsets = std::array<int64_t, N>;

  StridedIter(std::span<const int64_t> shape, const std::array<std::span<const int64_t>, N>& strides);

  int64_t numel() const { return numel_; }
  // The simplified space: at least one dim, outermost first.
  int64_t ndim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t row_size() const { return sizes_.back(); }
  const Offsets& row_strides() const { return steps_.back(); }
  int64_t num_rows() const { return numel_ == 0 ? 0 : numel_ / row_size(); }
  // Per simplified dim: its extent, and each operand's stride along it.
  const std::vector<int64_t>& dim_sizes() const { return sizes_; }
  const std::vector<Offsets>& dim_steps() const { return steps_; }

  // Calls fn(start) for every row in row-major order; start[k] is operand k's
  // element offset of the row's first element.
  template <class Fn>
  void for_each_row(Fn&& fn) const {
    for_each_row(0, num_rows(), fn);
  }
  // Rows [begin, end) only, so that a caller may split the work; kernels never start threads.
  template <class Fn>
  void for_each_row(int64_t begin, int64_t end, Fn&& fn) const;

 private:
  std::vector<int64_t> sizes_;
  std::vector<Offsets> steps_;  // per simplified dim, one stride per operand
  int64_t numel_ = 0;
};

template <size_t N>
StridedIter<N>::StridedIter(std::span<const int64_t> shape, const std::array<std::span<const int64_t>, N>& strides)
    : numel_(px::numel(shape)) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    Offsets step{};
    for (size_t k = 0; k < N; ++k) step[k] = strides[k][d];
    // Merge into the previous (outer) dim when every operand's outer stride is its inner stride times this extent.
    bool mergeable = !sizes_.empty();
    for (size_t k = 0; k < N && mergeable; ++k) mergeable = steps_.back()[k] == step[k] * shape[d];
    if (mergeable) {
      sizes_.back() *= shape[d];
      steps_.back() = step;
    } else {
      sizes_.push_back(shape[d]);
      steps_.push_back(step);
    }
  }
  if (sizes_.empty()) {  // a scalar, or all dims of size 1
    sizes_.push_back(1);
    steps_.push_back(Offsets{});
  }
}

template <size_t N>
template <class Fn>
void StridedIter<N>::for_each_row(int64_t begin, int64_t end, Fn&& fn) const {
  if (begin >= end) return;
  const size_t outer = sizes_.size() - 1;
  // Odometer over the outer dims, starting at row `begin`.
  std::vector<int64_t> index(outer, 0);
  Offsets start{};
  int64_t rest = begin;
  for (size_t d = outer; d-- > 0;) {
    index[d] = rest % sizes_[d];
    rest /= sizes_[d];
    for (size_t k = 0; k < N; ++k) start[k] += index[d] * steps_[d][k];
  }
  for (int64_t row = begin; row < end; ++row) {
    fn(static_cast<const Offsets&>(start));
    for (size_t d = outer; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) start[k] += steps_[d][k];
      if (++index[d] < sizes_[d]) break;
      for (size_t k = 0; k < N; ++k) start[k] -= sizes_[d] * steps_[d][k];
      index[d] = 0;
    }
  }
}

}  // namespace px::kernels
