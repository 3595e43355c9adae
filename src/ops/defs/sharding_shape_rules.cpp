#include "ops/defs/sharding_shape_rules.h"

#include <algorithm>

#include "parallax/core/error.h"

namespace px::defs {

bool partial_allowed(DType dtype) { return dtype != DType::Bool; }

StrategyList::StrategyList(size_t num_inputs, size_t num_outputs) : num_inputs_(num_inputs), num_outputs_(num_outputs) {
  list_.push_back({std::vector<Placement>(num_inputs, rep()), std::vector<Placement>(num_outputs, rep())});
}

void StrategyList::add(std::vector<Placement> inputs, std::vector<Placement> outputs) {
  ShardingStrategy strategy{std::move(inputs), std::move(outputs)};
  PX_ASSERT(strategy.inputs.size() == num_inputs_ && strategy.outputs.size() == num_outputs_);
  if (std::find(list_.begin(), list_.end(), strategy) == list_.end()) list_.push_back(std::move(strategy));
}

void StrategyList::add_uniform(const Placement& input, const Placement& output) {
  add(std::vector<Placement>(num_inputs_, input), std::vector<Placement>(num_outputs_, output));
}

std::vector<ShardingStrategy> data_movement_rule(size_t num_inputs, size_t num_outputs,
                                                 const std::vector<int64_t>& dim_map, DType dtype) {
  StrategyList list(num_inputs, num_outputs);
  for (size_t d = 0; d < dim_map.size(); ++d) {
    if (dim_map[d] >= 0) list.add_uniform(shard(static_cast<int64_t>(d)), shard(dim_map[d]));
  }
  if (partial_allowed(dtype)) {
    for (ReduceOp op : kAllReduces) list.add_uniform(partial(op), partial(op));
  }
  return list.take();
}

std::vector<int64_t> view_dim_map(std::span<const int64_t> in, std::span<const int64_t> out) {
  std::vector<int64_t> map(in.size(), -1);
  // With no elements the running products never separate the dims into groups.
  if (numel(in) == 0) return map;
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    size_t i0 = i, j0 = j;
    int64_t in_product = i < in.size() ? in[i++] : 1;
    int64_t out_product = j < out.size() ? out[j++] : 1;
    while (in_product != out_product) {
      if (in_product < out_product && i < in.size()) {
        in_product *= in[i++];
      } else if (in_product > out_product && j < out.size()) {
        out_product *= out[j++];
      } else {
        return map;  // the counts differ: not a view (inference reports it)
      }
    }
    auto first_wide = [](std::span<const int64_t> dims, size_t from, size_t to) -> int64_t {
      for (size_t d = from; d < to; ++d) {
        if (dims[d] != 1) return static_cast<int64_t>(d);
      }
      return -1;
    };
    int64_t a = first_wide(in, i0, i);
    int64_t b = first_wide(out, j0, j);
    if (a >= 0 && b >= 0) map[a] = b;
  }
  return map;
}

bool sharded_on(std::span<const Placement> placements, int64_t dim) {
  return std::any_of(placements.begin(), placements.end(), [dim](const Placement& placement) {
    const auto* s = std::get_if<Shard>(&placement);
    return s && s->dim == dim;
  });
}

bool has_mask_partial(std::span<const Placement> placements) {
  return std::any_of(placements.begin(), placements.end(),
                     [](const Placement& placement) { return std::holds_alternative<MaskPartial>(placement); });
}

Placement batch_operand_placement(const TensorMeta& operand, int64_t own, int64_t batch_rank, int64_t out_dim,
                                  int64_t out_size) {
  int64_t dim = out_dim - (batch_rank - own);
  if (dim < 0 || operand.shape[dim] != out_size) return rep();
  return shard(dim);
}

bool attr_bool_or(const Attrs& attrs, std::string_view name, bool fallback) {
  return attrs.has(name) ? attrs.get_bool(name) : fallback;
}

int64_t attr_int_or(const Attrs& attrs, std::string_view name, int64_t fallback) {
  return attrs.has(name) ? attrs.get_int(name) : fallback;
}

}  // namespace px::defs
