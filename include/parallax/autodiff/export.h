#pragma once
// export_joint: the joint forward+backward graph of a captured program, with a
// descriptor on every input and output, ready for the planner.
//
// Inputs:  Param(fqn)... Buffer(fqn)... UserInput(key path)... (as in the forward
//          graph), then Tangent(output key path) for every floating user output
//          that depends on a parameter or a floating user input.
// Outputs: UserOutput(key path)... (the forward graph's outputs), then
//          Grad(of: Param(...)) for every parameter and Grad(of: UserInput(...))
//          for every user tensor input, in input order. A gradient that does not
//          exist (a parameter the forward never uses, an integer input) is an
//          explicit none: its descriptor says so and it has no graph output.
// Buffers get no gradient. Inner tensors of subclass inputs (SubclassInner) are
// differentiated like the inputs they belong to; attribute-mutation outputs get
// no tangent. Nodes keep their module path; backward nodes are tagged with the
// backward phase.

#include <cstdint>
#include <vector>

#include "parallax/capture/capture.h"
#include "parallax/ir/graph.h"

namespace px {

struct JointProgram {
  ir::Graph graph;
  std::vector<InputDescriptor> inputs;  // one per graph input
  // The forward outputs (user outputs, then attribute mutations), then one Grad per parameter and user input.
  std::vector<OutputDescriptor> outputs;
  // Per output descriptor: its graph output index, or -1 for an explicit none.
  std::vector<int64_t> graph_output;
  size_t num_forward_outputs = 0;  // outputs before the first Grad

  // The graph output index of the gradient of the input with this descriptor; -1 for none;
  // ValueError when no Grad descriptor refers to it.
  int64_t grad_output_of(const InputDescriptor& input) const;
};

JointProgram export_joint(const CapturedGraph& captured);
// The program's primary (first) captured graph.
JointProgram export_joint(const CapturedProgram& program);

}  // namespace px
