#include "parallax/core/placement.h"

namespace px {

std::string reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

std::string placement_str(const Placement& placement) {
  if (std::holds_alternative<Replicate>(placement)) return "R";
  if (const auto* shard = std::get_if<Shard>(&placement)) return "S(" + std::to_string(shard->dim) + ")";
  return "P(" + reduce_op_name(std::get<Partial>(placement).reduce) + ")";
}

}  // namespace px
