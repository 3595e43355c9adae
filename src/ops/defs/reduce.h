#pragma once
// Private: the reduction family (sum, mean, amax, amin, argmax) and the helpers
// its definitions share.

#include <cstdint>
#include <string_view>
#include <vector>

#include "ops/defs/common.h"
#include "parallax/kernels/reduce.h"

namespace px::defs {

OpDef def_sum();
OpDef def_mean();
OpDef def_amax();
OpDef def_amin();
OpDef def_argmax();

// The reduced dims of a rank-`ndim` tensor, normalized and sorted: empty `dims`
// means every dim; negative dims count from the end. Throws ValueError naming
// `op` for an out-of-range or repeated dim.
std::vector<int64_t> reduce_dims(std::string_view op, const std::vector<int64_t>& dims, int64_t ndim);
// `shape` with the reduced dims removed, or set to 1 when `keepdim`.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim);
// How many input elements each output element reduces.
int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& dims);

// Throws DTypeError naming `op` for bool input (no reduction here is defined on bool).
void require_numeric(std::string_view op, const TensorMeta& meta);
// Throws ValueError naming `op` when a reduced dim is empty (max/min/argmax have no identity).
void require_nonempty_reduction(std::string_view op, const TensorMeta& meta, const std::vector<int64_t>& dims);

// The attributes of sum, mean, amax and amin: dims:Ints=[] (empty = all), keepdim:Bool=false.
std::vector<AttrSpec> reduction_attrs();
// Inference shared by sum, mean, amax and amin (attrs dims, keepdim); dtype checks are the caller's.
TensorMeta infer_reduction(std::string_view op, const TensorMeta& input, const Attrs& attrs);
// Runs a reduction kernel on a dense tensor of any numeric dtype.
Tensor run_reduction(kernels::ReduceOp op, const Tensor& x, const Attrs& attrs, double scale = 1.0);
// Every input element read once, every output element written once, one FLOP per input element.
OpCost reduction_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                      const Attrs& attrs);

// `grad` of a reduction's output, reshaped to the keepdim shape so that it broadcasts against the input.
Tensor grad_with_kept_dims(const Tensor& grad, const Shape& input_shape, const Attrs& attrs);

}  // namespace px::defs
