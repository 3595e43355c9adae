#include "parallax/autodiff/joint.h"

#include <map>
#include <set>

#include "parallax/ir/provenance.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/op_handles.h"

namespace px::autodiff {

namespace {

std::vector<bool> resolve_requires_grad(const ir::Graph& forward, const JointOptions& options) {
  const std::vector<ir::ValueId>& inputs = forward.inputs();
  if (options.requires_grad.empty()) {
    std::vector<bool> flags;
    for (ir::ValueId id : inputs) flags.push_back(is_floating(forward.meta(id).dtype));
    return flags;
  }
  if (options.requires_grad.size() != inputs.size()) {
    throw ValueError("build_joint: requires_grad has " + std::to_string(options.requires_grad.size()) +
                     " flags for a graph with " + std::to_string(inputs.size()) + " inputs");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (options.requires_grad[i] && !is_floating(forward.meta(inputs[i]).dtype)) {
      throw ValueError("build_joint: input " + std::to_string(i) + " ('" + forward.value(inputs[i]).name + "', " +
                       forward.meta(inputs[i]).str() + ") is not floating point and has no gradient");
    }
  }
  return options.requires_grad;
}

// Values that depend on an input requiring a gradient: only their nodes need a VJP.
std::set<ir::ValueId> values_needing_grad(const ir::Graph& forward, const std::vector<bool>& requires_grad) {
  std::set<ir::ValueId> needing;
  for (size_t i = 0; i < forward.inputs().size(); ++i) {
    if (requires_grad[i]) needing.insert(forward.inputs()[i]);
  }
  for (const ir::Node& node : forward.nodes()) {
    bool depends = false;
    for (ir::ValueId input : node.inputs) depends = depends || needing.count(input);
    if (!depends) continue;
    for (ir::ValueId output : node.outputs) {
      if (is_floating(forward.meta(output).dtype)) needing.insert(output);
    }
  }
  return needing;
}

void accumulate(std::map<ir::ValueId, Tensor>& grads, ir::ValueId id, const Tensor& grad) {
  auto [it, inserted] = grads.emplace(id, grad);
  if (!inserted) it->second = call1(op::add(), {it->second, grad});
}

Tensor zeros_like_meta(const TensorMeta& meta) {
  return call1(op::full(), {}, {{"shape", meta.shape}, {"value", 0.0}, {"dtype", meta.dtype}});
}

}  // namespace

JointGraph build_joint(const ir::Graph& forward, const JointOptions& options) {
  std::vector<bool> requires_grad = resolve_requires_grad(forward, options);
  std::set<ir::ValueId> needing = values_needing_grad(forward, requires_grad);

  ir::Tracer tracer(forward.name() + ".joint");
  std::map<ir::ValueId, Tensor> env;
  for (ir::ValueId id : forward.inputs()) env[id] = tracer.add_input(forward.value(id).name, forward.meta(id));

  JointGraph joint;
  std::vector<Tensor> outputs;
  {
    InterceptScope scope(tracer);
    // Forward: replay every node, keeping each value's proxy for the VJPs.
    std::vector<std::vector<Tensor>> node_outputs;
    for (const ir::Node& node : forward.nodes()) {
      ir::ProvenanceScope provenance(node.provenance);
      std::vector<Tensor> inputs;
      for (ir::ValueId id : node.inputs) inputs.push_back(env.at(id));
      node_outputs.push_back(call(*node.op, inputs, node.attrs));
      for (size_t i = 0; i < node.outputs.size(); ++i) env[node.outputs[i]] = node_outputs.back()[i];
    }
    for (ir::ValueId id : forward.outputs()) outputs.push_back(env.at(id));
    joint.num_forward_outputs = outputs.size();

    // Seed: one tangent per floating forward output.
    std::map<ir::ValueId, Tensor> grads;
    for (size_t i = 0; i < forward.outputs().size(); ++i) {
      ir::ValueId id = forward.outputs()[i];
      if (!is_floating(forward.meta(id).dtype)) continue;
      if (options.tangents_only_where_needed && !needing.count(id)) continue;
      if (!options.differentiable_outputs.empty() && !options.differentiable_outputs.at(i)) continue;
      Tensor tangent = tracer.add_input("tangent." + std::to_string(i), forward.meta(id));
      joint.tangent_for_output.push_back(i);
      if (needing.count(id)) accumulate(grads, id, tangent);
    }

    // Backward: each node's VJP, in reverse order.
    const std::vector<ir::Node>& nodes = forward.nodes();
    for (size_t n = nodes.size(); n-- > 0;) {
      const ir::Node& node = nodes[n];
      std::vector<Tensor> grad_outputs;
      bool any_grad = false;
      for (ir::ValueId id : node.outputs) {
        auto it = grads.find(id);
        grad_outputs.push_back(it == grads.end() ? Tensor() : it->second);
        any_grad = any_grad || it != grads.end();
      }
      if (!any_grad) continue;
      ir::ProvenanceScope provenance(ir::Provenance{node.provenance.module_path, ir::Phase::Backward});
      std::vector<Tensor> inputs;
      for (ir::ValueId id : node.inputs) inputs.push_back(env.at(id));
      VjpContext ctx{inputs, node_outputs[n], grad_outputs, node.attrs};
      std::vector<Tensor> input_grads = vjp_of(*node.op)(ctx);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (i < input_grads.size() && input_grads[i].defined() && needing.count(node.inputs[i])) {
          accumulate(grads, node.inputs[i], input_grads[i]);
        }
      }
    }

    joint.grad_output_of_input.assign(forward.inputs().size(), -1);
    for (size_t i = 0; i < forward.inputs().size(); ++i) {
      if (!requires_grad[i]) continue;
      ir::ValueId id = forward.inputs()[i];
      auto it = grads.find(id);
      if (it == grads.end() && options.none_for_unconnected) continue;
      joint.grad_output_of_input[i] = static_cast<int64_t>(outputs.size());
      outputs.push_back(it != grads.end() ? it->second : zeros_like_meta(forward.meta(id)));
      joint.grad_of_input.push_back(i);
    }
  }
  tracer.set_outputs(outputs);
  joint.graph = tracer.finish();
  return joint;
}

}  // namespace px::autodiff
