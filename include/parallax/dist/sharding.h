#pragma once
// Shard sizes with torch.chunk semantics, as DTensor uses them.
//
// A dim of size S split over n shards uses chunks of c = ceil(S / n) elements: shard i
// covers [min(i*c, S), min((i+1)*c, S)). The last shards may be smaller or empty
// (S=5, n=4 gives 2, 2, 1, 0). Collectives move equal-sized buffers, so inside them each
// shard is padded to c elements and the padding is dropped afterwards.
//
// Several mesh dims may shard the same tensor dim: they nest in mesh-dim order, as in
// DTensor. [Shard(0), Shard(0)] on a 2x2 mesh first splits dim 0 in two by mesh dim 0, then
// splits each half in two by mesh dim 1.

#include <cstdint>
#include <span>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/shape.h"
#include "parallax/dist/device_mesh.h"

namespace px::dist {

// ceil(size / num_shards): every shard's padded size. ValueError for size < 0 or num_shards < 1.
int64_t chunk_size(int64_t size, int64_t num_shards);
// The unpadded size of shard `index` (0 for the empty trailing shards). ValueError for an index
// outside [0, num_shards).
int64_t shard_size(int64_t size, int64_t num_shards, int64_t index);
// Where shard `index` starts in the full dim (size itself for an empty trailing shard).
int64_t shard_offset(int64_t size, int64_t num_shards, int64_t index);

// This coordinate's block of a global tensor: its shape and where it starts in the global one.
struct LocalShard {
  Shape shape;
  Shape offset;
  friend bool operator==(const LocalShard&, const LocalShard&) = default;
};

// One placement per mesh dim. Replicate and the partial placements leave the shape as is;
// Shard(d) (d may be negative) splits dim d. ValueError for a placement count other than
// mesh.ndim(), a shard dim out of range, or a coordinate that is not in the mesh.
LocalShard local_shard(std::span<const int64_t> global_shape, std::span<const Placement> placements,
                       const DeviceMesh& mesh, std::span<const int64_t> coordinate);
// local_shard(...).shape
Shape local_shape(std::span<const int64_t> global_shape, std::span<const Placement> placements, const DeviceMesh& mesh,
                  std::span<const int64_t> coordinate);
// The shape every rank's buffer has once padded for a collective: each sharded dim cut to its
// chunk size, nesting as above (the first shard's shape, which is the largest).
Shape padded_local_shape(std::span<const int64_t> global_shape, std::span<const Placement> placements,
                         const DeviceMesh& mesh);

}  // namespace px::dist
