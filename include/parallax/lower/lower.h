#pragma once
// Lowering: a joint forward+backward graph and a sharding plan become one plain graph per rank,
// whose collectives are ordinary IR ops (dist/comm_ops.h).
//
// How: the joint graph is run, node by node, over DTensor-like values placed as the plan says
// (each graph input in its planned placements; each node in its planned strategy), under an
// ir::Tracer whose inputs are this rank's local shards. Every node's inputs are redistributed to
// the placements its strategy reads (plan_redistribute and its execution as ops: all_gather,
// all_reduce, reduce_scatter, all_to_all, local slices), then the op runs on the local shards
// (run_local: the op, or its `local` facet, with localized attributes). The trace records only
// local computation and collectives: the rank's SPMD program.
//
// Outputs, one per joint graph output, local shards:
//   - a gradient: in the placements of the input it differentiates (a parameter's shard is updated
//     with a gradient shard placed like it; data parallelism all-reduces, FSDP reduce-scatters);
//   - a user output (the loss) or an attribute mutation: as the producing strategy left it, with
//     every Partial (and MaskPartial) dim reduced to Replicate, so each rank holds real values.
// A value read by several nodes in the same foreign placements is redistributed once.
//
// Every rank's graph passes the IR verifier (ir::Tracer::finish verifies).

#include <cstdint>
#include <string>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/core/placement.h"
#include "parallax/dist/comm_cost.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/ir/graph.h"
#include "parallax/plan/builder.h"

namespace px::lower {

struct RankProgram {
  int rank = 0;
  std::vector<int64_t> coordinate;
  ir::Graph graph;  // inputs: local shards of the joint graph's inputs, in order; outputs likewise
  std::vector<std::vector<Placement>> input_placements;   // per joint graph input
  std::vector<std::vector<Placement>> output_placements;  // per joint graph output
  std::vector<TensorMeta> global_inputs;                  // the joint graph's metas
  std::vector<TensorMeta> global_outputs;
  int64_t collectives = 0;  // collective nodes in `graph`
};

// The placements each joint graph output gets (see above), from a decoded plan.
std::vector<std::vector<Placement>> output_placements(const JointProgram& program, const plan::DecodedPlan& plan,
                                                      const dist::DeviceMesh& mesh);

// Rank `rank`'s program. ValueError when the plan does not fit the program (a placement or
// strategy count differs from the graph's inputs and nodes) or the rank is not in the mesh;
// the redistribution and local-call errors of dtensor/ name the node otherwise.
RankProgram lower_rank(const JointProgram& program, const plan::DecodedPlan& plan, const dist::DeviceMesh& mesh,
                       const dist::MeshTopology& topology, int rank);

// Every rank's program, in rank order (for --dump-graphs and tests; a running rank lowers its own).
std::vector<RankProgram> lower_all(const JointProgram& program, const plan::DecodedPlan& plan,
                                   const dist::DeviceMesh& mesh, const dist::MeshTopology& topology);

// The programs as text: "# rank 0 at [0, 1]: inputs [S(0), R] ..." headers and the IR of each.
std::string dump(const std::vector<RankProgram>& programs);

}  // namespace px::lower
