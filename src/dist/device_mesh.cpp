#include "parallax/dist/device_mesh.h"

#include <algorithm>
#include <climits>
#include <unordered_set>

#include "parallax/core/error.h"
#include "parallax/core/shape.h"
#include "parallax/dist/comm_ops.h"
#include "parallax/dist/process_group.h"

namespace px::dist {

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out;
}

std::string ints_str(std::span<const int64_t> values) { return shape_str(values); }

}  // namespace

DeviceMesh::DeviceMesh(std::vector<int64_t> shape, std::vector<std::string> dim_names, std::vector<int> ranks)
    : shape_(std::move(shape)), names_(std::move(dim_names)), ranks_(std::move(ranks)) {
  if (shape_.empty()) throw ValueError("DeviceMesh: the shape is empty; a mesh has at least one dimension");
  int64_t total = 1;
  for (int64_t extent : shape_) {
    if (extent < 1) {
      throw ValueError("DeviceMesh: shape " + ints_str(shape_) + " has a dimension of size " + std::to_string(extent) +
                       "; every dimension needs at least one rank");
    }
    total *= extent;
    if (total > INT_MAX) throw ValueError("DeviceMesh: shape " + ints_str(shape_) + " has more than 2^31-1 ranks");
  }
  if (names_.empty()) {
    for (size_t i = 0; i < shape_.size(); ++i) names_.push_back("d" + std::to_string(i));
  }
  if (names_.size() != shape_.size()) {
    throw ValueError("DeviceMesh: " + std::to_string(names_.size()) + " dim names (" + join_names(names_) +
                     ") for a mesh of shape " + ints_str(shape_) + "; give one name per dimension");
  }
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i].empty()) throw ValueError("DeviceMesh: the name of dimension " + std::to_string(i) + " is empty");
    for (size_t j = 0; j < i; ++j) {
      if (names_[i] == names_[j]) {
        throw ValueError("DeviceMesh: dim name '" + names_[i] + "' is used by dimensions " + std::to_string(j) +
                         " and " + std::to_string(i) + "; names must be unique");
      }
    }
  }
  strides_ = contiguous_strides(shape_);
  if (ranks_.empty()) {
    ranks_.resize(static_cast<size_t>(total));
    for (int i = 0; i < static_cast<int>(total); ++i) ranks_[static_cast<size_t>(i)] = i;
    return;
  }
  if (static_cast<int64_t>(ranks_.size()) != total) {
    throw ValueError("DeviceMesh: " + std::to_string(ranks_.size()) + " ranks given for a mesh of shape " +
                     ints_str(shape_) + ", which holds " + std::to_string(total));
  }
  std::unordered_set<int> seen;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    int rank = ranks_[i];
    if (rank < 0) throw ValueError("DeviceMesh: rank " + std::to_string(rank) + " is negative");
    if (!seen.insert(rank).second) throw ValueError("DeviceMesh: rank " + std::to_string(rank) + " appears twice");
    if (rank != static_cast<int>(i)) identity_ = false;
  }
}

int64_t DeviceMesh::normalize_dim(int64_t dim) const {
  int64_t n = ndim();
  if (dim < -n || dim >= n) {
    throw ValueError("DeviceMesh: dim " + std::to_string(dim) + " is out of range for " + str() + " with " +
                     std::to_string(n) + " dimensions");
  }
  return dim < 0 ? dim + n : dim;
}

int64_t DeviceMesh::size(int64_t dim) const { return shape_[static_cast<size_t>(normalize_dim(dim))]; }

int64_t DeviceMesh::dim_index(std::string_view dim_name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == dim_name) return static_cast<int64_t>(i);
  }
  throw ValueError("DeviceMesh: no dimension named '" + std::string(dim_name) + "' in " + str() +
                   " (dimensions: " + join_names(names_) + ")");
}

int64_t DeviceMesh::position_of(int rank) const {
  if (identity_) return rank >= 0 && rank < static_cast<int>(ranks_.size()) ? rank : -1;
  auto it = std::find(ranks_.begin(), ranks_.end(), rank);
  return it == ranks_.end() ? -1 : it - ranks_.begin();
}

bool DeviceMesh::contains(int rank) const { return position_of(rank) >= 0; }

std::vector<int64_t> DeviceMesh::coordinate(int rank) const {
  int64_t position = position_of(rank);
  if (position < 0) throw ValueError("DeviceMesh: rank " + std::to_string(rank) + " is not in " + str());
  std::vector<int64_t> coord(shape_.size());
  for (size_t i = 0; i < shape_.size(); ++i) {
    coord[i] = position / strides_[i];
    position %= strides_[i];
  }
  return coord;
}

