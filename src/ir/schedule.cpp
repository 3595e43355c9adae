#include "parallax/ir/schedule.h"

#include <algorithm>
#include <unordered_map>

#include "parallax/core/error.h"
#include "parallax/ir/printer.h"

namespace px::ir {

namespace {

std::string input_label(const Graph& graph, size_t index) {
  ValueId id = graph.inputs()[index];
  const std::string& name = graph.value(id).name;
  std::string quoted_name = name.empty() ? "" : " \"" + name + "\"";
  return "input " + std::to_string(index) + " (%" + std::to_string(id) + quoted_name + ")";
}

std::string missing(ValueId id) {
  return "%" + std::to_string(id) + ", which no input or earlier node defines (run verify() on the graph)";
}

}  // namespace

std::string run_context(const Graph& graph, const std::string& who) { return who + ": graph '" + graph.name() + "'"; }

Schedule make_schedule(const Graph& graph, const std::string& who) {
  const std::vector<Node>& nodes = graph.nodes();
  const auto end = static_cast<int64_t>(nodes.size());
  // The last reader of each value; graph outputs are read "after" every node.
  std::unordered_map<ValueId, int64_t> last;
  for (int64_t index = 0; index < end; ++index) {
    for (ValueId input : nodes[static_cast<size_t>(index)].inputs) last[input] = index;
  }
  for (ValueId output : graph.outputs()) last[output] = end;

  // Only values someone reads get a slot; the rest are dropped as soon as they are made.
  Schedule schedule;
  std::unordered_map<ValueId, int64_t> slot_of;
  auto define = [&](ValueId id) -> int64_t {
    if (!last.count(id)) return -1;
    auto [it, inserted] = slot_of.emplace(id, schedule.num_slots);
    if (inserted) ++schedule.num_slots;
    return it->second;
  };
  for (ValueId input : graph.inputs()) schedule.input_slots.push_back(define(input));
  schedule.steps.resize(nodes.size());
  for (int64_t index = 0; index < end; ++index) {
    const Node& node = nodes[static_cast<size_t>(index)];
    Schedule::Step& step = schedule.steps[static_cast<size_t>(index)];
    if (!node.op) throw ValueError(run_context(graph, who) + ": " + node_label(node) + " has no op");
    for (ValueId input : node.inputs) {
      auto it = slot_of.find(input);
      if (it == slot_of.end()) {
        throw ValueError(run_context(graph, who) + ": " + node_label(node) + " reads " + missing(input));
      }
      step.inputs.push_back(it->second);
      if (last.at(input) == index &&
          std::find(step.release.begin(), step.release.end(), it->second) == step.release.end()) {
        step.release.push_back(it->second);
      }
    }
    for (ValueId output : node.outputs) step.outputs.push_back(define(output));
  }
  for (ValueId output : graph.outputs()) {
    auto it = slot_of.find(output);
    if (it == slot_of.end()) throw ValueError(run_context(graph, who) + " returns " + missing(output));
    schedule.output_slots.push_back(it->second);
  }
  return schedule;
}

void check_run_inputs(const Graph& graph, const std::vector<Tensor>& inputs, const std::string& who) {
  if (inputs.size() != graph.inputs().size()) {
    throw ValueError(run_context(graph, who) + " takes " + std::to_string(graph.inputs().size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw ValueError(run_context(graph, who) + " " + input_label(graph, i) + " is undefined");
    const TensorMeta& expected = graph.meta(graph.inputs()[i]);
    if (inputs[i].meta_info() != expected) {
      throw ValueError(run_context(graph, who) + " " + input_label(graph, i) + " expects " + expected.str() + ", got " +
                       inputs[i].meta_info().str());
    }
  }
}

void check_node_results(const Graph& graph, const Node& node, const std::vector<Tensor>& results,
                        const std::string& who) {
  bool ok = results.size() == node.outputs.size();
  for (size_t i = 0; ok && i < results.size(); ++i) ok = results[i].meta_info() == graph.meta(node.outputs[i]);
  if (ok) return;
  std::string got;
  for (size_t i = 0; i < results.size(); ++i) got += (i ? ", " : "") + results[i].meta_info().str();
  throw ValueError(run_context(graph, who) + ": " + node_label(node) + " produced " + got +
                   ", which differs from the graph's recorded types (run verify() on the graph)");
}

}  // namespace px::ir
