#pragma once
// Private: building blocks of the sharding rules of the shape, linalg and NN-index
// ops (views, joins, matmul, linear, embedding, losses, attention). Each rule
// states what is exact for ONE mesh dim; dtensor/strategy.cpp combines them.

#include <cstdint>
#include <span>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/shape.h"
#include "parallax/ops/op_def.h"

namespace px::defs {

inline Placement rep() { return Replicate{}; }
inline Placement shard(int64_t dim) { return Shard{dim}; }
inline Placement partial(ReduceOp op) { return Partial{op}; }

// Data movement (views, copies, gathers) commutes with every elementwise reduction.
inline constexpr ReduceOp kAllReduces[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};
// Ops linear in one operand commute with sum and average only.
inline constexpr ReduceOp kLinearReduces[] = {ReduceOp::Sum, ReduceOp::Avg};

// Partial placements of bool tensors have no meaning (a sum of flags is not a flag).
bool partial_allowed(DType dtype);

// A rule's list under construction: the all-Replicate strategy first, then each
// added strategy once, in the order added.
class StrategyList {
 public:
  StrategyList(size_t num_inputs, size_t num_outputs);
  void add(std::vector<Placement> inputs, std::vector<Placement> outputs);
  // The same placement on every input and every output.
  void add_uniform(const Placement& input, const Placement& output);
  std::vector<ShardingStrategy> take() { return std::move(list_); }

 private:
  size_t num_inputs_;
  size_t num_outputs_;
  std::vector<ShardingStrategy> list_;
};

// The rule of an op that only moves the elements of its inputs: input Shard(d) goes to
// output Shard(dim_map[d]) on every output (no strategy where dim_map[d] < 0), every input
// taking the same placement, and every Partial kind passes (unless the dtype is bool).
std::vector<ShardingStrategy> data_movement_rule(size_t num_inputs, size_t num_outputs,
                                                 const std::vector<int64_t>& dim_map, DType dtype);

// For a view of `in` as `out` (same element count): the output dim each input dim's Shard
// becomes, or -1. Dims are grouped where their running products meet; within a group only
// the first dim of size > 1 carries its shard, to the group's first output dim of size > 1,
// since only then does every shard cover one contiguous run of the group's elements.
std::vector<int64_t> view_dim_map(std::span<const int64_t> in, std::span<const int64_t> out);

// True when some mesh dim shards this tensor's dim `dim`.
bool sharded_on(std::span<const Placement> placements, int64_t dim);
// True when some mesh dim places this tensor as MaskPartial.
bool has_mask_partial(std::span<const Placement> placements);

// The placement an operand takes for output batch dim `out_dim` of a broadcast with
// `batch_rank` dims of which the operand's own batch dims are the trailing `own` dims:
// Shard of its matching dim, or Replicate where it has none or broadcasts a size-1 dim.
Placement batch_operand_placement(const TensorMeta& operand, int64_t own, int64_t batch_rank, int64_t out_dim,
                                  int64_t out_size);

// Attribute `name` or its default when absent (the local facets may see unfilled attributes).
bool attr_bool_or(const Attrs& attrs, std::string_view name, bool fallback);
int64_t attr_int_or(const Attrs& attrs, std::string_view name, int64_t fallback);

}  // namespace px::defs
