#pragma once
// A sharding plan: one strategy per node of a built PlanProblem (builder.h), solved under a
// constraint set (constraints.h) or given by hand, priced by the problem's cost model; and its
// persistence as JSON.
//
// Cost = compute + communication: the problem's objective is the roofline seconds of every
// graph node on its local shards plus the alpha-beta seconds of every redistribution between
// them (gradients into their parameters' placements included), so the split is exact:
// compute_seconds sums the chosen strategies' PlanNode::compute_seconds, and the rest of the cost
// is communication. Both are predictions of one training step under the device profile.
//
// A saved plan records placements in graph terms (every graph input's placements, every graph
// node's strategy), which survives rebuilding the problem with other options (clustering on or
// off, another device profile: a loaded plan is priced anew) but not another model or mesh: the
// file carries a fingerprint (the graph's name and a hash of its IR text and descriptors, the
// mesh's shape and dim names) and a plan for another model or mesh is refused.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/constraints.h"
#include "parallax/plan/solver.h"

namespace px::plan {

struct ShardingPlan {
  std::string label;  // "solver", "DP", "FSDP", ...
  Choice choice;      // one strategy per node of the PlanProblem (its own indices, not a restricted problem's)
  // Cost and memory on the PlanProblem, against memory_budget (the problem's usage_limit when nullopt).
  Evaluation evaluation;
  std::optional<double> memory_budget;
  double compute_seconds = 0;
  double communication_seconds = 0;
  // How it was found: the solver that ran ("ilp", "fast", "given" for a priced choice), its wall
  // time, and for the ILP its bound and gap on the constrained problem.
  std::string solver = "given";
  double solve_seconds = 0;
  std::optional<double> bound;
  std::optional<double> gap;
  bool optimal = false;
  std::vector<std::string> notes;  // how the constraints were realized, fallbacks taken
};

// Prices a choice of the PlanProblem. ValueError for a choice of the wrong length or a strategy
// out of range.
ShardingPlan price_plan(const PlanProblem& plan, const Choice& choice, std::string label = "",
                        std::optional<double> memory_budget = std::nullopt);

// Solves the problem under the constraints. InfeasiblePlan when the constraints cannot be met
// (see apply_constraints), or when a memory budget is set and neither the solver nor the
// least-memory plan meets it (the least-memory plan is taken, with a note, when the solver's
// plan overflows but it fits), or when GradientPairing::Produced cannot be honored.
ShardingPlan solve_plan(const JointProgram& program, const PlanProblem& plan, const PlanConstraints& constraints = {},
                        const SolveOptions& options = {}, std::string label = "solver");

// What a saved plan must match.
struct PlanFingerprint {
  std::string graph;       // the graph's name
  std::string graph_hash;  // 16 hex digits: FNV-1a of the IR text and the input and output descriptors
  int64_t inputs = 0;      // graph inputs
  int64_t nodes = 0;       // graph nodes
  std::vector<int64_t> mesh;
  std::vector<std::string> mesh_dims;
  std::string str() const;  // "graph 'llama' (hash 0123456789abcdef, 24 inputs, 812 nodes) on mesh [8, 8]"
  friend bool operator==(const PlanFingerprint&, const PlanFingerprint&) = default;
};
PlanFingerprint fingerprint(const JointProgram& program, const PlanProblem& plan);

// {"format": "parallax-plan", "version": 1, "fingerprint": {...}, "label", "device", "cost",
//  "compute_seconds", "communication_seconds", "peak_bytes", "solver", "inputs": [{"name",
//  "placements"}], "nodes": [{"name", "inputs": [...], "outputs": [...]}]}: placements as text,
// "[S(0), R]".
std::string plan_to_json(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding);
// The plan in `json_text` on this problem, priced anew. ValueError naming both fingerprints when
// it was made for another model or mesh; ParseError with the line, column and JSON path of the entry
// ("plan.nodes[3].inputs[0]") for malformed text, a strategy this problem does not have, or repeated
// layers given different strategies in a problem that clusters them.
ShardingPlan plan_from_json(const JointProgram& program, const PlanProblem& plan, const std::string& json_text,
                            std::optional<double> memory_budget = std::nullopt);
// Files (".gz": gzip-compressed).
void save_plan(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding,
               const std::string& path);
ShardingPlan load_plan(const JointProgram& program, const PlanProblem& plan, const std::string& path,
                       std::optional<double> memory_budget = std::nullopt);

}  // namespace px::plan
