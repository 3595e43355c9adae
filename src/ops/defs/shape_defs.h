#pragma once
// Private: the shape family's op definitions (one def_* per op, grouped by file)
// and the helpers they share.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/defs/common.h"

namespace px::defs {

// view.cpp
OpDef def_view();
OpDef def_reshape();
// permute.cpp
OpDef def_permute();
OpDef def_transpose();
// slice.cpp
OpDef def_slice();
OpDef def_narrow();
OpDef def_slice_backward();
// select.cpp
OpDef def_select();
// expand.cpp
OpDef def_expand();
// squeeze.cpp
OpDef def_squeeze();
OpDef def_unsqueeze();
// contiguous.cpp
OpDef def_contiguous();
OpDef def_clone();
// cast.cpp
OpDef def_cast();
// cat.cpp
OpDef def_cat();
// stack.cpp
OpDef def_stack();
// split.cpp
OpDef def_split();
OpDef def_chunk();
// triu.cpp
OpDef def_triu();
OpDef def_tril();

// --- shared helpers (contiguous.cpp) ---

// Writes `src`'s values into `dst` (same shape, any strides, any dtypes).
void copy_into(const Tensor& src, const Tensor& dst);
// A fresh contiguous tensor holding `src`'s values converted to `dtype`.
Tensor contiguous_copy(const Tensor& src, DType dtype);
// Cost of an op that reads every input once and writes every output once.
OpCost copy_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs& attrs);
// "f32[2,3], f32[4,3]" for error messages.
std::string metas_str(const std::vector<TensorMeta>& metas);
// Throws ShapeError naming `op` when `meta` has fewer than `min_rank` dims.
void require_rank_at_least(std::string_view op, const TensorMeta& meta, int64_t min_rank);

// --- slice arithmetic (slice.cpp) ---

// A python-style slice resolved against a dim of size `size`: 0 <= start <= size, length >= 0.
struct SliceRange {
  int64_t start = 0;
  int64_t length = 0;
  int64_t step = 1;
};
// Clamps start/end like Python; throws ValueError naming `op` for step <= 0.
SliceRange resolve_slice(std::string_view op, int64_t size, int64_t start, int64_t end, int64_t step);

// --- view arithmetic (view.cpp) ---

// Resolves one -1 in `shape` so that it holds `count` elements; throws ShapeError naming `op`.
Shape infer_view_shape(std::string_view op, const TensorMeta& input, const Shape& shape);
// Strides that view (old_shape, old_strides) as new_shape without copying, or
// nullopt when no such strides exist (the torch stride-compatibility rule).
std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape);

}  // namespace px::defs
