// Planning a redistribution (see dtensor/redistribute.h for the order of steps and why).

#include <algorithm>

#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "parallax/dtensor/redistribute.h"

namespace px {

namespace {

int64_t shard_dim_of(const Placement& placement) {
  const auto* shard = std::get_if<Shard>(&placement);
  return shard == nullptr ? -1 : shard->dim;
}

// The mesh dims that shard tensor dim `dim`, in mesh order.
std::vector<int64_t> sharding_dims(const std::vector<Placement>& placements, int64_t dim) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < placements.size(); ++i) {
    if (shard_dim_of(placements[i]) == dim) dims.push_back(static_cast<int64_t>(i));
  }
  return dims;
}

size_t common_prefix(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

std::vector<int64_t> suffix(const std::vector<int64_t>& dims, size_t from) {
  return std::vector<int64_t>(dims.begin() + static_cast<std::ptrdiff_t>(from), dims.end());
}

int64_t product_of_sizes(const dist::DeviceMesh& mesh, const std::vector<int64_t>& dims) {
  int64_t product = 1;
  for (int64_t dim : dims) product *= mesh.size(dim);
  return product;
}

class Planner {
 public:
  Planner(const DTensorSpec& from, std::vector<Placement> to, const dist::MeshTopology& topology)
      : spec_(from), to_(std::move(to)), topology_(topology), current_(from.placements) {}

  RedistributePlan run() {
    apply_masks();
    gather_shards();
    reduce_partials();
    shard_and_partition();
    RedistributePlan plan{spec_, to_, std::move(steps_), 0.0};
    for (const RedistributeStep& step : plan.steps) plan.seconds += step.seconds;
    return plan;
  }

 private:
  double local_bytes() const {
    Shape padded = dist::padded_local_shape(spec_.meta.shape, current_, spec_.mesh);
    return static_cast<double>(numel(padded) * dtype_size(spec_.meta.dtype));
  }

  // Records a step; `bytes` is measured on the buffer before the step changes it.
  void add(RedistributeKind kind, int64_t mesh_dim, Placement after, int64_t tensor_dim = -1,
           int64_t to_tensor_dim = -1, ReduceOp reduce = ReduceOp::Sum) {
    RedistributeStep step;
    step.kind = kind;
    step.mesh_dim = mesh_dim;
    step.tensor_dim = tensor_dim;
    step.to_tensor_dim = to_tensor_dim;
    step.reduce = reduce;
    int64_t n = spec_.mesh.size(mesh_dim);
    // On a mesh dim of one device every placement holds the whole value: a collective or a
    // local slice there changes the label, not the data, so it records no step (and lowers to no
    // copy). Masks still apply: that is computation, not movement.
    if (n == 1 && kind != RedistributeKind::ApplyMask) {
      current_[static_cast<size_t>(mesh_dim)] = std::move(after);
      return;
    }
    double bytes = local_bytes();
    auto collective = [&](dist::Collective which, double counted) {
      step.bytes = counted;
      step.seconds = dist::collective_cost(which, n, counted, topology_.link(mesh_dim));
    };
    switch (kind) {
      case RedistributeKind::AllGather:
        collective(dist::Collective::AllGather, bytes * static_cast<double>(n));
        break;
      case RedistributeKind::AllReduce:
        collective(dist::Collective::AllReduce, bytes);
        break;
      case RedistributeKind::ReduceScatter:
        collective(dist::Collective::ReduceScatter, bytes);
        break;
      case RedistributeKind::AllToAll:
        collective(dist::Collective::AllToAll, bytes);
        break;
      default:
        break;
    }
    current_[static_cast<size_t>(mesh_dim)] = std::move(after);
    step.after = current_;
    steps_.push_back(std::move(step));
  }

  void apply_masks() {
    for (size_t i = 0; i < current_.size(); ++i) {
      if (std::holds_alternative<MaskPartial>(current_[i])) {
        add(RedistributeKind::ApplyMask, static_cast<int64_t>(i), Partial{ReduceOp::Sum});
      }
    }
  }

  // An all_to_all on mesh dim `i` turning Shard(k) into Shard(j) in one step, when it is
  // the only change on both tensor dims and both split evenly (see redistribute.h).
  bool can_all_to_all(size_t i, int64_t k, int64_t j) const {
    if (j < 0 || j == k) return false;
    std::vector<int64_t> from_k = sharding_dims(current_, k);
    std::vector<int64_t> to_k = sharding_dims(to_, k);
    std::vector<int64_t> from_j = sharding_dims(current_, j);
    std::vector<int64_t> to_j = sharding_dims(to_, j);
    const std::vector<int64_t> only{static_cast<int64_t>(i)};
    if (suffix(from_k, common_prefix(from_k, to_k)) != only) return false;
    size_t kept_j = common_prefix(from_j, to_j);
    if (kept_j != from_j.size() || suffix(to_j, kept_j) != only) return false;
    const Shape& shape = spec_.meta.shape;
    return shape[static_cast<size_t>(k)] % product_of_sizes(spec_.mesh, from_k) == 0 &&
           shape[static_cast<size_t>(j)] % product_of_sizes(spec_.mesh, to_j) == 0;
  }

  void gather_shards() {
    // Mesh dims whose Shard must go: past the common prefix of current and target nesting.
    std::vector<bool> gather(current_.size(), false);
    for (int64_t k = 0; k < spec_.meta.ndim(); ++k) {
      std::vector<int64_t> from_k = sharding_dims(current_, k);
      std::vector<int64_t> to_k = sharding_dims(to_, k);
      for (int64_t i : suffix(from_k, common_prefix(from_k, to_k))) gather[static_cast<size_t>(i)] = true;
    }
    for (size_t i = current_.size(); i-- > 0;) {
      if (!gather[i]) continue;
      int64_t k = shard_dim_of(current_[i]);
      int64_t j = shard_dim_of(to_[i]);
      if (can_all_to_all(i, k, j)) {
        add(RedistributeKind::AllToAll, static_cast<int64_t>(i), Shard{j}, k, j);
      } else {
        add(RedistributeKind::AllGather, static_cast<int64_t>(i), Replicate{}, k);
      }
    }
  }

  void reduce_partials() {
    // The last mesh dim's reduction is the innermost (see the simulation convention in strategy.h).
    for (size_t i = current_.size(); i-- > 0;) {
      if (!is_partial(current_[i]) || current_[i] == to_[i]) continue;
      ReduceOp reduce = partial_reduce(current_[i]);
      int64_t j = shard_dim_of(to_[i]);
      if (j >= 0) {
        std::vector<int64_t> from_j = sharding_dims(current_, j);
        std::vector<int64_t> to_j = sharding_dims(to_, j);
        size_t kept = common_prefix(from_j, to_j);
        if (kept == from_j.size() && suffix(to_j, kept) == std::vector<int64_t>{static_cast<int64_t>(i)}) {
          add(RedistributeKind::ReduceScatter, static_cast<int64_t>(i), Shard{j}, j, -1, reduce);
          continue;
        }
      }
      add(RedistributeKind::AllReduce, static_cast<int64_t>(i), Replicate{}, -1, -1, reduce);
    }
  }

  void shard_and_partition() {
    for (size_t i = 0; i < current_.size(); ++i) {
      if (current_[i] == to_[i]) continue;
      PX_ASSERT(std::holds_alternative<Replicate>(current_[i]));
      if (int64_t j = shard_dim_of(to_[i]); j >= 0) {
        add(RedistributeKind::LocalSlice, static_cast<int64_t>(i), to_[i], j);
      } else {
        add(RedistributeKind::LocalPartition, static_cast<int64_t>(i), to_[i], -1, -1, partial_reduce(to_[i]));
      }
    }
  }

  const DTensorSpec& spec_;
  std::vector<Placement> to_;
  const dist::MeshTopology& topology_;
  std::vector<Placement> current_;
  std::vector<RedistributeStep> steps_;
};

}  // namespace

