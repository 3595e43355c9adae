#include "parallax/ir/interpreter.h"

#include <map>

#include "parallax/core/error.h"
#include "parallax/ir/printer.h"
#include "parallax/ops/dispatch.h"

namespace px::ir {

namespace {

std::string input_label(const Graph& graph, size_t index) {
  ValueId id = graph.inputs()[index];
  const std::string& name = graph.value(id).name;
  std::string quoted_name = name.empty() ? "" : " \"" + name + "\"";
  return "input " + std::to_string(index) + " (%" + std::to_string(id) + quoted_name + ")";
}

void check_inputs(const Graph& graph, const std::vector<Tensor>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    throw ValueError("interpret: graph '" + graph.name() + "' takes " + std::to_string(graph.inputs().size()) +
                     " inputs, got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ValueError("interpret: graph '" + graph.name() + "' " + input_label(graph, i) + " is undefined");
    }
    const TensorMeta& expected = graph.meta(graph.inputs()[i]);
    if (inputs[i].meta_info() != expected) {
      throw ValueError("interpret: graph '" + graph.name() + "' " + input_label(graph, i) + " expects " +
                       expected.str() + ", got " + inputs[i].meta_info().str());
    }
  }
}

// For each value, the index of the last node that reads it; graph outputs live to the end.
std::map<ValueId, size_t> last_uses(const Graph& graph) {
  std::map<ValueId, size_t> last;
  for (size_t index = 0; index < graph.nodes().size(); ++index) {
    for (ValueId input : graph.nodes()[index].inputs) last[input] = index;
  }
  for (ValueId output : graph.outputs()) last[output] = graph.nodes().size();
  return last;
}

void check_outputs(const Graph& graph, const Node& node, const std::vector<Tensor>& results) {
  bool ok = results.size() == node.outputs.size();
  for (size_t i = 0; ok && i < results.size(); ++i) ok = results[i].meta_info() == graph.meta(node.outputs[i]);
  if (ok) return;
  std::string got;
  for (size_t i = 0; i < results.size(); ++i) got += (i ? ", " : "") + results[i].meta_info().str();
  throw ValueError("interpret: " + node_label(node) + " produced " + got + ", which differs from the graph's " +
                   "recorded types (run verify() on the graph)");
}

std::string missing(ValueId id) {
  return "%" + std::to_string(id) + ", which has no value (run verify() on the graph)";
}

}  // namespace

std::vector<Tensor> interpret(const Graph& graph, const std::vector<Tensor>& inputs) {
  check_inputs(graph, inputs);
  std::map<ValueId, size_t> last = last_uses(graph);
  std::map<ValueId, Tensor> live;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (last.count(graph.inputs()[i])) live[graph.inputs()[i]] = inputs[i];
  }
  for (size_t index = 0; index < graph.nodes().size(); ++index) {
    const Node& node = graph.nodes()[index];
    if (!node.op) throw ValueError("interpret: " + node_label(node) + " has no op (run verify() on the graph)");
    std::vector<Tensor> args;
    args.reserve(node.inputs.size());
    for (ValueId input : node.inputs) {
      auto it = live.find(input);
      if (it == live.end()) throw ValueError("interpret: " + node_label(node) + " reads " + missing(input));
      args.push_back(it->second);
    }
    std::vector<Tensor> results = call(*node.op, args, node.attrs);
    check_outputs(graph, node, results);
    args.clear();
    for (ValueId input : node.inputs) {
      auto it = last.find(input);
      if (it != last.end() && it->second == index) live.erase(input);
    }
    for (size_t i = 0; i < results.size(); ++i) {
      if (last.count(node.outputs[i])) live[node.outputs[i]] = std::move(results[i]);
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(graph.outputs().size());
  for (ValueId output : graph.outputs()) {
    auto it = live.find(output);
    if (it == live.end()) throw ValueError("interpret: graph '" + graph.name() + "' returns " + missing(output));
    outputs.push_back(it->second);
  }
  return outputs;
}

}  // namespace px::ir
