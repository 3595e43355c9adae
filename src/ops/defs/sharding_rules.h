#pragma once
// Private: building blocks of the ops' sharding rules (OpDef::sharding), shared by
// the op families. Every builder gives the strategies of ONE mesh dim, all-Replicate
// first and each strategy once (the rule contract in parallax/ops/op_def.h); which
// of them hold on uneven shards is left to dtensor's expand_strategies.
//
// A partial strategy is offered only when it is exact: reducing the op's local
// results over the mesh dim gives the op's result on the reduced inputs, for every
// split of the partial inputs (up to rounding). Linear ops pass P(sum) and P(avg);
// monotone ops pass (non-decreasing) or swap (non-increasing) P(max) and P(min), but
// only over their whole domain: log(P(max)) is not exact, since a part below the
// global value may fall outside log's domain and give a NaN that the max keeps.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/ops/op_def.h"

namespace px::defs {

// The strategy that replicates every input and every output.
ShardingStrategy replicate_all(size_t num_inputs, size_t num_outputs = 1);

// Appends `strategy` unless `strategies` already holds it.
void add_unique(std::vector<ShardingStrategy>& strategies, ShardingStrategy strategy);
void add_all_unique(std::vector<ShardingStrategy>& strategies, const std::vector<ShardingStrategy>& more);

// One-input, one-output partial maps: P(from) -> P(to) for each pair.
std::vector<ShardingStrategy> unary_partials(std::initializer_list<std::pair<ReduceOp, ReduceOp>> maps);
// P(max) -> P(max) and P(min) -> P(min) for a non-decreasing op over all of its domain's reals;
// swapped (P(max) -> P(min), P(min) -> P(max)) for a non-increasing one.
std::vector<ShardingStrategy> monotone_partials(bool increasing);

// The broadcast shape of all the inputs (ShapeError naming `op` when they do not broadcast).
Shape broadcast_all(const std::vector<TensorMeta>& inputs, std::string_view op);

// Pointwise ops with NumPy broadcasting: all-Replicate, then for each dim d of the broadcast
// output shape, every output Shard(d) with each input Shard on its aligned dim, or Replicate where
// the input lacks that dim or broadcasts it (its size differs from the output's).
std::vector<ShardingStrategy> pointwise_strategies(const std::vector<TensorMeta>& inputs, std::string_view op,
                                                   size_t num_outputs = 1);

// The partial strategies of a pointwise op on these inputs and attributes.
using PartialStrategiesFn =
    std::function<std::vector<ShardingStrategy>(const std::vector<TensorMeta>& inputs, const Attrs& attrs)>;
// pointwise_strategies, then `partials` (none when empty).
ShardingRuleFn pointwise_rule(std::string op, PartialStrategiesFn partials = {});
// pointwise_strategies, then a fixed list of partial strategies.
ShardingRuleFn pointwise_rule(std::string op, std::vector<ShardingStrategy> partials);

// Ops that act independently along some dims of input 0 (softmax off its dim, a norm's leading
// dims, rope's batch dims): all-Replicate, then for each d in `dims` input 0 and every output
// Shard(d), the other inputs Replicate.
std::vector<ShardingStrategy> independent_dims_strategies(size_t num_inputs, std::span<const int64_t> dims,
                                                          size_t num_outputs = 1);
// The dims [begin, end) as a list.
std::vector<int64_t> dim_range(int64_t begin, int64_t end);

// How a reduction treats sharded and partial inputs.
struct ReductionSharding {
  // The output placement of a Shard on a reduced dim (nullopt: such strategies are not offered).
  std::optional<ReduceOp> sharded_reduced;
  // Partial inputs that pass through unchanged: P(r) -> P(r).
  std::vector<ReduceOp> passing;
};
// A reduction of a rank-`ndim` input over `reduced` (normalized, sorted): all-Replicate; a Shard on
// an unreduced dim passes (renumbered when !keepdim); a Shard on a reduced dim gives
// P(how.sharded_reduced); then the passing partials.
std::vector<ShardingStrategy> reduction_strategies(int64_t ndim, std::span<const int64_t> reduced, bool keepdim,
                                                   const ReductionSharding& how);
// reduction_strategies for the ops whose attributes are dims (empty: all) and keepdim: sum, mean, amax, amin.
ShardingRuleFn reduction_rule(std::string op, ReductionSharding how);

}  // namespace px::defs
