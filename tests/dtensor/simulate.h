#pragma once
// A simulated mesh for checking sharding rules without any communication: every mesh
// coordinate runs the op on its local inputs in turn, and the global outputs are put back
// together from the local ones as the output placements say.

#include <cstdint>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dtensor/strategy.h"
#include "parallax/ops/attrs.h"
#include "parallax/ops/op_def.h"

namespace px::testing {

// Runs `op` under `strategy` on a simulated `mesh`. For every mesh coordinate it builds the
// local inputs from the global ones, mesh dim by mesh dim (nested, like dist::local_shard):
//   Shard(k):   the torch.chunk block along k;
//   Replicate:  the whole tensor;
//   Partial(r): a random split (seeded by `seed`) whose reduction r over that mesh dim gives back
//               the value: sum/avg parts are random with the last part making up the difference
//               (bf16 parts are the value times powers of two, so that they stay exact); for max
//               one coordinate holds the value and the others value - |random| (min: + |random|);
//               int64 with integers. Bool inputs are never partial (ValueError).
// Then plan_local_call + run_local at each coordinate, and the global outputs are assembled
// reducing mesh dims from the last to the first:
//   Shard(k):      concatenated along k in coordinate order;
//   Partial(r):    reduced with r (in float64; max and min propagate NaN);
//   MaskPartial:   masked values (LocalResult::masks, broadcast against the output) zeroed, then summed;
//   Replicate:     every coordinate must give exactly the same tensor (ValueError otherwise).
// ValueError also when a local input the harness built disagrees with the plan's local shape.
std::vector<Tensor> simulate_strategy(const OpDef& op, const std::vector<Tensor>& global_inputs, const Attrs& attrs,
                                      const NdStrategy& strategy, const dist::DeviceMesh& mesh, uint64_t seed);

}  // namespace px::testing
