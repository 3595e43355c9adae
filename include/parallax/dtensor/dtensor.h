#pragma once
// DTensor: a tensor laid out over a device mesh, as PyTorch's DTensor, built as a
// TensorSubclass (subclass/subclass.h). A px::Tensor holding a DTensor has the
// GLOBAL shape and dtype; each rank holds its local shard.
//
// State under the subclass contract (so capture sees and replays it):
//   inner "local"  this rank's shard;
//   inner "mask"   only for a MaskPartial placement: where the local values are not valid
//                  (an embedding's out-of-range indices); released (cleared) by the
//                  reduction that consumes it, which is an attribute change of the DTensor
//                  the reduction reads;
//   metadata       the mesh (shape, names, ranks), the placements and the global shape and dtype.
// The bound MeshGroups (the running job's groups) is environment, not state: unflatten keeps it.
//
// Eager ops on DTensors (any op with a sharding rule): the dispatcher hands the call to the
// DTensor hook, which expands the op's rule over the mesh (dtensor/strategy.h), picks the
// strategy whose input redistributions cost least on this machine's measured links (ties go to
// the earlier strategy; rules list all-Replicate first), redistributes, runs the local op and
// wraps the outputs. Plain (non-DTensor) tensor inputs of such a call count as Replicate: every
// rank computes them alike in SPMD code (PyTorch's implicit replication). An op without a rule
// raises UnsupportedOp naming it.

#include <memory>
#include <optional>
#include <vector>

#include "parallax/dist/comm_cost.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dtensor/redistribute.h"
#include "parallax/dtensor/spec.h"
#include "parallax/subclass/subclass.h"

namespace px {

class DTensor final : public TensorSubclass {
 public:
  // ValueError when the spec is invalid, its mesh differs from the groups', the local tensor's
  // shape or dtype differ from the spec's at this rank, or a mask is given without a MaskPartial
  // placement (or is not bool).
  DTensor(std::shared_ptr<const dist::MeshGroups> groups, DTensorSpec spec, Tensor local, Tensor mask = {});

  std::string type_name() const override { return "DTensor"; }
  SubclassState flatten() const override;
  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override;
  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) override;

  const DTensorSpec& spec() const { return spec_; }
  const Tensor& local() const { return local_; }
  const Tensor& mask() const { return mask_; }  // undefined unless MaskPartial and not yet released
  const std::shared_ptr<const dist::MeshGroups>& groups() const { return groups_; }
  // The links eager dispatch prices redistributions with: this machine's measured profile of the
  // groups' backend on every mesh dim.
  dist::MeshTopology topology() const;

  // Drops the mask (after a reduction has applied it).
  void release_mask() { mask_ = Tensor(); }

 private:
  std::shared_ptr<const dist::MeshGroups> groups_;
  DTensorSpec spec_;
  Tensor local_;
  Tensor mask_;
};

bool is_dtensor(const Tensor& tensor);
// The DTensor a tensor holds; ValueError naming `what` otherwise.
DTensor& dtensor_of(const Tensor& tensor, std::string_view what = "tensor");
const DTensorSpec& dtensor_spec(const Tensor& tensor);

// Wraps a DTensor instance into a px::Tensor of its global shape.
Tensor make_dtensor(std::shared_ptr<const dist::MeshGroups> groups, DTensorSpec spec, Tensor local, Tensor mask = {});

// Every rank passes the same global tensor; each keeps its block, without communication
// (Partial placements: Replicate -> Partial as in redistribute.h). MaskPartial is refused.
Tensor distribute_tensor(const Tensor& global, std::shared_ptr<const dist::MeshGroups> groups,
                         std::vector<Placement> placements);
// Wraps this rank's local shard. The global shape defaults to the local one with each sharded dim
// multiplied by its mesh dims' sizes (right for even shards); pass it for uneven ones. ValueError
// when the local shape does not match the global shape's shard at this rank.
Tensor from_local(const Tensor& local, std::shared_ptr<const dist::MeshGroups> groups,
                  std::vector<Placement> placements, std::optional<Shape> global_shape = std::nullopt);
// This rank's shard (an undefined mask stays with the DTensor).
Tensor to_local(const Tensor& dtensor);
// The whole global tensor on every rank (redistribute to Replicate everywhere, then to_local).
Tensor full_tensor(const Tensor& dtensor);
// A DTensor with the same global value placed as `placements` (dtensor/redistribute.h). Consuming a
// MaskPartial applies and releases the source's mask; a MaskPartial whose mask was already
// released raises ValueError.
Tensor redistribute(const Tensor& dtensor, std::vector<Placement> placements);

}  // namespace px
