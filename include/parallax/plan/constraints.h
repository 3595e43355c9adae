#pragma once
// Constraints on a sharding plan (AutoParallel's, and more), applied to a built PlanProblem
// (builder.h) before it is solved:
//
//   parameter memory   the parameters' summed local bytes per device within [low, high] x their
//                      full size. The solvers take no extra linear rows, so this is enforced by
//                      cutting strategies: every parameter keeps the strategies whose share lies
//                      within [low, high], which keeps the sum within as well. That is stricter
//                      than the sum alone (it cannot trade one replicated parameter against
//                      another sharded further), and the same where `high` is the smallest share
//                      the mesh offers (high = 1/8 on 8 devices: every parameter fully sharded
//                      either way) and `low` 0 or 1, as in the usual uses. A parameter that
//                      cannot (a tensor too small to split over the mesh) is held at its nearest
//                      share, and the others are tightened below `high` (above `low`) by as
//                      much as that takes, when the mesh offers smaller (larger) shares.
//                      A parameter's share is 1 / (product of the sizes of the mesh dims that
//                      shard it): its bytes averaged over the devices, exact when the dims
//                      divide, and free of the rounding up of uneven torch.chunk shards.
//   memory budget      bytes per device at every time step: the problem's usage_limit (it
//                      replaces PlanOptions::memory_limit_bytes when set).
//   input placements   a graph input (a parameter, the batch) in given placements.
//   output placements  a graph output (the loss) produced in given placements.
//   node placements    a graph node's inputs or outputs in given placements.
//   gradient pairing   a parameter's gradient ends in the parameter's placement: by default it
//                      may be produced anywhere and is redistributed there (what the builder
//                      prices: an all-reduce under data parallelism, a reduce-scatter under
//                      FSDP); GradientPairing::Produced requires the node producing it to give
//                      it in that placement already (no gradient communication at all).
//
// A pattern gives one entry per mesh dim, nullopt for "any": {Shard{0}, nullopt} is "batch-sharded
// on mesh dim 0, anything on mesh dim 1".
//
// Under repeated-layer clustering a constraint on one layer's parameter or node binds every layer
// that shares its decision. Constraints that no plan can meet raise px::InfeasiblePlan naming the
// binding constraint and by how much it is violated (the least any plan reaches).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/core/placement.h"
#include "parallax/plan/builder.h"

namespace px::plan {

// One entry per mesh dim: the placement required there, or nullopt for any.
using PlacementPattern = std::vector<std::optional<Placement>>;

// The pattern requiring exactly these placements.
PlacementPattern exactly(std::span<const Placement> placements);
bool matches(const PlacementPattern& pattern, std::span<const Placement> placements);
// "[S(0), *]"
std::string pattern_str(const PlacementPattern& pattern);

struct ParameterMemory {
  double low = 0;  // fractions of the full parameter size
  double high = 1;
};

struct InputConstraint {
  int64_t input = 0;  // graph input index (input_index() finds one by name)
  PlacementPattern placements;
};

struct OutputConstraint {
  int64_t output = 0;  // graph output index (output_index() finds one by name)
  PlacementPattern placements;
};

struct NodeConstraint {
  int64_t node = 0;  // graph node index
  // Per input / output of the node: a pattern, or nullopt for free. Shorter lists leave the rest free.
  std::vector<std::optional<PlacementPattern>> inputs;
  std::vector<std::optional<PlacementPattern>> outputs;
};

enum class GradientPairing : uint8_t { Redistributed, Produced };

struct PlanConstraints {
  std::optional<ParameterMemory> parameter_memory;
  std::optional<double> memory_budget_bytes;
  std::vector<InputConstraint> inputs;
  std::vector<OutputConstraint> outputs;
  std::vector<NodeConstraint> nodes;
  GradientPairing gradients = GradientPairing::Redistributed;
};

// A restricted problem and the way back to the original's strategy indices.
struct ConstrainedProblem {
  PlanProblem plan;                        // the restricted problem (its usage_limit: the budget)
  std::vector<std::vector<int64_t>> kept;  // per node: original indices of the strategies kept
  std::vector<std::string> notes;          // how constraints were realized ("parameter memory: ...")

  // A choice of the restricted problem in the original's indices, and back (nullopt when some
  // node's strategy was cut).
  Choice to_original(const Choice& choice) const;
  std::optional<Choice> from_original(const Choice& choice) const;
};

// The problem under these constraints (`program`: the one `plan` was built from, for names). ValueError
// for malformed constraints (an index out of range, a pattern of the wrong length, low > high, a
// budget <= 0) or a program that is not the plan's; InfeasiblePlan when no plan can meet them. A
// memory budget is checked against the least-memory plan (every node at its smallest usage, a
// choice that always exists); the solver may still fail to find a plan that also fits and is
// cheap, which solve_plan (plan.h) reports.
ConstrainedProblem apply_constraints(const JointProgram& program, const PlanProblem& plan,
                                     const PlanConstraints& constraints);

// A parameter's share of its full size per device under these placements (see the top of this
// file): 1 / the product of the sizes of the mesh dims that shard it.
double parameter_share(std::span<const Placement> placements, const dist::DeviceMesh& mesh);

// The graph input named `name`: any fqn of a parameter or buffer ("model.layers.0.attention.wq.weight")
// or a descriptor's text ("UserInput([0])", "Param(wte.weight, lm_head.weight)"). ValueError
// naming the candidates when none matches.
int64_t input_index(const JointProgram& program, std::string_view name);
// The graph output named by its descriptor's text ("UserOutput(<root>)", "Grad(of: Param(fc.weight))").
int64_t output_index(const JointProgram& program, std::string_view name);

}  // namespace px::plan
