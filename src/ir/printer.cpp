#include "parallax/ir/printer.h"

#include <cctype>

namespace px::ir {

namespace {

std::string quoted(const std::string& text) { return attr_value_str(AttrValue(text)); }

bool is_identifier(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string value_list(const std::vector<ValueId>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", %" : "%") + std::to_string(ids[i]);
  return out;
}

// "f32[8,4]" or "f32[8,4] \"x\""; a value missing from the table (a broken graph) prints as "?".
std::string typed(const Graph& graph, ValueId id) {
  if (!graph.has_value(id)) return "?";
  const Value& value = graph.value(id);
  std::string out = value.meta.str();
  if (!value.name.empty()) out += " " + quoted(value.name);
  return out;
}

std::string provenance_suffix(const Provenance& provenance) {
  if (provenance.empty()) return "";
  return " @ " + quoted(provenance.module_path) + " " + std::string(phase_name(provenance.phase));
}

std::string op_name(const Node& node) { return node.op ? node.op->name : "<no op>"; }

}  // namespace

std::string print_node(const Graph& graph, const Node& node) {
  std::string out = value_list(node.outputs) + " = " + op_name(node) + "(" + value_list(node.inputs) + ")";
  if (!node.attrs.empty()) out += " " + node.attrs.str();
  out += " : ";
  for (size_t i = 0; i < node.outputs.size(); ++i) out += (i ? ", " : "") + typed(graph, node.outputs[i]);
  return out + provenance_suffix(node.provenance);
}

std::string node_label(const Node& node) {
  std::string out = value_list(node.outputs) + " = " + op_name(node) + "(" + value_list(node.inputs) + ")";
  if (!node.attrs.empty()) out += " " + node.attrs.str();
  if (!node.provenance.empty()) {
    out += " [" + node.provenance.module_path + ", " + std::string(phase_name(node.provenance.phase)) + "]";
  }
  return out;
}

std::string print(const Graph& graph) {
  std::string out = "graph " + (is_identifier(graph.name()) ? graph.name() : quoted(graph.name())) + "(";
  const std::vector<ValueId>& inputs = graph.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    out += (i ? ", %" : "%") + std::to_string(inputs[i]) + ": " + typed(graph, inputs[i]);
  }
  out += ") {\n";
  for (const Node& node : graph.nodes()) out += "  " + print_node(graph, node) + "\n";
  out += "  return";
  if (!graph.outputs().empty()) out += " " + value_list(graph.outputs());
  return out + "\n}\n";
}

std::string Graph::str() const { return print(*this); }

}  // namespace px::ir
