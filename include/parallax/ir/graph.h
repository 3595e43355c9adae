#pragma once
// The graph IR: a typed SSA program over registered ops.
//
// A Graph has named inputs, a list of nodes in topological order and a list of
// outputs. Every value is defined exactly once (as a graph input or as a node
// output), carries its TensorMeta, and keeps its id for the graph's lifetime:
// passes rewire and erase, they never renumber. A node holds its OpDef (so
// every transform asks the op for its facets), its input and output value ids,
// its attributes (complete, in schema order) and its provenance.
//
// The builder methods (add_input, add_node, set_outputs) keep the graph valid.
// The low-level methods (new_value, mutable_nodes, ...) do not check anything:
// the parser and passes use them, and verify() (verifier.h) checks the result.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/core/shape.h"
#include "parallax/ops/attrs.h"
#include "parallax/ops/op_def.h"

namespace px::ir {

using ValueId = int64_t;

// Which part of a training step a node belongs to.
enum class Phase : uint8_t { Forward, Backward, Optimizer };

std::string_view phase_name(Phase phase);  // "forward", "backward", "optimizer"
// Inverse of phase_name; nullopt for anything else.
std::optional<Phase> parse_phase(std::string_view name);

// Where a node came from: the module path ("layers.0.mlp") and the phase.
struct Provenance {
  std::string module_path;
  Phase phase = Phase::Forward;

  bool empty() const { return module_path.empty() && phase == Phase::Forward; }
  friend bool operator==(const Provenance&, const Provenance&) = default;
};

struct Value {
  TensorMeta meta;
  std::string name;  // debug name ("x", "layers.0.weight"); may be empty
};

struct Node {
  const OpDef* op = nullptr;
  std::vector<ValueId> inputs;
  Attrs attrs;
  std::vector<ValueId> outputs;
  Provenance provenance;
};

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // --- builders: keep the graph valid ---
  // A new graph input.
  ValueId add_input(std::string name, TensorMeta meta);
  // Appends a node; output metas come from the op's inference, attributes are
  // checked and completed with defaults. Throws (ShapeError, ValueError, ...) on a bad call.
  std::vector<ValueId> add_node(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs = {},
                                Provenance provenance = {});
  // Same, for a single-output op; returns its output.
  ValueId add_node1(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs = {}, Provenance provenance = {});
  // Graph outputs; each must name an existing value.
  void set_outputs(std::vector<ValueId> outputs);

  // --- access ---
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  bool has_value(ValueId id) const { return values_.count(id) != 0; }
  // Throws ValueError naming the id when absent.
  const Value& value(ValueId id) const;
  Value& value(ValueId id);
  const TensorMeta& meta(ValueId id) const { return value(id).meta; }
  // Every value in the table, by id.
  const std::map<ValueId, Value>& values() const { return values_; }
  // For each value id, the indices (into nodes()) of the nodes that read it, in order;
  // a node that reads a value twice is listed twice. Values with no users are absent.
  std::map<ValueId, std::vector<size_t>> users() const;

  // --- low level: no checks; verify() afterwards ---
  // A value in the table with a fresh id (or the given one, which must be unused).
  ValueId new_value(TensorMeta meta, std::string name = "", std::optional<ValueId> id = std::nullopt);
  void erase_value(ValueId id);
  std::vector<ValueId>& mutable_inputs() { return inputs_; }
  std::vector<ValueId>& mutable_outputs() { return outputs_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  // Rewrites every use of `from` (node inputs and graph outputs) to read `to`.
  void replace_all_uses(ValueId from, ValueId to);
  // Removes the nodes whose flag is set, and their output values.
  void erase_nodes(const std::vector<bool>& erase);

  // The IR text (printer.h).
  std::string str() const;

 private:
  // Output metas of `op` on `inputs`; completes `attrs` with defaults. Throws on a bad call.
  std::vector<TensorMeta> check_node(const OpDef& op, const std::vector<ValueId>& inputs, Attrs& attrs) const;
  std::vector<ValueId> append_node(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs,
                                   std::vector<TensorMeta> output_metas, Provenance provenance);

  std::string name_;
  std::map<ValueId, Value> values_;  // ordered: deterministic iteration
  ValueId next_id_ = 0;
  std::vector<ValueId> inputs_;
  std::vector<Node> nodes_;
  std::vector<ValueId> outputs_;
};

std::ostream& operator<<(std::ostream& os, const Graph& graph);

}  // namespace px::ir
