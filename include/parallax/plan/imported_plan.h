#pragma once
// Parameter placements chosen by another planner (PyTorch AutoParallel, a hand-tuned TorchTitan
// config), brought in to be priced under Parallax's cost model next to the solver's plan and the
// hand-written baselines. Like a baseline (baselines.h), an imported plan fixes the parameters'
// placements and lets the solver place everything else at its best, so the import is priced at
// its best: when Parallax's own plan is cheaper, the difference lies in the parameters.
//
// The file is JSON: {"label": "AutoParallel", "placements": {name: placements, ...}}, the format
// of ../shared/anchors (other keys are ignored; the label defaults to the file's stem). A name is
// a parameter's fully qualified name, with or without the model's root prefix ("layers.0.attention.wq.weight"
// matches "model.layers.0.attention.wq.weight"). Placements are DTensor's text, one per mesh dim:
// "(Shard(dim=0), Replicate())", or a JSON list of such texts, or Parallax's "[S(0), R]".
//
// DTensor's _StridedShard(dim=d, sf=k) on mesh dim i, with Shard(d) on later mesh dims whose sizes
// multiply to k, is tensor dim d split over those later dims first and then over mesh dim i (for
// FSDP over a TP-sharded weight: each tp rank's rows, split again over dp). Parallax's placements
// always nest mesh dims in order, so that layout has no placement of its own; it is priced as its
// cost twin: Shard on another tensor dim e over mesh dim i (e free, its size divisible by mesh dim
// i). Both hold the same bytes per device, and both give the later dims' shard back with one
// all-gather over mesh dim i of the same size (and take a gradient back with one reduce-scatter),
// which a dp-outer nesting of dim d would not. The plan's notes say where that was done.

#include <string>
#include <string_view>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/core/placement.h"
#include "parallax/plan/baselines.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/solver.h"

namespace px::plan {

// One mesh dim's placement as DTensor writes it.
struct ForeignPlacement {
  enum class Kind : uint8_t { Replicate, Shard, StridedShard, Partial };
  Kind kind = Kind::Replicate;
  int64_t dim = 0;           // Shard, StridedShard
  int64_t split_factor = 1;  // StridedShard: the sizes of the mesh dims that split dim first
  ReduceOp reduce = ReduceOp::Sum;
  friend bool operator==(const ForeignPlacement&, const ForeignPlacement&) = default;
};

// "(Shard(dim=0), _StridedShard(dim=0, sf=8))", "[S(0), R]", "Replicate()", "Partial(sum)". ValueError
// naming the text and what was wrong.
std::vector<ForeignPlacement> parse_foreign_placements(std::string_view text);

struct ImportedParameter {
  std::string name;  // as the file names it
  std::string text;  // as the file writes its placements
  std::vector<ForeignPlacement> placements;
};

struct ImportedPlacements {
  std::string label;
  std::string source;  // the file, for messages
  std::vector<ImportedParameter> parameters;
};

// ValueError (with the JSON path) for a file that is not such a map.
ImportedPlacements parse_imported_placements(std::string_view json_text, std::string_view source = "<text>",
                                             std::string_view default_label = "imported");
ImportedPlacements read_imported_placements(const std::string& path);

// Parallax's placements for one parameter: Replicate, Shard and Partial as they are, _StridedShard
// as its cost twin (see the top of this file; `note` says so). ValueError when the placements do
// not fit the tensor and mesh (wrong count, dim out of range, a _StridedShard whose factor is not
// the later dims' sizes).
std::vector<Placement> resolve_placements(const std::vector<ForeignPlacement>& placements, const TensorMeta& meta,
                                          const dist::DeviceMesh& mesh, std::string* note = nullptr);

// The import as a constraint set on the plan's parameters (kind FsdpTensorParallel is meaningless
// here; the label names it). ValueError for a name that is no parameter of the program, a
// placement the builder does not offer for it, or placements that differ between layers that the
// problem plans as one (plan with clustering off then).
Baseline import_baseline(const ImportedPlacements& imported, const JointProgram& program, const PlanProblem& plan);

// The import solved for its free nodes with `common`'s constraints added, as solve_baselines does.
BaselineResult solve_imported(const ImportedPlacements& imported, const JointProgram& program, const PlanProblem& plan,
                              const PlanConstraints& common = {}, const SolveOptions& options = {});

}  // namespace px::plan
