#pragma once
// Runs a graph node by node through the op dispatcher: dense CPU tensors give
// dense results, meta tensors give meta results, and inside an active trace the
// nodes are recorded again (the graph is inlined into the trace).

#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ir/graph.h"

namespace px::ir {

// One tensor per graph input, in order, with exactly the input's shape and dtype
// (ValueError naming the input otherwise). Returns one tensor per graph output.
// Each intermediate value is released right after its last use, so peak memory
// follows the graph's liveness rather than its size.
std::vector<Tensor> interpret(const Graph& graph, const std::vector<Tensor>& inputs);

}  // namespace px::ir
