#include "parallax/ir/verifier.h"

#include <set>

#include "ir/op_schema.h"
#include "parallax/core/error.h"
#include "parallax/ir/printer.h"

namespace px::ir {

namespace {

std::string ref(ValueId id) { return "%" + std::to_string(id); }

std::string metas_str(const std::vector<TensorMeta>& metas) {
  std::string out;
  for (size_t i = 0; i < metas.size(); ++i) out += (i ? ", " : "") + metas[i].str();
  return out;
}

class Verifier {
 public:
  explicit Verifier(const Graph& graph) : graph_(graph) {
    for (const Node& node : graph.nodes()) {
      for (ValueId output : node.outputs) defined_later_.insert(output);
    }
  }

  std::vector<std::string> run() {
    for (ValueId input : graph_.inputs()) define(input, "graph input " + ref(input));
    for (const Node& node : graph_.nodes()) check_node(node);
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      ValueId output = graph_.outputs()[i];
      if (!defined_.count(output)) {
        errors_.push_back("return: output " + std::to_string(i) + " is " + ref(output) + ", which is never defined");
      }
    }
    for (const auto& [id, value] : graph_.values()) {
      if (!defined_.count(id)) {
        errors_.push_back("value table: " + ref(id) + " (" + value.meta.str() + ") is defined by no input or node");
      }
    }
    return std::move(errors_);
  }

 private:
  void define(ValueId id, const std::string& where) {
    if (!defined_.insert(id).second) errors_.push_back(where + ": redefines " + ref(id));
    if (!graph_.has_value(id)) errors_.push_back(where + ": " + ref(id) + " has no recorded type");
  }

  // False if some input is not (yet) defined; records why.
  bool check_uses(const Node& node, const std::string& label) {
    bool ok = true;
    for (ValueId input : node.inputs) {
      if (defined_.count(input)) continue;
      ok = false;
      errors_.push_back(label + ": " + ref(input) +
                        (defined_later_.count(input) ? " is used before its definition" : " is undefined"));
    }
    return ok;
  }

  void check_node(const Node& node) {
    std::string label = node_label(node);
    if (!node.op) {
      errors_.push_back(label + ": the node has no op");
    } else if (check_uses(node, label)) {
      check_against_op(node, label);
    }
    for (ValueId output : node.outputs) define(output, label);
  }

  void check_against_op(const Node& node, const std::string& label) {
    const OpDef& op = *node.op;
    std::vector<TensorMeta> input_metas;
    for (ValueId input : node.inputs) input_metas.push_back(graph_.meta(input));
    std::vector<TensorMeta> inferred;
    try {
      Attrs filled = detail::complete_attrs(op, input_metas, node.attrs);
      if (!(filled == node.attrs)) {
        errors_.push_back(label + ": attributes must be complete and in schema order: " + filled.str());
      }
      inferred = op.infer(input_metas, filled);
    } catch (const Error& error) {
      errors_.push_back(label + ": " + error.what());
      return;
    }
    std::vector<TensorMeta> recorded;
    for (ValueId output : node.outputs) {
      if (!graph_.has_value(output)) return;  // reported by define()
      recorded.push_back(graph_.meta(output));
    }
    if (inferred != recorded) {
      errors_.push_back(label + ": inferred " + metas_str(inferred) + ", recorded " + metas_str(recorded));
    }
  }

  const Graph& graph_;
  std::set<ValueId> defined_;
  std::set<ValueId> defined_later_;  // defined by some node: tells "used too early" from "undefined"
  std::vector<std::string> errors_;
};

}  // namespace

std::vector<std::string> verify_errors(const Graph& graph) { return Verifier(graph).run(); }

void verify(const Graph& graph, const std::string& context) {
  std::vector<std::string> errors = verify_errors(graph);
  if (errors.empty()) return;
  std::string message = context.empty() ? "" : context + ": ";
  message +=
      "graph '" + graph.name() + "' has " + std::to_string(errors.size()) + (errors.size() == 1 ? " error" : " errors");
  for (const std::string& error : errors) message += "\n  " + error;
  throw VerifyError(message);
}

}  // namespace px::ir
