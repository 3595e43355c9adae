#pragma once
// The placement vocabulary as plain values, so that each op can state its
// sharding rule for one mesh dimension. DTensor gives these meaning later.

#include <cstdint>
#include <string>
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

using Placement = std::variant<Replicate, Shard, Partial>;

std::string reduce_op_name(ReduceOp op);
// "R", "S(0)", "P(sum)"
std::string placement_str(const Placement& placement);

}  // namespace px