int DeviceMesh::rank_at(std::span<const int64_t> coordinate) const {
  if (coordinate.size() != shape_.size()) {
    throw ValueError("DeviceMesh: coordinate " + ints_str(coordinate) + " has " + std::to_string(coordinate.size()) +
                     " entries; " + str() + " has " + std::to_string(shape_.size()) + " dimensions");
  }
  int64_t position = 0;
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (coordinate[i] < 0 || coordinate[i] >= shape_[i]) {
      throw ValueError("DeviceMesh: coordinate " + ints_str(coordinate) + " is out of range for " + str());
    }
    position += coordinate[i] * strides_[i];
  }
  return rank_at_position(position);
}

std::vector<int> DeviceMesh::group_ranks(int64_t dim, int rank) const {
  dim = normalize_dim(dim);
  std::vector<int64_t> coord = coordinate(rank);
  int64_t base = 0;
  for (size_t i = 0; i < shape_.size(); ++i) base += coord[i] * strides_[i];
  const auto d = static_cast<size_t>(dim);
  base -= coord[d] * strides_[d];
  std::vector<int> out(static_cast<size_t>(shape_[d]));
  for (int64_t k = 0; k < shape_[d]; ++k) out[static_cast<size_t>(k)] = rank_at_position(base + k * strides_[d]);
  return out;
}

std::vector<std::vector<int>> DeviceMesh::groups(int64_t dim) const {
  const auto d = static_cast<size_t>(normalize_dim(dim));
  // A position with coordinate d = 0 starts each group; walking positions in order visits
  // those starts in row-major order of the other coordinates.
  std::vector<std::vector<int>> out;
  out.reserve(static_cast<size_t>(size() / shape_[d]));
  for (int64_t position = 0; position < size(); ++position) {
    if ((position / strides_[d]) % shape_[d] != 0) continue;
    std::vector<int> group(static_cast<size_t>(shape_[d]));
    for (int64_t k = 0; k < shape_[d]; ++k)
      group[static_cast<size_t>(k)] = rank_at_position(position + k * strides_[d]);
    out.push_back(std::move(group));
  }
  return out;
}

std::string DeviceMesh::str() const {
  std::string out = "DeviceMesh(";
  for (size_t i = 0; i < shape_.size(); ++i) {
    out += (i ? ", " : "") + names_[i] + "=" + std::to_string(shape_[i]);
  }
  if (!identity_) {
    out += ", ranks=[";
    for (size_t i = 0; i < ranks_.size(); ++i) out += (i ? "," : "") + std::to_string(ranks_[i]);
    out += "]";
  }
  return out + ")";
}

MeshGroups::MeshGroups(DeviceMesh mesh, ProcessGroup& world) : mesh_(std::move(mesh)), world_(&world) {
  if (mesh_.size() != world.size()) {
    throw ValueError("MeshGroups: " + mesh_.str() + " has " + std::to_string(mesh_.size()) +
                     " ranks but the process group has " + std::to_string(world.size()));
  }
  for (int rank : mesh_.ranks()) {
    if (rank >= world.size()) {
      throw ValueError("MeshGroups: " + mesh_.str() + " holds rank " + std::to_string(rank) +
                       ", outside the process group of " + std::to_string(world.size()) + " ranks");
    }
  }
  coordinate_ = mesh_.coordinate(world.rank());
  // Every rank splits every sub-group, in the same order (the split contract), and keeps its own.
  for (int64_t dim = 0; dim < mesh_.ndim(); ++dim) {
    std::shared_ptr<ProcessGroup> mine;
    for (const std::vector<int>& ranks : mesh_.groups(dim)) {
      std::shared_ptr<ProcessGroup> group = world.split(ranks);
      if (group) mine = std::move(group);
    }
    PX_ASSERT(mine != nullptr);
    groups_.push_back(std::move(mine));
    group_ranks_.push_back(mesh_.group_ranks(dim, world.rank()));
  }
  for (int rank = 0; rank < world.size(); ++rank) world_ranks_.push_back(rank);
  detail::bind_mesh_groups(this);
}

MeshGroups::~MeshGroups() { detail::unbind_mesh_groups(this); }

int MeshGroups::rank() const { return world_->rank(); }

ProcessGroup& MeshGroups::group(int64_t dim) const { return *group_ptr(dim); }

std::shared_ptr<ProcessGroup> MeshGroups::group_ptr(int64_t dim) const {
  return groups_[static_cast<size_t>(mesh_.normalize_dim(dim))];
}

}  // namespace px::dist
