#include "parallax/autodiff/export.h"

#include "parallax/autodiff/joint.h"

namespace px {

int64_t JointProgram::grad_output_of(const InputDescriptor& input) const {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputDescriptor& output = outputs[i];
    if (output.kind == OutputDescriptor::Kind::Grad && !output.of.empty() && output.of[0] == input) {
      return graph_output[i];
    }
  }
  throw ValueError("joint program '" + graph.name() + "' has no gradient output for " + input.str());
}

JointProgram export_joint(const CapturedGraph& captured) {
  const ir::Graph& forward = captured.graph;
  std::vector<bool> requires_grad;
  requires_grad.reserve(forward.inputs().size());
  for (size_t i = 0; i < forward.inputs().size(); ++i) {
    bool floating = is_floating(forward.meta(forward.inputs()[i]).dtype);
    const InputDescriptor& input = captured.inputs[i];
    bool buffer = input.underlying_kind() == InputDescriptor::Kind::Buffer;
    requires_grad.push_back(floating && !buffer);
  }
  autodiff::JointOptions options;
  options.requires_grad = requires_grad;
  options.tangents_only_where_needed = true;
  options.none_for_unconnected = true;
  for (const OutputDescriptor& output : captured.outputs) {
    options.differentiable_outputs.push_back(output.kind == OutputDescriptor::Kind::UserOutput);
  }
  autodiff::JointGraph joint = autodiff::build_joint(forward, options);

  JointProgram program;
  program.graph = std::move(joint.graph);
  program.inputs = captured.inputs;
  for (size_t output : joint.tangent_for_output) {
    const OutputDescriptor& seeded = captured.outputs[output];
    program.inputs.push_back(InputDescriptor::tangent(seeded.path, seeded.leaf));
  }
  program.outputs = captured.outputs;
  program.num_forward_outputs = captured.outputs.size();
  for (size_t i = 0; i < captured.outputs.size(); ++i) program.graph_output.push_back(static_cast<int64_t>(i));
  for (size_t i = 0; i < captured.inputs.size(); ++i) {
    if (!requires_grad[i] && (captured.inputs[i].kind == InputDescriptor::Kind::Buffer ||
                              captured.inputs[i].owner == InputDescriptor::Kind::Buffer)) {
      continue;  // buffers (and their inner tensors) have no gradient at all
    }
    int64_t output = joint.grad_output_of_input[i];
    program.outputs.push_back(OutputDescriptor::grad(captured.inputs[i], output < 0));
    program.graph_output.push_back(output);
  }
  // Name the tangents after what they seed, so the IR text reads without the descriptors.
  for (size_t t = 0; t < joint.tangent_for_output.size(); ++t) {
    ir::ValueId id = program.graph.inputs()[captured.inputs.size() + t];
    program.graph.value(id).name = "tangent" + program.inputs[captured.inputs.size() + t].path.str();
  }
  return program;
}

JointProgram export_joint(const CapturedProgram& program) { return export_joint(program.primary()); }

}  // namespace px
