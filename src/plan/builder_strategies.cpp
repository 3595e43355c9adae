// Strategy lists of graph inputs and nodes, and cached redistribution costs (see plan/builder.h).

#include <algorithm>

#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "parallax/dtensor/redistribute.h"
#include "parallax/dtensor/spec.h"
#include "plan/builder_internal.h"

namespace px::plan::detail {

bool leaves_empty_shard(const Shape& shape, std::span<const Placement> placements, const dist::DeviceMesh& mesh) {
  const auto rank = static_cast<int64_t>(shape.size());
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t size = shape[static_cast<size_t>(dim)];
    if (size == 0) continue;
    // The distinct block sizes along `dim`, level by level in mesh-dim (nesting) order.
    std::vector<int64_t> sizes{size};
    for (size_t m = 0; m < placements.size(); ++m) {
      const auto* shard = std::get_if<Shard>(&placements[m]);
      if (shard == nullptr || (shard->dim < 0 ? shard->dim + rank : shard->dim) != dim) continue;
      int64_t parts = mesh.size(static_cast<int64_t>(m));
      std::vector<int64_t> next;
      for (int64_t block : sizes) {
        // torch.chunk sizes are non-increasing: the first and last shards bound the rest.
        next.push_back(dist::shard_size(block, parts, 0));
        next.push_back(dist::shard_size(block, parts, parts - 1));
      }
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      if (next.front() == 0) return true;
      sizes = std::move(next);
    }
  }
  return false;
}

std::vector<NdStrategy> input_strategies(const TensorMeta& meta, const dist::DeviceMesh& mesh) {
  std::vector<Placement> options{Replicate{}};
  for (int64_t d = 0; d < meta.ndim(); ++d) options.push_back(Shard{d});
  auto ndim = static_cast<size_t>(mesh.ndim());
  std::vector<size_t> pick(ndim, 0);
  std::vector<NdStrategy> result;
  while (true) {
    std::vector<Placement> placements;
    for (size_t d = 0; d < ndim; ++d) placements.push_back(options[pick[d]]);
    if (!leaves_empty_shard(meta.shape, placements, mesh)) {
      result.push_back(NdStrategy{{}, {std::move(placements)}});
    }
    // Odometer, mesh dim 0 slowest: all-Replicate comes first.
    size_t d = ndim;
    while (d > 0) {
      --d;
      if (++pick[d] < options.size()) break;
      pick[d] = 0;
      if (d == 0) return result;
    }
    if (ndim == 0) return result;
  }
}