std::string redistribute_kind_name(RedistributeKind kind) {
  switch (kind) {
    case RedistributeKind::ApplyMask:
      return "apply_mask";
    case RedistributeKind::AllGather:
      return "all_gather";
    case RedistributeKind::AllReduce:
      return "all_reduce";
    case RedistributeKind::ReduceScatter:
      return "reduce_scatter";
    case RedistributeKind::AllToAll:
      return "all_to_all";
    case RedistributeKind::LocalSlice:
      return "local_slice";
    case RedistributeKind::LocalPartition:
      return "local_partition";
  }
  return "?";
}

std::string RedistributePlan::str() const {
  std::string text = placements_str(from.placements) + " -> " + placements_str(to) + ":";
  if (steps.empty()) return text + " nothing to do";
  for (size_t s = 0; s < steps.size(); ++s) {
    const RedistributeStep& step = steps[s];
    text += (s ? " +" : "") + std::string(" ") + redistribute_kind_name(step.kind) + "(mesh dim " +
            std::to_string(step.mesh_dim);
    if (step.tensor_dim >= 0) text += ", dim " + std::to_string(step.tensor_dim);
    if (step.to_tensor_dim >= 0) text += " -> " + std::to_string(step.to_tensor_dim);
    if (step.kind == RedistributeKind::AllReduce || step.kind == RedistributeKind::ReduceScatter ||
        step.kind == RedistributeKind::LocalPartition) {
      text += ", " + reduce_op_name(step.reduce);
    }
    if (step.bytes > 0) text += ", " + std::to_string(static_cast<int64_t>(step.bytes)) + " B";
    text += ")";
  }
  return text;
}

