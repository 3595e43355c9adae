#pragma once
// The placement vocabulary as plain values, so that each op can state its
// sharding rule for one mesh dimension. DTensor gives these meaning later.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace px {

enum class ReduceOp : uint8_t { Sum, Avg, Max, Min };

struct Replicate {
  friend bool operator==(const Replicate&, const Replicate&) = default;
};
struct Shard {
  int64_t dim = 0;
  friend bool operator==(const Shard&, const Shard&) = default;
};
struct Partial {
  ReduceOp reduce = ReduceOp::Sum;
  friend bool operator==(const Partial&, const Partial&) = default;
};
// A Partial(sum) whose local value is valid only where a mask is false: the output of an
// embedding over a row-sharded weight, where each rank looks up only the indices that fall in
// its rows. The mask itself is an inner tensor of the DTensor (so capture sees it under the
// subclass contract), never part of the placement: the placement stays a small comparable value
// that planning can use, holding the number of rows of the sharded table (0 when unknown).
struct MaskPartial {
  int64_t num_embeddings = 0;
  friend bool operator==(const MaskPartial&, const MaskPartial&) = default;
};

using Placement = std::variant<Replicate, Shard, Partial, MaskPartial>;

std::string reduce_op_name(ReduceOp op);
// "R", "S(0)", "P(sum)", "MP" (num_embeddings 0) or "MP(1000)"
std::string placement_str(const Placement& placement);
// "[S(0), R]"
std::string placements_str(std::span<const Placement> placements);
// The inverse of placement_str; also accepts "P" for P(sum). ValueError names the text.
Placement parse_placement(std::string_view text);

// Partial and MaskPartial: values that need a reduction across the mesh dimension.
bool is_partial(const Placement& placement);
// The reduction a partial placement needs (MaskPartial: Sum); ValueError for R and S.
ReduceOp partial_reduce(const Placement& placement);

}  // namespace px
