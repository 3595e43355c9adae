#pragma once
// A per-rank graph executor: ir::interpret's node-by-node evaluation through the dispatcher
// (every intermediate released right after its last use), with the liveness worked out once
// per graph, since a rank runs the same graph every training step, and with a record of the
// memory the run held.
//
// Buffers come from a BufferPool the executor owns (core/buffer_pool.h): a buffer freed after
// its last use goes back to the pool, and the next allocation of its size, in this run or a
// later one, reuses it; from the second run of a training step on, nearly every allocation is a
// reuse (ExecutionStats says how many).
//
// Memory is counted by storage: the bytes of every distinct dense Storage the executor holds
// (a view shares its base's storage and adds nothing; an op that returns a view of an input
// adds nothing). The inputs count for the whole run: the caller holds them anyway, so their
// memory is in use whether or not the graph still reads them. Outputs count from the node that
// makes them to the end. Meta, proxy and subclass tensors hold no storage and count 0, and
// scratch memory a kernel allocates and frees inside one call is not seen.

#include <cstdint>
#include <memory>
#include <vector>

#include "parallax/core/buffer_pool.h"
#include "parallax/core/tensor.h"
#include "parallax/ir/graph.h"
#include "parallax/ir/schedule.h"

namespace px::runtime {

struct ExecutionStats {
  // The largest total, over the run, of the bytes of distinct storages held: measured after
  // each node's results arrive and before its dead inputs are released (the moment both live).
  double peak_bytes = 0;
  double input_bytes = 0;  // bytes of the distinct storages of the inputs
  int64_t nodes = 0;       // nodes run
  double seconds = 0;      // wall time of the run, checks included
  // Per node, in graph order, the wall time of its call (dispatch and kernel) when the run was
  // asked to time nodes (RunOptions::time_nodes); empty otherwise.
  std::vector<double> node_seconds;
  // Buffers the run's ops allocated, and how many of them reused memory freed earlier (by this
  // run or an earlier one) from the executor's pool; 0 and 0 when the run did not pool. Runs of
  // one executor on several threads at once share the pool, and these counts.
  int64_t allocations = 0;
  int64_t reused_allocations = 0;
  // Bytes the executor's pool holds from the system after the run: buffers in use (outputs
  // included) plus freed ones kept for reuse.
  double pool_bytes = 0;
};

struct RunOptions {
  bool time_nodes = false;   // fill ExecutionStats::node_seconds (two clock reads per node)
  bool pool_buffers = true;  // allocate the run's buffers from the executor's BufferPool
};

class Executor {
 public:
  // Copies the graph and precomputes, for each node, the values it is the last reader of.
  // ValueError for a node without an op, a node that reads a value defined by no input or
  // earlier node, or an output that is defined nowhere (the checks ir::verify would make).
  explicit Executor(ir::Graph graph);

  // One tensor per graph input, in order, with exactly that input's shape and dtype
  // (ValueError naming the input otherwise). Returns one tensor per graph output. `stats`, if
  // given, is overwritten. Const: one Executor may run on several threads at once.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, ExecutionStats* stats = nullptr,
                          RunOptions options = {}) const;

  const ir::Graph& graph() const { return graph_; }
  // The pool the runs allocate from (shared by copies of this executor).
  const std::shared_ptr<BufferPool>& pool() const { return pool_; }

 private:
  ir::Graph graph_;
  ir::Schedule schedule_;  // slots and last uses (ir/schedule.h, shared with ir::interpret)
  std::shared_ptr<BufferPool> pool_ = std::make_shared<BufferPool>();
};

// Executor(graph).run(inputs, stats), for a graph run once.
std::vector<Tensor> execute(const ir::Graph& graph, const std::vector<Tensor>& inputs, ExecutionStats* stats = nullptr);

}  // namespace px::runtime
