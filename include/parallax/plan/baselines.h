#pragma once
// The hand-written plans users know, as constraint sets (constraints.h) on the same PlanProblem:
// each fixes the placements of the parameters and the batch, and the solver places everything
// else (the activations, where the hand-written plan would follow from the parameters anyway) at
// its best, so a baseline is priced at its best under the same cost model as the solver's plan.
//
//   DP       data parallel over every mesh dim: parameters replicated, the batch (dim 0 of every
//            user input) sharded over all devices, gradients all-reduced (the builder prices the
//            gradient's move to its parameter's placement).
//   FSDP     ZeRO-3 over every mesh dim: parameters (with their gradients and optimizer states)
//            sharded on dim 0 over all devices, the batch sharded likewise; the solver gathers a
//            parameter where a node reads it, and gradients are reduce-scattered.
//   TP       Megatron tensor parallelism on the tp mesh dim (the whole of a 1-D mesh):
//            column-parallel wq, wk, wv, w1, w3 (GPT: c_fc; the MLP model: fc1): weight [out, in]
//            as Linear stores it sharded on dim 0 (S(0)), bias S(0); row-parallel wo, w2 (GPT:
//            c_proj; fc2): weight S(1), bias replicated; the token embedding and the output head
//            vocab-parallel (S(0) of [vocab, dim]); norms and position embeddings replicated. On
//            a 2-D mesh the dp dim is data parallel (parameters replicated, batch sharded); on a
//            1-D mesh every device sees the whole batch.
//   FSDP+TP  2-D meshes: TP on the tp dim, FSDP on the dp dim (each parameter's tp shard sharded
//            again on dim 0 over dp, as PyTorch's FSDP2 over a TP-sharded model does).
// Where a placement does not exist for a tensor (a dim too small to give every device a
// non-empty shard), the baseline falls back, in order, to sharding another dim (FSDP, the batch:
// the sequence) or to replicating it, and says so in its notes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/constraints.h"
#include "parallax/plan/plan.h"
#include "parallax/plan/solver.h"

namespace px::plan {

// Imported: another planner's parameter placements (imported_plan.h), never made by make_baseline.
enum class BaselineKind : uint8_t { DataParallel, Fsdp, TensorParallel, FsdpTensorParallel, Imported };
std::string baseline_name(BaselineKind kind);  // "DP", "FSDP", "TP", "FSDP+TP", "imported"

struct BaselineOptions {
  // On meshes of two or more dims: the data-parallel dim and the tensor-parallel dim (an 8x8
  // cluster mesh: dim 0 crosses nodes over InfiniBand, dim 1 stays on NVLink).
  int64_t dp_dim = 0;
  int64_t tp_dim = -1;  // -1: the last
};

struct Baseline {
  BaselineKind kind = BaselineKind::DataParallel;
  std::string name;
  std::string description;
  PlanConstraints constraints;
  std::vector<std::string> notes;  // fallbacks taken, and parameters TP replicates for want of a split
};

// The kinds that apply to a mesh: DP, FSDP and TP everywhere, FSDP+TP on meshes of two or more dims.
std::vector<BaselineKind> baseline_kinds(const dist::DeviceMesh& mesh);

// ValueError when the kind does not apply to the mesh (FSDP+TP on a 1-D mesh, Imported) or the options name
// mesh dims out of range or the same dim twice.
Baseline make_baseline(BaselineKind kind, const JointProgram& program, const PlanProblem& plan,
                       const BaselineOptions& options = {});

struct BaselineResult {
  Baseline baseline;
  std::optional<ShardingPlan> plan;  // nullopt when it cannot meet the constraints
  std::string error;                 // then: the InfeasiblePlan message
};

// Every baseline that applies to the mesh, each with `common`'s constraints added (a memory
// budget, a placement the user requires), solved for its free nodes; each on its own thread
// (options.on_progress is not called), the results in baseline_kinds' order.
std::vector<BaselineResult> solve_baselines(const JointProgram& program, const PlanProblem& plan,
                                            const PlanConstraints& common = {}, const SolveOptions& options = {},
                                            const BaselineOptions& baseline_options = {});

}  // namespace px::plan
