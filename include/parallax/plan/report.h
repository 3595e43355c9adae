#pragma once
// What a sharding plan does, in the terms users read: where each parameter lives, which
// collectives run and how much they move, the predicted step time split into compute and
// communication, and the peak memory per device; and explain(), why a node got its strategy.
//
// Collectives are found by walking every transfer of the real (unclustered) graph under the
// plan's placements (each graph node reads its inputs in its strategy's placements; each
// parameter's gradient goes to the parameter's placement) and planning each move with
// plan_redistribute on the problem's topology: the same moves and prices the problem's edges
// hold, counted per layer. Their seconds add up to the plan's communication time.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/constraints.h"
#include "parallax/plan/plan.h"

namespace px::plan {

struct ParameterRow {
  int64_t input = 0;  // graph input index
  std::string name;   // canonical fqn
  TensorMeta meta;
  std::vector<Placement> placements;
  double share = 1;        // parameter_share: its bytes per device over its full size
  double local_bytes = 0;  // the largest shard
  double state_bytes = 0;  // per device: the shard with its gradient and optimizer states
  // Per step, the collectives that move it (or a value made from it alone: its cast to the compute
  // dtype, a view) to its readers and its gradient back to it; filled by make_report.
  double communication_seconds = 0;
  double communication_bytes = 0;
};

struct CollectiveRow {
  std::string kind;  // redistribute_kind_name: "all_gather", "all_reduce", "reduce_scatter", "all_to_all"
  int64_t mesh_dim = 0;
  int64_t count = 0;  // collectives per training step
  double bytes = 0;   // summed as comm_cost.h counts them
  double seconds = 0;
};

struct MemoryBreakdown {
  double peak_bytes = 0;  // per device (the largest shards): predicted_peak (builder.h)
  int64_t peak_step = 0;  // a problem time step where it is reached
  // The peak the memory budget is checked against (the problem's usages: every gradient held for
  // the whole step); at least peak_bytes.
  double budget_check_bytes = 0;
  std::string peak_at;           // what runs then: "linear @model.layers.0.attention.wq (forward)"
  double parameter_bytes = 0;    // at the peak: parameters with their optimizer states and the gradients made so far
  double other_input_bytes = 0;  // at the peak: user inputs, buffers, tangents
  double activation_bytes = 0;   // at the peak: graph node outputs
  std::optional<double> budget;
  double capacity_bytes = 0;  // the device's
};

// Activation checkpointing in one set of identical layers: what each layer keeps for the
// backward and what it recomputes there, and what that saves and costs for the whole set.
struct CheckpointRow {
  std::string layers;                   // "model.layers x32"
  std::vector<std::string> recomputed;  // "silu @feed_forward", ... (one layer's nodes, graph order)
  int64_t kept = 0;                     // candidates kept
  double bytes_saved = 0;               // per device, held less at the start of the backward
  double seconds_added = 0;             // per step: the recomputation and the transfers into it
};

struct PlanReport {
  std::string label;
  double step_seconds = 0;  // the cost
  double compute_seconds = 0;
  double communication_seconds = 0;
  MemoryBreakdown memory;
  std::vector<ParameterRow> parameters;
  std::vector<CollectiveRow> collectives;    // by kind and mesh dim, the most seconds first
  std::vector<CheckpointRow> checkpointing;  // per layer group with candidates (empty: no checkpointing)
  std::vector<std::string> notes;
};

std::vector<ParameterRow> parameter_table(const JointProgram& program, const PlanProblem& plan,
                                          const ShardingPlan& sharding);
std::vector<CollectiveRow> collectives(const JointProgram& program, const PlanProblem& plan,
                                       const ShardingPlan& sharding);
// Fills the rows' communication_seconds and communication_bytes.
void add_parameter_communication(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding,
                                 std::vector<ParameterRow>& rows);
MemoryBreakdown memory_breakdown(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding);
// Per layer group, the plan's activation checkpointing (plan/builder.h): empty when the problem
// was built with Checkpointing::None.
std::vector<CheckpointRow> checkpointing_table(const JointProgram& program, const PlanProblem& plan,
                                               const ShardingPlan& sharding);
PlanReport make_report(const JointProgram& program, const PlanProblem& plan, const ShardingPlan& sharding);

// The report as text: a summary line, the time split, memory, collectives and the parameter table
// (`max_parameters` rows at most; 0: all).
std::string format_report(const PlanReport& report, size_t max_parameters = 0);
// One line per plan: label, step time, compute, communication, peak memory, and the ratio to the
// first plan's step time (the solver's, printed next to the baselines).
std::string format_comparison(const std::vector<PlanReport>& reports);
// Two plans of the same program in words: the time and memory each spends, then, per parameter
// group placed differently (one line for the layers of a repeated stack), where each plan puts it,
// what it holds per device and what its collectives cost per step; then the collectives that
// differ by kind and mesh dim. `mesh` names the dims. Both reports need their parameter tables.
std::string format_difference(const PlanReport& ours, const PlanReport& theirs, const dist::DeviceMesh& mesh);

// explain(): the chosen strategy of one problem node against its alternatives, each priced by
// changing that node alone (every other node keeps its strategy): its own cost (compute plus
// folded transfers), the transfers on its edges, the usage, and whether the plan would still
// fit its memory budget.
struct StrategyCost {
  int64_t strategy = 0;
  std::string name;
  double node_seconds = 0;   // the node's own cost
  double edge_seconds = 0;   // its edges' cost, neighbours as chosen
  double total_seconds = 0;  // node + edges
  double delta_seconds = 0;  // the plan's cost change against the chosen strategy
  double usage = 0;          // per device, times live copies
  bool fits = true;          // the changed plan meets the memory budget
  bool allowed = true;       // not cut by the constraints (when they were given)
  bool chosen = false;
};

struct Explanation {
  int64_t node = 0;
  std::string name;
  int64_t members = 1;                   // graph inputs or nodes sharing the decision
  std::vector<StrategyCost> strategies;  // the chosen first, then by total_seconds
  std::string str(size_t max_rows = 12) const;
};

// ValueError for a node out of range. `constraints` (optional): marks strategies it cut.
Explanation explain(const PlanProblem& plan, const ShardingPlan& sharding, int64_t node,
                    const ConstrainedProblem* constraints = nullptr);
// The problem node named `name`: a graph input's name (as input_index takes it), else a problem
// node whose name is `name` or contains it exactly once among all nodes. ValueError listing the
// candidates when none or several match.
int64_t find_plan_node(const JointProgram& program, const PlanProblem& plan, std::string_view name);

}  // namespace px::plan
