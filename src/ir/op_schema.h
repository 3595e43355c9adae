#pragma once
// Private: checking a node's call against its op's schema, shared by the graph
// builder, the parser and the verifier so that all three accept the same nodes.

#include <vector>

#include "parallax/ops/op_def.h"

namespace px::ir::detail {

// Checks the input count and the attributes (names, types) against `op`'s schema
// and returns the attributes completed with defaults, in schema order. Throws
// ValueError naming the op, as the dispatcher does.
Attrs complete_attrs(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs);

}  // namespace px::ir::detail
