#pragma once
// DeviceMesh: an N-D arrangement of ranks with named dimensions, as in PyTorch's
// DeviceMesh. A mesh is a pure value (shape, names, rank list): planning works on
// shapes like 8x8 or 16x8x4 with no ranks behind them. MeshGroups binds a mesh to a
// running ProcessGroup and holds one sub-group per mesh dimension for this rank.
//
// Layout: mesh position p (row-major over the shape) holds ranks()[p]; without an
// explicit list ranks()[p] = p, so rank = sum(coord[i] * stride[i]) with row-major
// strides. The sub-group of dimension d containing a rank is the ranks whose
// coordinates differ from it only in coordinate d, ordered by that coordinate.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace px::dist {

class ProcessGroup;

class DeviceMesh {
 public:
  // ValueError for an empty shape, a dim size < 1, names that are empty, duplicated or not
  // one per dim, and an explicit rank list of the wrong length, with duplicates or negatives.
  // Default names are "d0", "d1", ...
  explicit DeviceMesh(std::vector<int64_t> shape, std::vector<std::string> dim_names = {}, std::vector<int> ranks = {});

  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  // Number of ranks in the mesh (the product of the shape).
  int64_t size() const { return static_cast<int64_t>(ranks_.size()); }
  int64_t size(int64_t dim) const;
  int64_t size(std::string_view dim_name) const { return size(dim_index(dim_name)); }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<std::string>& dim_names() const { return names_; }
  // Every rank, in mesh (row-major) order.
  const std::vector<int>& ranks() const { return ranks_; }
  // Accepts a negative dim (from the end); ValueError when out of range.
  int64_t normalize_dim(int64_t dim) const;
  // ValueError naming the unknown name and the known ones.
  int64_t dim_index(std::string_view dim_name) const;

  bool contains(int rank) const;
  // ValueError when the rank is not in the mesh.
  std::vector<int64_t> coordinate(int rank) const;
  // ValueError for a coordinate of the wrong length or out of range.
  int rank_at(std::span<const int64_t> coordinate) const;

  // The ranks of dimension `dim`'s sub-group that contains `rank`, ordered by coordinate `dim`.
  std::vector<int> group_ranks(int64_t dim, int rank) const;
  // Every sub-group of dimension `dim` (size() / size(dim) of them), each ordered by coordinate
  // `dim`; the groups come in row-major order of the other coordinates.
  std::vector<std::vector<int>> groups(int64_t dim) const;

  // "DeviceMesh(dp=2, tp=4)"; an explicit rank list that is not 0..size()-1 is appended as
  // ", ranks=[...]".
  std::string str() const;

  friend bool operator==(const DeviceMesh&, const DeviceMesh&) = default;

 private:
  int64_t position_of(int rank) const;  // -1 when absent
  int rank_at_position(int64_t position) const { return ranks_[static_cast<size_t>(position)]; }

  std::vector<int64_t> shape_;
  std::vector<std::string> names_;
  std::vector<int64_t> strides_;  // row-major strides of shape_
  std::vector<int> ranks_;
  bool identity_ = true;  // ranks_[p] == p: coordinate() needs no search
};

// A mesh bound to a running job: this rank's coordinate and the ProcessGroup of each mesh
// dimension. The mesh's ranks are ranks of `world`, which must have exactly mesh.size() ranks.
// Construction is collective: every rank of `world` builds its MeshGroups with an equal mesh,
// at the same point of the program, because each sub-group is made with ProcessGroup::split.
// `world` must outlive this object.
//
// While it lives, a MeshGroups also binds `world` and its sub-groups to the thread that built it,
// so that collective ops (dist/comm_ops.h) run on that thread, eagerly or in a compiled graph,
// find their groups by rank list. It is neither copied nor moved: hold it in a shared_ptr to share it.
class MeshGroups {
 public:
  // ValueError when world.size() != mesh.size() or the mesh holds a rank outside [0, world.size()).
  MeshGroups(DeviceMesh mesh, ProcessGroup& world);
  ~MeshGroups();
  MeshGroups(const MeshGroups&) = delete;
  MeshGroups& operator=(const MeshGroups&) = delete;

  const DeviceMesh& mesh() const { return mesh_; }
  ProcessGroup& world() const { return *world_; }
  int rank() const;
  const std::vector<int64_t>& coordinate() const { return coordinate_; }
  int64_t coordinate(int64_t dim) const { return coordinate_[static_cast<size_t>(mesh_.normalize_dim(dim))]; }
  // The group of the ranks that differ from this one only in coordinate `dim`; its rank
  // numbering follows coordinate `dim`, so group(dim).rank() == coordinate(dim).
  ProcessGroup& group(int64_t dim) const;
  ProcessGroup& group(std::string_view dim_name) const { return group(mesh_.dim_index(dim_name)); }
  std::shared_ptr<ProcessGroup> group_ptr(int64_t dim) const;
  // The world ranks of this rank's sub-group of `dim`, in group order.
  const std::vector<int>& group_ranks(int64_t dim) const {
    return group_ranks_[static_cast<size_t>(mesh_.normalize_dim(dim))];
  }
  // Every rank of `world`: 0 .. world.size() - 1.
  const std::vector<int>& world_ranks() const { return world_ranks_; }

 private:
  DeviceMesh mesh_;
  ProcessGroup* world_;
  std::vector<int64_t> coordinate_;
  std::vector<std::shared_ptr<ProcessGroup>> groups_;  // one per mesh dim
  std::vector<std::vector<int>> group_ranks_;          // one per mesh dim
  std::vector<int> world_ranks_;
};

}  // namespace px::dist
