#include "parallax/ir/graph.h"

#include <algorithm>
#include <limits>
#include <ostream>

#include "ir/op_schema.h"
#include "parallax/core/error.h"

namespace px::ir {

std::string_view phase_name(Phase phase) {
  switch (phase) {
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::Optimizer:
      return "optimizer";
  }
  return "?";
}

std::optional<Phase> parse_phase(std::string_view name) {
  for (Phase phase : {Phase::Forward, Phase::Backward, Phase::Optimizer}) {
    if (phase_name(phase) == name) return phase;
  }
  return std::nullopt;
}

ValueId Graph::add_input(std::string name, TensorMeta meta) {
  ValueId id = new_value(std::move(meta), std::move(name));
  inputs_.push_back(id);
  return id;
}

std::vector<TensorMeta> Graph::check_node(const OpDef& op, const std::vector<ValueId>& inputs, Attrs& attrs) const {
  std::vector<TensorMeta> input_metas;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!has_value(inputs[i])) {
      throw ValueError(op.name + ": input " + std::to_string(i) + " is %" + std::to_string(inputs[i]) +
                       ", which is not a value of graph '" + name_ + "'");
    }
    input_metas.push_back(meta(inputs[i]));
  }
  attrs = detail::complete_attrs(op, input_metas, attrs);
  return op.infer(input_metas, attrs);
}

std::vector<ValueId> Graph::append_node(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs,
                                        std::vector<TensorMeta> output_metas, Provenance provenance) {
  Node node{&op, std::move(inputs), std::move(attrs), {}, std::move(provenance)};
  for (TensorMeta& output : output_metas) node.outputs.push_back(new_value(std::move(output)));
  nodes_.push_back(std::move(node));
  return nodes_.back().outputs;
}

std::vector<ValueId> Graph::add_node(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs, Provenance provenance) {
  std::vector<TensorMeta> output_metas = check_node(op, inputs, attrs);
  return append_node(op, std::move(inputs), std::move(attrs), std::move(output_metas), std::move(provenance));
}

ValueId Graph::add_node1(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs, Provenance provenance) {
  std::vector<TensorMeta> output_metas = check_node(op, inputs, attrs);
  if (output_metas.size() != 1) {
    throw ValueError(op.name + " returns " + std::to_string(output_metas.size()) + " values; use add_node");
  }
  return append_node(op, std::move(inputs), std::move(attrs), std::move(output_metas), std::move(provenance))[0];
}

void Graph::set_outputs(std::vector<ValueId> outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!has_value(outputs[i])) {
      throw ValueError("graph '" + name_ + "': output " + std::to_string(i) + " is %" + std::to_string(outputs[i]) +
                       ", which is not a value of this graph");
    }
  }
  outputs_ = std::move(outputs);
}

const Value& Graph::value(ValueId id) const {
  auto it = values_.find(id);
  if (it == values_.end()) {
    throw ValueError("graph '" + name_ + "' has no value %" + std::to_string(id));
  }
  return it->second;
}

Value& Graph::value(ValueId id) { return const_cast<Value&>(static_cast<const Graph&>(*this).value(id)); }

std::map<ValueId, std::vector<size_t>> Graph::users() const {
  std::map<ValueId, std::vector<size_t>> users;
  for (size_t index = 0; index < nodes_.size(); ++index) {
    for (ValueId input : nodes_[index].inputs) users[input].push_back(index);
  }
  return users;
}

ValueId Graph::new_value(TensorMeta meta, std::string name, std::optional<ValueId> id) {
  ValueId chosen = id.value_or(next_id_);
  if (chosen < 0 || chosen == std::numeric_limits<ValueId>::max()) {
    throw ValueError("graph '" + name_ + "': value id %" + std::to_string(chosen) + " is out of range");
  }
  if (values_.count(chosen)) {
    throw ValueError("graph '" + name_ + "': value id %" + std::to_string(chosen) + " is already in use");
  }
  values_.emplace(chosen, Value{std::move(meta), std::move(name)});
  next_id_ = std::max(next_id_, chosen + 1);
  return chosen;
}

void Graph::erase_value(ValueId id) { values_.erase(id); }

void Graph::replace_all_uses(ValueId from, ValueId to) {
  for (Node& node : nodes_) {
    for (ValueId& input : node.inputs) {
      if (input == from) input = to;
    }
  }
  for (ValueId& output : outputs_) {
    if (output == from) output = to;
  }
}

void Graph::erase_nodes(const std::vector<bool>& erase) {
  PX_ASSERT(erase.size() == nodes_.size() && "one flag per node");
  std::vector<Node> kept;
  kept.reserve(nodes_.size());
  for (size_t index = 0; index < nodes_.size(); ++index) {
    if (!erase[index]) {
      kept.push_back(std::move(nodes_[index]));
      continue;
    }
    for (ValueId output : nodes_[index].outputs) erase_value(output);
  }
  nodes_ = std::move(kept);
}

std::ostream& operator<<(std::ostream& os, const Graph& graph) { return os << graph.str(); }

}  // namespace px::ir
