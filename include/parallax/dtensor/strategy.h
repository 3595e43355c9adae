#pragma once
// N-D sharding strategies: an op's single-mesh-dim rules (OpDef::sharding)
// combined over the dims of a mesh by one generic routine, and the local call
// each rank makes under one of them.
//
// A combination is kept only when it is sound on this mesh:
//   - no input is MaskPartial (only reductions consume a mask; see redistribute.h),
//     and no output is MaskPartial on more than one mesh dim;
//   - at every coordinate checked, the op's shape inference on the local input
//     shapes (with localized attributes) gives exactly the local output shapes
//     and dtypes that the output placements call for. Meshes of up to 64 ranks
//     are checked at every coordinate; larger (planning-only) meshes at the
//     first and last coordinate, which hold the largest and the smallest shards.

#include <span>
#include <string>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/shape.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/ops/op_def.h"

namespace px {

struct NdStrategy {
  std::vector<std::vector<Placement>> inputs;   // per input, one placement per mesh dim
  std::vector<std::vector<Placement>> outputs;  // per output, one placement per mesh dim
  friend bool operator==(const NdStrategy&, const NdStrategy&) = default;
};
// "[S(0), R], [R, R] -> [S(0), R]"
std::string nd_strategy_str(const NdStrategy& strategy);

// Every sound N-D strategy for `op` on inputs of these global metas, in the order of the
// product of the single-dim lists (mesh dim 0 varying slowest), so the all-Replicate strategy
// comes first. UnsupportedOp naming the op when it has no sharding rule.
std::vector<NdStrategy> expand_strategies(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs,
                                          const dist::DeviceMesh& mesh);

// The product of the single-dim lists, in the same order, before the soundness check (only the
// MaskPartial filters above apply): what eager dispatch ranks by cost before checking.
std::vector<NdStrategy> candidate_strategies(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs,
                                             const dist::DeviceMesh& mesh);
// The soundness check of expand_strategies for one candidate.
bool is_sound(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs, const NdStrategy& strategy,
              const dist::DeviceMesh& mesh);

// One rank's local call under a strategy: local metas and offsets of every input and output,
// and the localized attributes.
struct LocalCallPlan {
  std::vector<TensorMeta> global_inputs;
  std::vector<TensorMeta> global_outputs;
  std::vector<TensorMeta> local_inputs;
  std::vector<TensorMeta> local_outputs;
  std::vector<Shape> input_offsets;
  std::vector<Shape> output_offsets;
  NdStrategy strategy;
  Attrs attrs;  // localized

  LocalContext context() const;  // views into this plan: keep the plan alive while it is used
};

// A strategy that is not sound at some coordinate: a placement cannot cut its tensor there, the
// local op fails on the shards, or it gives other shards than the output placements need. A
// ValueError, so callers that catch those still do; is_sound() takes it, and only it, as "no".
class UnsoundStrategy : public ValueError {
 public:
  using ValueError::ValueError;
};

// UnsoundStrategy naming the op, the strategy and the coordinate when the strategy is not sound
// there; ValueError (or the inference's own error) for a call that is wrong whatever the
// strategy: global inputs the op rejects, or a strategy of another arity.
LocalCallPlan plan_local_call(const OpDef& op, const std::vector<TensorMeta>& global_inputs, const Attrs& attrs,
                              const NdStrategy& strategy, const dist::DeviceMesh& mesh,
                              std::span<const int64_t> coordinate);

// Runs the op on local inputs placed as plan.strategy says: the op's `local` facet when it has
// one, else the op itself through the dispatcher (so it traces). Checks every output against
// plan.local_outputs (ValueError naming the op otherwise) and that a MaskPartial output got a mask.
LocalResult run_local(const OpDef& op, const std::vector<Tensor>& local_inputs, const LocalCallPlan& plan);

}  // namespace px
