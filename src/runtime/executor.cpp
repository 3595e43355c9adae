#include "parallax/runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_map>

#include "parallax/core/error.h"
#include "parallax/ir/schedule.h"
#include "parallax/ops/dispatch.h"

namespace px::runtime {

namespace {

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

Executor::Executor(ir::Graph graph) : graph_(std::move(graph)), schedule_(ir::make_schedule(graph_, "execute")) {}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs, ExecutionStats* stats, RunOptions options) const {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::vector<double> node_seconds;
  if (options.time_nodes) node_seconds.reserve(schedule_.steps.size());
  const BufferPoolStats pool_before = pool_->stats();
  BufferPoolScope pool_scope(options.pool_buffers ? pool_ : nullptr);
  ir::check_run_inputs(graph_, inputs, "execute");
  MemoryTracker memory;
  // The inputs are held (by the caller) for the whole run: one reference each that is never dropped.
  for (const Tensor& input : inputs) memory.acquire(input);
  double input_bytes = memory.current();

  std::vector<Tensor> slots(static_cast<size_t>(schedule_.num_slots));
  auto put = [&](int64_t slot, Tensor value) {
    memory.acquire(value);
    slots[static_cast<size_t>(slot)] = std::move(value);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (schedule_.input_slots[i] >= 0) put(schedule_.input_slots[i], inputs[i]);
  }
  std::vector<Tensor> args;
  for (size_t index = 0; index < schedule_.steps.size(); ++index) {
    const ir::Node& node = graph_.nodes()[index];
    const ir::Schedule::Step& step = schedule_.steps[index];
    args.clear();
    for (int64_t slot : step.inputs) args.push_back(slots[static_cast<size_t>(slot)]);
    const Clock::time_point node_start = options.time_nodes ? Clock::now() : Clock::time_point();
    std::vector<Tensor> results = call(*node.op, args, node.attrs);
    if (options.time_nodes) node_seconds.push_back(std::chrono::duration<double>(Clock::now() - node_start).count());
    ir::check_node_results(graph_, node, results, "execute");
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
  outputs.reserve(schedule_.output_slots.size());
  for (int64_t slot : schedule_.output_slots) outputs.push_back(slots[static_cast<size_t>(slot)]);
  if (stats) {
    stats->peak_bytes = memory.peak();
    stats->input_bytes = input_bytes;
    stats->nodes = static_cast<int64_t>(schedule_.steps.size());
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
