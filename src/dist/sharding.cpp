#include "parallax/dist/sharding.h"

#include <algorithm>
#include <string>

#include "parallax/core/error.h"

namespace px::dist {

namespace {

void check_split(const char* what, int64_t size, int64_t num_shards) {
  if (size < 0) throw ValueError(std::string(what) + ": dim size " + std::to_string(size) + " is negative");
  if (num_shards < 1) {
    throw ValueError(std::string(what) + ": " + std::to_string(num_shards) + " shards; at least one is needed");
  }
}

void check_index(const char* what, int64_t num_shards, int64_t index) {
  if (index < 0 || index >= num_shards) {
    throw ValueError(std::string(what) + ": shard index " + std::to_string(index) + " is out of range for " +
                     std::to_string(num_shards) + " shards");
  }
}

void check_placements(const char* what, std::span<const int64_t> global_shape, std::span<const Placement> placements,
                      const DeviceMesh& mesh) {
  if (static_cast<int64_t>(placements.size()) != mesh.ndim()) {
    throw ValueError(std::string(what) + ": " + std::to_string(placements.size()) + " placements " +
                     placements_str(placements) + " for " + mesh.str() + ", which has " + std::to_string(mesh.ndim()) +
                     " dimensions");
  }
  for (int64_t extent : global_shape) {
    if (extent < 0) throw ValueError(std::string(what) + ": global shape " + shape_str(global_shape) + " is negative");
  }
}

// The tensor dim a Shard placement splits, normalized; -1 for other placements.
int64_t sharded_dim(const char* what, const Placement& placement, std::span<const int64_t> global_shape) {
  const auto* shard = std::get_if<Shard>(&placement);
  if (shard == nullptr) return -1;
  return normalize_dim(shard->dim, static_cast<int64_t>(global_shape.size()),
                       std::string(what) + " of a tensor of shape " + shape_str(global_shape));
}

}  // namespace

int64_t chunk_size(int64_t size, int64_t num_shards) {
  check_split("chunk_size", size, num_shards);
  return (size + num_shards - 1) / num_shards;
}

int64_t shard_offset(int64_t size, int64_t num_shards, int64_t index) {
  check_split("shard_offset", size, num_shards);
  check_index("shard_offset", num_shards, index);
  return std::min(index * chunk_size(size, num_shards), size);
}

int64_t shard_size(int64_t size, int64_t num_shards, int64_t index) {
  check_split("shard_size", size, num_shards);
  check_index("shard_size", num_shards, index);
  int64_t chunk = chunk_size(size, num_shards);
  return std::min((index + 1) * chunk, size) - std::min(index * chunk, size);
}

LocalShard local_shard(std::span<const int64_t> global_shape, std::span<const Placement> placements,
                       const DeviceMesh& mesh, std::span<const int64_t> coordinate) {
  check_placements("local_shard", global_shape, placements, mesh);
  mesh.rank_at(coordinate);  // validates the coordinate
  LocalShard out{Shape(global_shape.begin(), global_shape.end()), Shape(global_shape.size(), 0)};
  for (size_t i = 0; i < placements.size(); ++i) {
    int64_t dim = sharded_dim("local_shard", placements[i], global_shape);
    if (dim < 0) continue;
    auto d = static_cast<size_t>(dim);
    int64_t n = mesh.size(static_cast<int64_t>(i));
    out.offset[d] += shard_offset(out.shape[d], n, coordinate[i]);
    out.shape[d] = shard_size(out.shape[d], n, coordinate[i]);
  }
  return out;
}

Shape local_shape(std::span<const int64_t> global_shape, std::span<const Placement> placements, const DeviceMesh& mesh,
                  std::span<const int64_t> coordinate) {
  return local_shard(global_shape, placements, mesh, coordinate).shape;
}

Shape padded_local_shape(std::span<const int64_t> global_shape, std::span<const Placement> placements,
                         const DeviceMesh& mesh) {
  check_placements("padded_local_shape", global_shape, placements, mesh);
  Shape out(global_shape.begin(), global_shape.end());
  for (size_t i = 0; i < placements.size(); ++i) {
    int64_t dim = sharded_dim("padded_local_shape", placements[i], global_shape);
    if (dim >= 0)
      out[static_cast<size_t>(dim)] = chunk_size(out[static_cast<size_t>(dim)], mesh.size(static_cast<int64_t>(i)));
  }
  return out;
}

}  // namespace px::dist
