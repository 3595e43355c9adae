#include "parallax/dtensor/spec.h"

#include "parallax/core/error.h"

namespace px {

void DTensorSpec::validate() const {
  if (static_cast<int64_t>(placements.size()) != mesh.ndim()) {
    throw ValueError("DTensorSpec: " + std::to_string(placements.size()) + " placements " + placements_str(placements) +
                     " for " + mesh.str() + ", which has " + std::to_string(mesh.ndim()) + " dimensions");
  }
  int masks = 0;
  for (const Placement& placement : placements) {
    if (const auto* shard = std::get_if<Shard>(&placement)) {
      if (shard->dim < -meta.ndim() || shard->dim >= meta.ndim()) {
        throw ValueError("DTensorSpec: " + placement_str(placement) + " is out of range for a tensor of shape " +
                         shape_str(meta.shape) + " (placements " + placements_str(placements) + ")");
      }
    }
    if (std::holds_alternative<MaskPartial>(placement)) ++masks;
  }
  if (masks > 1) {
    throw ValueError("DTensorSpec: placements " + placements_str(placements) +
                     " hold more than one MaskPartial; a DTensor carries one mask");
  }
}

DTensorSpec DTensorSpec::normalized() const {
  validate();
  DTensorSpec out = *this;
  for (Placement& placement : out.placements) {
    if (auto* shard = std::get_if<Shard>(&placement); shard != nullptr && shard->dim < 0) shard->dim += meta.ndim();
  }
  return out;
}

dist::LocalShard DTensorSpec::local_shard(std::span<const int64_t> coordinate) const {
  return dist::local_shard(meta.shape, placements, mesh, coordinate);
}

TensorMeta DTensorSpec::local_meta(std::span<const int64_t> coordinate) const {
  return {local_shard(coordinate).shape, meta.dtype};
}

bool DTensorSpec::is_replicated() const {
  for (const Placement& placement : placements) {
    if (!std::holds_alternative<Replicate>(placement)) return false;
  }
  return true;
}

bool DTensorSpec::has_partial() const {
  for (const Placement& placement : placements) {
    if (is_partial(placement)) return true;
  }
  return false;
}

std::vector<int64_t> DTensorSpec::mesh_dims_sharding(int64_t dim) const {
  int64_t wanted = normalize_dim(dim, meta.ndim(), "DTensorSpec::mesh_dims_sharding");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < placements.size(); ++i) {
    const auto* shard = std::get_if<Shard>(&placements[i]);
    if (shard == nullptr) continue;
    int64_t sharded = shard->dim < 0 ? shard->dim + meta.ndim() : shard->dim;
    if (sharded == wanted) dims.push_back(static_cast<int64_t>(i));
  }
  return dims;
}

std::string DTensorSpec::str() const {
  return "DTensorSpec(" + mesh.str() + ", " + placements_str(placements) + ", " + meta.str() + ")";
}

}  // namespace px
