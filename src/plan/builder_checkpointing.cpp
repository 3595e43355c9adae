// Activation checkpointing as strategies of the sharding problem (see plan/builder.h): each
// candidate node may keep its outputs for the backward or recompute them there, and the solver
// picks that with its placement, under the memory budget.

#include <algorithm>
#include <map>

#include "parallax/core/error.h"
#include "plan/builder_internal.h"

namespace px::plan {

std::string_view checkpointing_name(Checkpointing policy) {
  switch (policy) {
    case Checkpointing::None:
      return "none";
    case Checkpointing::Selective:
      return "selective";
    case Checkpointing::Full:
      return "full";
    case Checkpointing::Auto:
      return "auto";
  }
  return "?";
}

Checkpointing parse_checkpointing(std::string_view name) {
  for (Checkpointing policy :
       {Checkpointing::None, Checkpointing::Selective, Checkpointing::Full, Checkpointing::Auto}) {
    if (name == checkpointing_name(policy)) return policy;
  }
  throw ValueError("activation checkpointing: '" + std::string(name) +
                   "' is not a policy (none, selective, full or auto)");
}

namespace detail {

namespace {

// Who reads a node's outputs (through views too), in real time steps (node n is step n + 1).
struct Readers {
  int64_t forward_end = 0;           // one past the last forward reader
  int64_t backward_first = -1;       // the first backward reader (-1: none)
  int64_t backward_end = 0;          // one past the last backward reader
  bool read_by_other_layer = false;  // a forward reader outside the node's layer
  bool graph_output = false;
};

std::vector<Readers> find_readers(const ir::Graph& graph, const Clustering& clustering) {
  const auto& nodes = graph.nodes();
  std::map<ir::ValueId, int64_t> storage_of;  // value -> the node whose storage it is
  for (size_t n = 0; n < nodes.size(); ++n) {
    const ir::Node& node = nodes[n];
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      auto base =
          o == 0 && node.op->traits.view && !node.inputs.empty() ? storage_of.find(node.inputs[0]) : storage_of.end();
      storage_of[node.outputs[o]] = base != storage_of.end() ? base->second : static_cast<int64_t>(n);
    }
  }
  std::vector<Readers> readers(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    const auto step = static_cast<int64_t>(n) + 1;
    const bool backward = nodes[n].provenance.phase != ir::Phase::Forward;
    for (ir::ValueId input : nodes[n].inputs) {
      auto found = storage_of.find(input);
      if (found == storage_of.end()) continue;
      Readers& of = readers[static_cast<size_t>(found->second)];
      if (backward) {
        if (of.backward_first < 0) of.backward_first = step;
        of.backward_end = std::max(of.backward_end, step + 1);
      } else {
        of.forward_end = std::max(of.forward_end, step + 1);
        of.read_by_other_layer = of.read_by_other_layer ||
                                 clustering.node_layer[n] != clustering.node_layer[static_cast<size_t>(found->second)];
      }
    }
  }
  for (ir::ValueId output : graph.outputs()) {
    auto found = storage_of.find(output);
    if (found != storage_of.end()) readers[static_cast<size_t>(found->second)].graph_output = true;
  }
  return readers;
}

}  // namespace

void add_recompute_strategies(PlanProblem& plan, const JointProgram& program, const Clustering& clustering) {
  const Checkpointing policy = plan.options.checkpointing;
  if (policy == Checkpointing::None) return;
  const ir::Graph& graph = program.graph;
  const std::vector<Readers> readers = find_readers(graph, clustering);
  for (PlanNode& node : plan.nodes) {
    if (node.kind != PlanNode::Kind::Op || node.members.size() < 2) continue;
    const auto rep = static_cast<size_t>(node.members.front());
    const ir::Node& op = graph.nodes()[rep];
    const Readers& read = readers[rep];
    if (op.provenance.phase != ir::Phase::Forward || op.op->traits.view || read.backward_first < 0 ||
        read.graph_output) {
      continue;
    }
    const bool keep_only = (policy == Checkpointing::Selective && op.op->traits.matmul_like) ||
                           (policy == Checkpointing::Full && read.read_by_other_layer);
    if (keep_only) {
      node.recompute.assign(node.strategies.size(), false);  // a candidate the policy keeps
      continue;
    }
    std::vector<std::pair<int64_t, int64_t>> intervals;
    for (int64_t member : node.members) {
      const Readers& of = readers[static_cast<size_t>(member)];
      intervals.emplace_back(member + 1, std::max(of.forward_end, member + 2));
      if (of.backward_first >= 0) intervals.emplace_back(of.backward_first, of.backward_end);
    }
    node.recompute_copies = std::max<int64_t>(1, max_overlap(intervals));
    const size_t count = node.strategies.size();
    std::vector<double> recomputed(node.compute_seconds);
    for (double& seconds : recomputed) seconds *= 2;  // forward, then again in the backward
    if (policy == Checkpointing::Auto) {
      const std::vector<NdStrategy> strategies = node.strategies;
      const std::vector<double> bytes = node.local_bytes;
      node.strategies.insert(node.strategies.end(), strategies.begin(), strategies.end());
      node.compute_seconds.insert(node.compute_seconds.end(), recomputed.begin(), recomputed.end());
      node.local_bytes.insert(node.local_bytes.end(), bytes.begin(), bytes.end());
      node.recompute.assign(count, false);
      node.recompute.resize(2 * count, true);
    } else {
      node.compute_seconds = std::move(recomputed);
      node.recompute.assign(count, true);
    }
  }
}

}  // namespace detail
}  // namespace px::plan