RedistributePlan plan_redistribute(const DTensorSpec& from, std::span<const Placement> to,
                                   const dist::MeshTopology& topology) {
  DTensorSpec source = from.normalized();
  DTensorSpec target = source;
  target.placements.assign(to.begin(), to.end());
  target = target.normalized();
  if (static_cast<int64_t>(topology.links.size()) != source.mesh.ndim()) {
    throw ValueError("redistribute: the topology has " + std::to_string(topology.links.size()) + " link profiles for " +
                     source.mesh.str());
  }
  bool wants_mask = false;
  for (const Placement& placement : target.placements) wants_mask |= std::holds_alternative<MaskPartial>(placement);
  if (wants_mask) {
    if (target.placements == source.placements) return RedistributePlan{source, target.placements, {}, 0.0};
    throw ValueError("redistribute: " + placements_str(source.placements) + " -> " + placements_str(target.placements) +
                     ": MaskPartial is produced only by an op (an embedding over a row-sharded table), "
                     "never by a redistribution");
  }
  return Planner(source, target.placements, topology).run();
}

double redistribute_cost(const DTensorSpec& from, std::span<const Placement> to, const dist::MeshTopology& topology) {
  return plan_redistribute(from, to, topology).seconds;
}

namespace {

// all_reduce over 2 ranks, from the tables in docs/benchmarks.md (`parallax bench-collectives`):
// bytes and median seconds.
dist::LinkProfile fitted(std::string name, std::initializer_list<dist::CommSample> samples) {
  std::vector<dist::CommSample> points(samples);
  return dist::fit_link_profile(std::move(name), points, dist::Collective::AllReduce, 2);
}

}  // namespace

dist::LinkProfile threads_backend_profile() {
  return fitted(
      "threads (this machine)",
      {{8, 1.29e-6}, {1024, 1.00e-6}, {65536, 2.29e-6}, {1048576, 22.5e-6}, {16777216, 633e-6}, {67108864, 3842e-6}});
}

dist::LinkProfile mpi_backend_profile() {
  return fitted(
      "mpi (this machine)",
      {{8, 0.44e-6}, {1024, 1.23e-6}, {65536, 16.2e-6}, {1048576, 137e-6}, {16777216, 3223e-6}, {67108864, 41273e-6}});
}

}  // namespace px
