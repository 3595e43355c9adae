#pragma once
// Private helpers shared by the op definitions.

#include <string_view>
#include <vector>

#include "parallax/ops/dispatch.h"
#include "parallax/ops/op_def.h"

namespace px::defs {

// Sums `grad` over the dims that broadcasting added or stretched, so it has `shape`
// (the VJP of broadcasting). Written with ops, so it traces.
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);

// Throws DTypeError naming `op` unless every meta has the same dtype.
void require_same_dtype(std::string_view op, const std::vector<TensorMeta>& metas);
// Throws DTypeError naming `op` unless `meta` is floating point.
void require_floating(std::string_view op, const TensorMeta& meta);

// Memory-bound cost: every input read once, every output written once, `flops_per_element` per output element.
OpCost elementwise_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                        double flops_per_element);
// Cost of an op that moves no data (views): nothing read or written.
OpCost free_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs& attrs);

}  // namespace px::defs
