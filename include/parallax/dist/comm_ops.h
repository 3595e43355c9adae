#pragma once
// Collectives as ordinary ops of the registry, so that a traced program carries
// them in its graph and any rank can run that graph later. Each names its group
// by the group's ranks (ranks of the job's world, in group order): the `ranks`
// attribute. They are functional: the result is a new tensor.
//
// Which ProcessGroup a `ranks` list means is decided on the calling thread: a
// MeshGroups binds the world and the sub-groups of its mesh dims to the thread
// that built it, for its lifetime (as torch.distributed's group registry does
// for a process; a rank here may be a thread). A collective op run on a thread
// with no bound group of those ranks raises CommError naming the ranks.
//
//   all_reduce(x, op, ranks)                 x reduced over the group (op: sum, avg, max, min)
//   all_gather(x, dim, ranks)                every rank's x concatenated along dim, in group order
//   reduce_scatter(x, op, dim, ranks)        x reduced over the group, then chunk rank() of dim
//                                            (x.shape[dim] divisible by the group size)
//   all_to_all(x, split_dim, concat_dim, ranks)
//                                            x cut into size() chunks along split_dim, chunk j
//                                            sent to rank j; the chunks received concatenated
//                                            along concat_dim in source order
//
// They have no VJP: Parallax differentiates the single-device program before it
// lowers it to collectives.

#include <cstdint>
#include <span>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/tensor.h"

namespace px {
class Registry;
}

namespace px::dist {

class ProcessGroup;
class MeshGroups;

Tensor all_reduce(const Tensor& x, ReduceOp op, const std::vector<int>& ranks);
Tensor all_gather(const Tensor& x, int64_t dim, const std::vector<int>& ranks);
Tensor reduce_scatter(const Tensor& x, ReduceOp op, int64_t dim, const std::vector<int>& ranks);
Tensor all_to_all(const Tensor& x, int64_t split_dim, int64_t concat_dim, const std::vector<int>& ranks);

// The group of these world ranks bound to this thread (the newest binding first). CommError
// naming the ranks when none is bound.
ProcessGroup& bound_group(std::span<const int> ranks);

// Registers the four ops above.
void register_collective_ops(Registry& registry);

namespace detail {
// Called by MeshGroups' constructor and destructor.
void bind_mesh_groups(const MeshGroups* groups);
void unbind_mesh_groups(const MeshGroups* groups);
}  // namespace detail

}  // namespace px::dist
