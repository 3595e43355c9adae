#pragma once
// Pieces of build_problem (internal; see plan/builder.h for the semantics).

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/dist/comm_cost.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dtensor/strategy.h"
#include "parallax/plan/builder.h"

namespace px::plan::detail {

// --- repeated layers (builder_layers.cpp) ---

struct Clustering {
  std::vector<int64_t> node_rep;   // per graph node: the graph node whose decision it shares (itself if none)
  std::vector<int64_t> input_rep;  // per graph input: likewise
  std::vector<LayerGroup> groups;  // sets of two or more identical layers
  // Per graph node: an id of the layer it belongs to (one per list and index; -1: none).
  std::vector<int64_t> node_layer;
};

// Identity mapping when `enabled` is false.
Clustering cluster_layers(const JointProgram& program, bool enabled);

// --- liveness (builder_liveness.cpp) ---

// Real time: step 0 holds the graph inputs, step n + 1 graph node n; `steps` = nodes + 1.
struct Liveness {
  int64_t steps = 0;
  std::vector<int64_t> input_end;  // per graph input: exclusive end of its interval (start 0)
  std::vector<int64_t> node_end;   // per graph node: exclusive end (start: its own step)
};

// `persistent[i]`: graph input i (a parameter or buffer) lives the whole step. `grad_only[o]`:
// graph output o is only a parameter's gradient (it does not stay live to the end).
Liveness compute_liveness(const JointProgram& program, const std::vector<bool>& persistent,
                          const std::vector<bool>& grad_only);

// Compressed time: the kept steps are step 0 and those of representative nodes.
class TimeCompression {
 public:
  explicit TimeCompression(const std::vector<bool>& kept_step);
  int64_t steps() const { return static_cast<int64_t>(kept_.size()); }
  // A real interval [start, end) mapped to compressed time (empty: start == end == 0 and false).
  bool map(int64_t start, int64_t end, int64_t& mapped_start, int64_t& mapped_end) const;

 private:
  std::vector<int64_t> kept_;  // real steps kept, ascending
};

// The largest number of the intervals [start, end) that hold one step in common.
int64_t max_overlap(std::vector<std::pair<int64_t, int64_t>> intervals);

// --- strategies and costs (builder_strategies.cpp) ---

// True when some rank's block of a tensor of this shape under these placements has a zero-size
// dim that the global tensor does not.
bool leaves_empty_shard(const Shape& shape, std::span<const Placement> placements, const dist::DeviceMesh& mesh);

// Every Replicate / Shard(d) combination for a graph input, all-Replicate first.
std::vector<NdStrategy> input_strategies(const TensorMeta& meta, const dist::DeviceMesh& mesh);

// A graph node's strategies (expand_strategies, filtered as builder.h says) with, per strategy,
// the seconds of one local call on the largest shard (mesh coordinate 0; for ops that localize
// their attributes, the slower of the first and the last coordinate) and the bytes of its local
// outputs.
struct OpEntry {
  std::vector<NdStrategy> strategies;
  std::vector<double> seconds;
  std::vector<double> bytes;
};

// OpEntry cached by (op, attributes, input metas).
class StrategyCache {
 public:
  StrategyCache(const dist::DeviceMesh& mesh, const DeviceProfile& device)
      : mesh_(mesh), device_(device), last_(mesh.shape()) {
    for (int64_t& coordinate : last_) --coordinate;
  }
  const OpEntry& entry(const ir::Node& node, const std::vector<TensorMeta>& inputs,
                       const std::vector<TensorMeta>& outputs);

 private:
  const dist::DeviceMesh& mesh_;
  const DeviceProfile& device_;
  std::vector<int64_t> last_;  // the mesh's last coordinate
  std::map<std::string, OpEntry> cache_;
};

// Small integer ids for placement lists and metas, so that the redistribution cache keys are
// three integers.
class Interner {
 public:
  int64_t placements(const std::vector<Placement>& list);
  const std::vector<Placement>& placements_of(int64_t id) const { return lists_[static_cast<size_t>(id)]; }
  int64_t meta(const TensorMeta& meta);

 private:
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& key) const;
  };
  std::unordered_map<std::vector<int64_t>, int64_t, KeyHash> list_ids_;
  std::vector<std::vector<Placement>> lists_;
  std::unordered_map<std::string, int64_t> meta_ids_;
};

// Redistribution seconds cached by (meta, from, to).
class RedistributeCache {
 public:
  RedistributeCache(const dist::DeviceMesh& mesh, const dist::MeshTopology& topology, const Interner& interner)
      : mesh_(mesh), topology_(topology), interner_(interner) {}
  // `from` and `to` are Interner placement ids; `meta_id` the Interner's id of `meta`.
  double seconds(const TensorMeta& meta, int64_t meta_id, int64_t from, int64_t to);

 private:
  const dist::DeviceMesh& mesh_;
  const dist::MeshTopology& topology_;
  const Interner& interner_;
  std::unordered_map<uint64_t, double> cache_;
};

// --- activation checkpointing (builder_checkpointing.cpp) ---

// Per plan.options.checkpointing, gives each candidate node (builder.h) its recomputing
// strategies and recompute_copies. Runs after fill_liveness, before the edges are priced.
void add_recompute_strategies(PlanProblem& plan, const JointProgram& program, const Clustering& clustering);

// --- mixed precision (builder_precision.cpp) ---

// Under plan.options.precision, forbids on the edge into each parameter gradient's cast back to
// the parameter's dtype the transfers that would reduce the gradient in the other dtype
// (PlanOptions::precision). `grad_output_of_input`: per graph input, its gradient's graph output
// or -1. ValueError for a reduce dtype that is neither side of the cast; InfeasiblePlan when no
// transfer is left.
void place_gradient_reductions(PlanProblem& plan, const JointProgram& program,
                               const std::vector<int64_t>& grad_output_of_input);

}  // namespace px::plan::detail
