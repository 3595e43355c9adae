#pragma once
// Redistribution: moving a DTensor from one list of placements to another on an
// N-D mesh, as a plan of per-mesh-dim steps, each a collective or a local change.
//
//   Shard -> Replicate          all_gather        (uneven shards padded inside it)
//   Partial -> Replicate        all_reduce
//   Partial -> Shard            reduce_scatter    (when nothing else shards that tensor dim)
//   Shard(i) -> Shard(j)        all_to_all        (when both dims split evenly and nothing else
//                                                  shards them; else all_gather then slice)
//   Replicate -> Shard          local slice, no communication
//   Replicate -> Partial        local: sum keeps the value on coordinate 0 of that mesh dim and
//                               zeroes the others; avg, max and min keep it everywhere
//   MaskPartial -> anything     apply the mask (zero the masked values), release it, then
//                               continue as Partial(sum)
//
// Order, for nested sharding to stay right: masks first; then every Shard that must
// go is gathered, from the last mesh dim to the first (a tensor dim sharded by
// mesh dims i < j is split by i first, so j must be undone first); then partial
// dims are reduced; then new shards are sliced from the first mesh dim to the last.
// A Shard that stays but sits inside (after) a mesh dim that changes on the same
// tensor dim is gathered and sliced again.
//
// A mesh dim of one device gets no step but a mask: there every placement is the whole value.
//
// Cost: alpha-beta per step on the link of its mesh dim (dist/comm_cost.h), on the
// padded local buffer each rank holds at that step.

#include <span>
#include <string>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/dist/comm_cost.h"
#include "parallax/dtensor/spec.h"

namespace px {

enum class RedistributeKind : uint8_t {
  ApplyMask,       // MaskPartial -> Partial(sum) on mesh_dim; local
  AllGather,       // Shard(tensor_dim) -> Replicate over mesh_dim
  AllReduce,       // Partial(reduce) -> Replicate over mesh_dim
  ReduceScatter,   // Partial(reduce) -> Shard(tensor_dim) over mesh_dim
  AllToAll,        // Shard(tensor_dim) -> Shard(to_tensor_dim) over mesh_dim
  LocalSlice,      // Replicate -> Shard(tensor_dim) on mesh_dim; local
  LocalPartition,  // Replicate -> Partial(reduce) on mesh_dim; local
};
std::string redistribute_kind_name(RedistributeKind kind);  // "all_gather", "local_slice", ...

struct RedistributeStep {
  RedistributeKind kind = RedistributeKind::AllGather;
  int64_t mesh_dim = 0;
  int64_t tensor_dim = -1;     // the dim gathered, scattered or sliced (AllToAll: the one gathered)
  int64_t to_tensor_dim = -1;  // AllToAll: the dim that becomes sharded
  ReduceOp reduce = ReduceOp::Sum;
  std::vector<Placement> after;  // the placements once this step is done
  double bytes = 0;              // as comm_cost.h counts it for the collective (0 for local steps)
  double seconds = 0;            // its alpha-beta cost (0 for local steps)
};

struct RedistributePlan {
  DTensorSpec from;  // normalized
  std::vector<Placement> to;
  std::vector<RedistributeStep> steps;
  double seconds = 0;  // the sum over steps
  // "[S(0), P(sum)] -> [R, S(1)]: all_gather(mesh 0, dim 0, 1.0 KiB) + reduce_scatter(mesh 1, dim 1, ...)"
  std::string str() const;
};

// ValueError naming the placements when `to` has the wrong count, shards out of range, or asks
// for MaskPartial (only an op produces one), or when `from` is MaskPartial but `to` keeps it
// while changing other dims (a mask travels only with its own placements).
RedistributePlan plan_redistribute(const DTensorSpec& from, std::span<const Placement> to,
                                   const dist::MeshTopology& topology);
// plan_redistribute(...).seconds
double redistribute_cost(const DTensorSpec& from, std::span<const Placement> to, const dist::MeshTopology& topology);

// This machine's measured link profiles (`parallax bench-collectives`; docs/benchmarks.md): what eager
// DTensor dispatch ranks strategies with.
dist::LinkProfile threads_backend_profile();
dist::LinkProfile mpi_backend_profile();

}  // namespace px
