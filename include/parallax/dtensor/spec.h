#pragma once
// DTensorSpec: how a global tensor lies on a device mesh, as in PyTorch's DTensor:
// the mesh, one placement per mesh dimension, and the global shape and dtype.

#include <span>
#include <string>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/shape.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dist/sharding.h"

namespace px {

struct DTensorSpec {
  dist::DeviceMesh mesh{{1}};
  std::vector<Placement> placements;  // one per mesh dimension
  TensorMeta meta;                    // the global shape and dtype

  // ValueError naming the problem: a placement count other than mesh.ndim(), a Shard dim outside
  // the tensor's rank (negative dims are normalized by normalized()), or more than one MaskPartial.
  void validate() const;
  // The same spec with every Shard dim made non-negative. Validates.
  DTensorSpec normalized() const;

  // This coordinate's local block (shape and offset in the global tensor).
  dist::LocalShard local_shard(std::span<const int64_t> coordinate) const;
  TensorMeta local_meta(std::span<const int64_t> coordinate) const;

  bool is_replicated() const;  // Replicate on every mesh dim
  bool has_partial() const;    // a Partial or MaskPartial on some mesh dim
  // The mesh dims that shard tensor dim `dim`, in mesh order (the nesting order).
  std::vector<int64_t> mesh_dims_sharding(int64_t dim) const;

  // "DTensorSpec(DeviceMesh(d0=2, d1=2), [S(0), R], f32[8,4])"
  std::string str() const;
  friend bool operator==(const DTensorSpec&, const DTensorSpec&) = default;
};

}  // namespace px
