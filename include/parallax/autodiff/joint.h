#pragma once
// Reverse-mode differentiation over the IR: the joint forward+backward graph.
//
// build_joint re-traces the forward graph and then, walking its nodes in
// reverse, traces each node's VJP (written in ops, so it records like any op
// call). Backward nodes carry their forward node's module path and the
// backward phase.
//
// Joint graph inputs:  the forward inputs, then one tangent (cotangent seed)
//                      per floating forward output, named "tangent.<i>" (or only
//                      per output that needs one: JointOptions).
// Joint graph outputs: the forward outputs, then the gradient of every input
//                      that requires one, in input order (zeros where no path
//                      connects the input to an output, or nothing: JointOptions).

#include <cstddef>
#include <vector>

#include "parallax/ir/graph.h"

namespace px::autodiff {

struct JointOptions {
  // One flag per forward input; empty means every floating-point input.
  std::vector<bool> requires_grad;
  // Seed only the floating outputs that depend on an input requiring a gradient
  // (false: every floating output gets a tangent).
  bool tangents_only_where_needed = false;
  // An input with no path to any output gets no gradient output at all (false: zeros).
  bool none_for_unconnected = false;
  // One flag per forward output: whether it gets a tangent at all (empty: every output may).
  // Outputs that are not differentiated (e.g. state written back to subclass inputs) say false.
  std::vector<bool> differentiable_outputs;
};

struct JointGraph {
  ir::Graph graph;
  size_t num_forward_outputs = 0;
  // For each tangent input (after the forward inputs): the forward output it seeds.
  std::vector<size_t> tangent_for_output;
  // For each gradient output (after the forward outputs): the forward input it differentiates.
  std::vector<size_t> grad_of_input;
  // For each forward input: its gradient's index among the graph outputs, or -1 when it has none
  // (not requiring a gradient, or unconnected under none_for_unconnected).
  std::vector<int64_t> grad_output_of_input;
};

// Throws ValueError for a requires_grad list of the wrong length or one that asks
// for the gradient of a non-floating input, and UnsupportedOp when a node on a
// gradient path has no VJP.
JointGraph build_joint(const ir::Graph& forward, const JointOptions& options = {});

}  // namespace px::autodiff
