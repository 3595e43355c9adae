#include "parallax/runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>

#include "parallax/core/error.h"
#include "parallax/ir/printer.h"
#include "parallax/ops/dispatch.h"

namespace px::runtime {

namespace {

std::string graph_label(const ir::Graph& graph) { return "execute: graph '" + graph.name() + "'"; }

std::string input_label(const ir::Graph& graph, size_t index) {
  ir::ValueId id = graph.inputs()[index];
  const std::string& name = graph.value(id).name;
  std::string quoted_name = name.empty() ? "" : " \"" + name + "\"";
  return "input " + std::to_string(index) + " (%" + std::to_string(id) + quoted_name + ")";
}

void check_inputs(const ir::Graph& graph, const std::vector<Tensor>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    throw ValueError(graph_label(graph) + " takes " + std::to_string(graph.inputs().size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw ValueError(graph_label(graph) + " " + input_label(graph, i) + " is undefined");
    const TensorMeta& expected = graph.meta(graph.inputs()[i]);
    if (inputs[i].meta_info() != expected) {
      throw ValueError(graph_label(graph) + " " + input_label(graph, i) + " expects " + expected.str() + ", got " +
                       inputs[i].meta_info().str());
    }
  }
}

void check_outputs(const ir::Graph& graph, const ir::Node& node, const std::vector<Tensor>& results) {
  bool ok = results.size() == node.outputs.size();
  for (size_t i = 0; ok && i < results.size(); ++i) ok = results[i].meta_info() == graph.meta(node.outputs[i]);
  if (ok) return;
  std::string got;
  for (size_t i = 0; i < results.size(); ++i) got += (i ? ", " : "") + results[i].meta_info().str();
  throw ValueError(graph_label(graph) + ": " + ir::node_label(node) + " produced " + got +
                   ", which differs from the graph's recorded types (run verify() on the graph)");
}

// Bytes held, by storage identity: a storage counts once however many values (views) share it.
class MemoryTracker {
 public:
  void acquire(const Tensor& tensor) {
    const Storage* storage = storage_of(tensor);
    if (!storage) return;
    if (refs_[storage]++ == 0) {
      current_ += static_cast<double>(storage->nbytes());
      peak_ = std::max(peak_, current_);
    }
  }
  void release(const Tensor& tensor) {
    const Storage* storage = storage_of(tensor);
    if (!storage) return;
    auto it = refs_.find(storage);
    if (--it->second == 0) {
      current_ -= static_cast<double>(storage->nbytes());
      refs_.erase(it);
    }
  }
  double current() const { return current_; }
  double peak() const { return peak_; }

 private:
  static const Storage* storage_of(const Tensor& tensor) {
    return tensor.defined() && tensor.is_dense() ? tensor.storage().get() : nullptr;
  }
  std::unordered_map<const Storage*, int64_t> refs_;
  double current_ = 0;
  double peak_ = 0;
};

}  // namespace

Executor::Executor(ir::Graph graph) : graph_(std::move(graph)) {
  const std::vector<ir::Node>& nodes = graph_.nodes();
  const auto end = static_cast<int64_t>(nodes.size());
  // The last reader of each value; graph outputs are read "after" every node.
  std::unordered_map<ir::ValueId, int64_t> last;
  for (int64_t index = 0; index < end; ++index) {
    for (ir::ValueId input : nodes[static_cast<size_t>(index)].inputs) last[input] = index;
  }
  for (ir::ValueId output : graph_.outputs()) last[output] = end;

  // Only values someone reads get a slot; the rest are dropped as soon as they are made.
  std::unordered_map<ir::ValueId, int64_t> slot_of;
  auto define = [&](ir::ValueId id) -> int64_t {
    if (!last.count(id)) return -1;
    auto [it, inserted] = slot_of.emplace(id, num_slots_);
    if (inserted) ++num_slots_;
    return it->second;
  };
  auto missing = [&](ir::ValueId id) {
    return "%" + std::to_string(id) + ", which no input or earlier node defines (run verify() on the graph)";
  };
  for (ir::ValueId input : graph_.inputs()) input_slots_.push_back(define(input));
  steps_.resize(nodes.size());
  for (int64_t index = 0; index < end; ++index) {
    const ir::Node& node = nodes[static_cast<size_t>(index)];
    Step& step = steps_[static_cast<size_t>(index)];
    if (!node.op) throw ValueError(graph_label(graph_) + ": " + ir::node_label(node) + " has no op");
    for (ir::ValueId input : node.inputs) {
      auto it = slot_of.find(input);
      if (it == slot_of.end())
        throw ValueError(graph_label(graph_) + ": " + ir::node_label(node) + " reads " + missing(input));
      step.inputs.push_back(it->second);
      if (last.at(input) == index &&
          std::find(step.release.begin(), step.release.end(), it->second) == step.release.end()) {
        step.release.push_back(it->second);
      }
    }
    for (ir::ValueId output : node.outputs) step.outputs.push_back(define(output));
  }
  for (ir::ValueId output : graph_.outputs()) {
    auto it = slot_of.find(output);
    if (it == slot_of.end()) throw ValueError(graph_label(graph_) + " returns " + missing(output));
    output_slots_.push_back(it->second);
  }
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs, ExecutionStats* stats, RunOptions options) const {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::vector<double> node_seconds;
  if (options.time_nodes) node_seconds.reserve(steps_.size());
  const BufferPoolStats pool_before = pool_->stats();
  BufferPoolScope pool_scope(options.pool_buffers ? pool_ : nullptr);
  check_inputs(graph_, inputs);
  MemoryTracker memory;
  // The inputs are held (by the caller) for the whole run: one reference each that is never dropped.
  for (const Tensor& input : inputs) memory.acquire(input);
  double input_bytes = memory.current();

  std::vector<Tensor> slots(static_cast<size_t>(num_slots_));
  auto put = [&](int64_t slot, Tensor value) {
    memory.acquire(value);
    slots[static_cast<size_t>(slot)] = std::move(value);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (input_slots_[i] >= 0) put(input_slots_[i], inputs[i]);
  }
  std::vector<Tensor> args;
  for (size_t index = 0; index < steps_.size(); ++index) {
    const ir::Node& node = graph_.nodes()[index];
    const Step& step = steps_[index];
    args.clear();
    for (int64_t slot : step.inputs) args.push_back(slots[static_cast<size_t>(slot)]);
    const Clock::time_point node_start = options.time_nodes ? Clock::now() : Clock::time_point();
    std::vector<Tensor> results = call(*node.op, args, node.attrs);
    if (options.time_nodes) node_seconds.push_back(std::chrono::duration<double>(Clock::now() - node_start).count());
    check_outputs(graph_, node, results);
    args.clear();
    // Count every result, read or not: each exists at this moment, next to the node's inputs.
    for (const Tensor& result : results) memory.acquire(result);
    for (int64_t slot : step.release) {
      memory.release(slots[static_cast<size_t>(slot)]);
      slots[static_cast<size_t>(slot)] = Tensor();
    }
    for (size_t i = 0; i < results.size(); ++i) {
      int64_t slot = step.outputs[i];
      if (slot >= 0) {
        slots[static_cast<size_t>(slot)] = std::move(results[i]);  // already counted above
      } else {
        memory.release(results[i]);
      }
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(output_slots_.size());
  for (int64_t slot : output_slots_) outputs.push_back(slots[static_cast<size_t>(slot)]);
  if (stats) {
    stats->peak_bytes = memory.peak();
    stats->input_bytes = input_bytes;
    stats->nodes = static_cast<int64_t>(steps_.size());
    stats->seconds = std::chrono::duration<double>(Clock::now() - start).count();
    stats->node_seconds = std::move(node_seconds);
    const BufferPoolStats pool_after = pool_->stats();
    stats->allocations = pool_after.allocations - pool_before.allocations;
    stats->reused_allocations = pool_after.reuses - pool_before.reuses;
    stats->pool_bytes = pool_after.system_bytes;
  }
  return outputs;
}

std::vector<Tensor> execute(const ir::Graph& graph, const std::vector<Tensor>& inputs, ExecutionStats* stats) {
  return Executor(graph).run(inputs, stats);
}

}  // namespace px::runtime
