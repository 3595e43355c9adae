#include "ops/defs/sharding_rules.h"

#include <algorithm>
#include <string>

#include "ops/defs/reduce.h"
#include "parallax/core/shape.h"

namespace px::defs {

ShardingStrategy replicate_all(size_t num_inputs, size_t num_outputs) {
  return {std::vector<Placement>(num_inputs, Replicate{}), std::vector<Placement>(num_outputs, Replicate{})};
}

void add_unique(std::vector<ShardingStrategy>& strategies, ShardingStrategy strategy) {
  if (std::find(strategies.begin(), strategies.end(), strategy) == strategies.end()) {
    strategies.push_back(std::move(strategy));
  }
}

void add_all_unique(std::vector<ShardingStrategy>& strategies, const std::vector<ShardingStrategy>& more) {
  for (const ShardingStrategy& strategy : more) add_unique(strategies, strategy);
}

std::vector<ShardingStrategy> unary_partials(std::initializer_list<std::pair<ReduceOp, ReduceOp>> maps) {
  std::vector<ShardingStrategy> strategies;
  for (const auto& [from, to] : maps) strategies.push_back({{Partial{from}}, {Partial{to}}});
  return strategies;
}

std::vector<ShardingStrategy> monotone_partials(bool increasing) {
  if (increasing) return unary_partials({{ReduceOp::Max, ReduceOp::Max}, {ReduceOp::Min, ReduceOp::Min}});
  return unary_partials({{ReduceOp::Max, ReduceOp::Min}, {ReduceOp::Min, ReduceOp::Max}});
}

Shape broadcast_all(const std::vector<TensorMeta>& inputs, std::string_view op) {
  Shape shape;
  for (const TensorMeta& input : inputs) shape = broadcast_shapes(shape, input.shape, op);
  return shape;
}

std::vector<ShardingStrategy> pointwise_strategies(const std::vector<TensorMeta>& inputs, std::string_view op,
                                                   size_t num_outputs) {
  std::vector<ShardingStrategy> strategies{replicate_all(inputs.size(), num_outputs)};
  Shape out = broadcast_all(inputs, op);
  auto out_rank = static_cast<int64_t>(out.size());
  for (int64_t d = 0; d < out_rank; ++d) {
    ShardingStrategy strategy;
    for (const TensorMeta& input : inputs) {
      int64_t aligned = d - (out_rank - input.ndim());
      bool shardable = aligned >= 0 && input.shape[static_cast<size_t>(aligned)] == out[static_cast<size_t>(d)];
      strategy.inputs.push_back(shardable ? Placement(Shard{aligned}) : Placement(Replicate{}));
    }
    strategy.outputs.assign(num_outputs, Shard{d});
    add_unique(strategies, std::move(strategy));
  }
  return strategies;
}

ShardingRuleFn pointwise_rule(std::string op, PartialStrategiesFn partials) {
  return
      [op = std::move(op), partials = std::move(partials)](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
        std::vector<ShardingStrategy> strategies = pointwise_strategies(inputs, op);
        if (partials) add_all_unique(strategies, partials(inputs, attrs));
        return strategies;
      };
}

ShardingRuleFn pointwise_rule(std::string op, std::vector<ShardingStrategy> partials) {
  return [op = std::move(op), partials = std::move(partials)](const std::vector<TensorMeta>& inputs, const Attrs&) {
    std::vector<ShardingStrategy> strategies = pointwise_strategies(inputs, op);
    add_all_unique(strategies, partials);
    return strategies;
  };
}

std::vector<ShardingStrategy> independent_dims_strategies(size_t num_inputs, std::span<const int64_t> dims,
                                                          size_t num_outputs) {
  std::vector<ShardingStrategy> strategies{replicate_all(num_inputs, num_outputs)};
  for (int64_t d : dims) {
    ShardingStrategy strategy = replicate_all(num_inputs, num_outputs);
    if (num_inputs > 0) strategy.inputs[0] = Shard{d};
    strategy.outputs.assign(num_outputs, Shard{d});
    add_unique(strategies, std::move(strategy));
  }
  return strategies;
}

std::vector<int64_t> dim_range(int64_t begin, int64_t end) {
  std::vector<int64_t> dims;
  for (int64_t d = begin; d < end; ++d) dims.push_back(d);
  return dims;
}

std::vector<ShardingStrategy> reduction_strategies(int64_t ndim, std::span<const int64_t> reduced, bool keepdim,
                                                   const ReductionSharding& how) {
  std::vector<ShardingStrategy> strategies{replicate_all(1)};
  int64_t reduced_before = 0;  // reduced dims below d: how far d moves left when they are dropped
  for (int64_t d = 0; d < ndim; ++d) {
    bool is_reduced = std::binary_search(reduced.begin(), reduced.end(), d);
    if (!is_reduced) {
      add_unique(strategies, {{Shard{d}}, {Shard{keepdim ? d : d - reduced_before}}});
    } else if (how.sharded_reduced) {
      add_unique(strategies, {{Shard{d}}, {Partial{*how.sharded_reduced}}});
    }
    if (is_reduced) ++reduced_before;
  }
  for (ReduceOp op : how.passing) add_unique(strategies, {{Partial{op}}, {Partial{op}}});
  return strategies;
}

ShardingRuleFn reduction_rule(std::string op, ReductionSharding how) {
  return [op = std::move(op), how = std::move(how)](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    std::vector<int64_t> reduced = reduce_dims(op, attrs.get_ints("dims"), inputs[0].ndim());
    return reduction_strategies(inputs[0].ndim(), reduced, attrs.get_bool("keepdim"), how);
  };
}

}  // namespace px::defs