const OpEntry& StrategyCache::entry(const ir::Node& node, const std::vector<TensorMeta>& inputs,
                                    const std::vector<TensorMeta>& outputs) {
  std::string key = node.op->name + node.attrs.str() + "|";
  for (const TensorMeta& meta : inputs) key += meta.str() + ",";
  auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;

  OpEntry entry;
  if (!node.op->sharding && inputs.empty()) {
    // A factory (full, arange, random fills) outside any DTensor rule runs whole on every rank.
    NdStrategy replicated;
    replicated.outputs.assign(outputs.size(), std::vector<Placement>(static_cast<size_t>(mesh_.ndim()), Replicate{}));
    entry.strategies.push_back(std::move(replicated));
    entry.seconds.push_back(op_seconds(*node.op, inputs, outputs, node.attrs, device_));
    double bytes = 0;
    for (const TensorMeta& output : outputs) bytes += static_cast<double>(output.nbytes());
    entry.bytes.push_back(bytes);
    return cache_.emplace(std::move(key), std::move(entry)).first->second;
  }
  const std::vector<int64_t> origin(static_cast<size_t>(mesh_.ndim()), 0);  // holds the largest shards
  for (NdStrategy& strategy : expand_strategies(*node.op, inputs, node.attrs, mesh_)) {
    bool empty = false;
    for (size_t i = 0; i < inputs.size() && !empty; ++i) {
      empty = leaves_empty_shard(inputs[i].shape, strategy.inputs[i], mesh_);
    }
    for (size_t o = 0; o < outputs.size() && !empty; ++o) {
      empty = leaves_empty_shard(outputs[o].shape, strategy.outputs[o], mesh_);
    }
    // The first (all-Replicate) strategy always stays: nothing is sharded in it.
    if (empty && !entry.strategies.empty()) continue;
    LocalCallPlan local = plan_local_call(*node.op, inputs, node.attrs, strategy, mesh_, origin);
    double seconds = op_seconds(*node.op, local.local_inputs, local.local_outputs, local.attrs, device_);
    if (node.op->localize_attrs) {
      // An op whose rank call depends on where its block sits (a query-split causal attention:
      // the last rank's queries see the most keys) is priced at the slower of the two ends,
      // since every rank waits for the slowest at the next collective.
      const LocalCallPlan last = plan_local_call(*node.op, inputs, node.attrs, strategy, mesh_, last_);
      seconds = std::max(seconds, op_seconds(*node.op, last.local_inputs, last.local_outputs, last.attrs, device_));
    }
    entry.seconds.push_back(seconds);
    double bytes = 0;
    for (size_t o = 0; o < local.local_outputs.size(); ++o) {
      if (o == 0 && node.op->traits.view) continue;  // aliases input 0
      bytes += static_cast<double>(local.local_outputs[o].nbytes());
    }
    entry.bytes.push_back(bytes);
    entry.strategies.push_back(std::move(strategy));
  }
  return cache_.emplace(std::move(key), std::move(entry)).first->second;
}

namespace {

// Two ints per placement.
std::vector<int64_t> encode_placements(const std::vector<Placement>& placements) {
  std::vector<int64_t> key;
  key.reserve(2 * placements.size());
  for (const Placement& placement : placements) {
    if (const auto* shard = std::get_if<Shard>(&placement)) {
      key.push_back(1);
      key.push_back(shard->dim);
    } else if (const auto* partial = std::get_if<Partial>(&placement)) {
      key.push_back(2);
      key.push_back(static_cast<int64_t>(partial->reduce));
    } else if (const auto* mask = std::get_if<MaskPartial>(&placement)) {
      key.push_back(3);
      key.push_back(mask->num_embeddings);
    } else {
      key.push_back(0);
      key.push_back(0);
    }
  }
  return key;
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

size_t Interner::KeyHash::operator()(const std::vector<int64_t>& key) const {
  uint64_t hash = 0;
  for (int64_t value : key) hash = mix(hash ^ static_cast<uint64_t>(value));
  return static_cast<size_t>(hash);
}

int64_t Interner::placements(const std::vector<Placement>& list) {
  auto [it, fresh] = list_ids_.try_emplace(encode_placements(list), static_cast<int64_t>(lists_.size()));
  if (fresh) lists_.push_back(list);
  return it->second;
}

int64_t Interner::meta(const TensorMeta& meta) {
  return meta_ids_.try_emplace(meta.str(), static_cast<int64_t>(meta_ids_.size())).first->second;
}

double RedistributeCache::seconds(const TensorMeta& meta, int64_t meta_id, int64_t from, int64_t to) {
  if (from == to) return 0.0;
  // 24 bits of meta id, 20 of each placement id: far more than a training graph has.
  PX_ASSERT(meta_id < (1 << 24) && from < (1 << 20) && to < (1 << 20));
  uint64_t key = static_cast<uint64_t>(meta_id) << 40 | static_cast<uint64_t>(from) << 20 | static_cast<uint64_t>(to);
  auto found = cache_.find(key);
  if (found != cache_.end()) return found->second;
  DTensorSpec spec{mesh_, interner_.placements_of(from), meta};
  double cost = redistribute_cost(spec, interner_.placements_of(to), topology_);
  cache_.emplace(key, cost);
  return cost;
}

}  // namespace px::plan::detail
