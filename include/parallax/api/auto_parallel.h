#pragma once
// The AutoParallel API, named after PyTorch's so that its users feel at home:
//
//   AutoParallel ap(model, input_fn, mesh, options);   // capture on the inputs input_fn() gives
//   ap.add_parameter_memory_constraint(0, 1.0 / 8);     // (meta tensors are fine: nothing runs)
//   ap.add_input_constraints({pattern_for_tokens, pattern_for_targets});
//   plan::ShardingPlan plan = ap.optimize_placement();  // or optimize_placement(groups): rank 0
//                                                       // solves and broadcasts
//   ParallelModule module = ap.apply_placement(plan, groups);  // on each rank
//   module.train_step(tokens, targets);
//
// One-call form: auto_parallel(model, groups, sample_inputs, out_shardings, options).
//
// Every rank may build its own AutoParallel (capture and the problem are deterministic); a plan
// solved on one rank, or loaded from JSON, applies on all of them: its fingerprint (the joint
// graph's hash and the mesh) is checked on every rank.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/capture/capture.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/plan/baselines.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/constraints.h"
#include "parallax/plan/plan.h"
#include "parallax/plan/report.h"
#include "parallax/plan/solver.h"
#include "parallax/runtime/parallel_module.h"

namespace px {

struct AutoParallelOptions {
  // Device profile (this machine's CPU), clustering, and the mixed-precision policy, which the
  // capture applies too (plan.precision).
  plan::PlanOptions plan = default_plan_options();
  plan::SolveOptions solve;
  TrainOptions train;
  static plan::PlanOptions default_plan_options();
};

class AutoParallel {
 public:
  // `input_fn()` returns a tuple of forward's arguments (global shapes; meta tensors are fine).
  template <class Model, class InputFn>
  requires std::is_base_of_v<nn::Module, Model> && std::is_invocable_v<InputFn&> AutoParallel(
      Model& model, InputFn input_fn, dist::DeviceMesh mesh, AutoParallelOptions options = {})
      : AutoParallel(&model, capture(model, input_fn(), capture_options(options.plan.precision)), std::move(mesh),
                     options) {}

  // Each parameter's bytes per device within [low, high] x its full size (plan/constraints.h).
  void add_parameter_memory_constraint(double low, double high);
  // One pattern per forward input leaf (flattened, in order): nullopt leaves it free. ValueError
  // naming the leaf for a pattern on a leaf the graph does not read (non-tensor or unused).
  void add_input_constraints(const std::vector<std::optional<plan::PlacementPattern>>& patterns);
  // One pattern per forward output leaf (flattened, in order): nullopt leaves it free. ValueError
  // naming the leaf for a pattern on a leaf the graph does not compute.
  void add_output_constraints(const std::vector<std::optional<plan::PlacementPattern>>& patterns);
  void set_memory_budget(double bytes_per_device);

  // The solver's plan under the constraints (InfeasiblePlan when none exists).
  plan::ShardingPlan optimize_placement();
  // Collective over `groups`' world: rank 0 solves, every rank receives the plan as JSON and
  // checks its fingerprint against its own program.
  plan::ShardingPlan optimize_placement(const dist::MeshGroups& groups);
  // Collective: rank 0 calls `make` (solve, pick a baseline, load a file), every rank receives its
  // plan as JSON and checks the fingerprint. An error on rank 0 reaches every rank as what it was
  // (the same error class, its message after "rank 0 could not plan: " on the other ranks).
  plan::ShardingPlan broadcast_plan(const dist::MeshGroups& groups, const std::function<plan::ShardingPlan()>& make);
  // This rank's module under `sharding` (solved here, loaded, or a baseline's plan).
  ParallelModule apply_placement(const plan::ShardingPlan& sharding, std::shared_ptr<const dist::MeshGroups> groups);

  // The hand-written plans under the same constraints, and reports.
  std::vector<plan::BaselineResult> baselines(const plan::BaselineOptions& options = {});
  plan::PlanReport report(const plan::ShardingPlan& sharding) const;
  std::string plan_json(const plan::ShardingPlan& sharding) const;
  plan::ShardingPlan plan_from_json(const std::string& json) const;

  const JointProgram& joint_program() const { return *joint_; }
  const plan::PlanProblem& problem() const { return problem_; }
  const plan::PlanConstraints& constraints() const { return constraints_; }
  const dist::DeviceMesh& mesh() const { return problem_.mesh; }

 private:
  AutoParallel(nn::Module* module, CapturedProgram captured, dist::DeviceMesh mesh, AutoParallelOptions options);
  static CaptureOptions capture_options(const MixedPrecisionPolicy& precision);
  // Graph input index of the user input leaf `leaf`; -1 when the capture dropped it (unused).
  int64_t user_input(size_t leaf) const;

  nn::Module* module_;
  CapturedProgram captured_;
  std::shared_ptr<const CapturedGraph> forward_;
  std::shared_ptr<const JointProgram> joint_;
  AutoParallelOptions options_;
  plan::PlanProblem problem_;
  plan::PlanConstraints constraints_;
};

// The one-call form: plans `model` for `groups`' mesh (rank 0 solves and broadcasts), with the
// forward's outputs placed as `out_shardings` (one pattern per output tensor; empty: free), and
// returns this rank's module. Collective over the groups' world.
template <class Model, class... Args>
ParallelModule auto_parallel(Model& model, std::shared_ptr<const dist::MeshGroups> groups,
                             const std::tuple<Args...>& sample_inputs,
                             const std::vector<std::optional<plan::PlacementPattern>>& out_shardings = {},
                             AutoParallelOptions options = {}) {
  AutoParallel ap(
      model, [&] { return sample_inputs; }, groups->mesh(), std::move(options));
  if (!out_shardings.empty()) ap.add_output_constraints(out_shardings);
  return ap.apply_placement(ap.optimize_placement(*groups), groups);
}

}  // namespace px
