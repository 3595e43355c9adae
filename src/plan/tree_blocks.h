#pragma once
// Tree-block coordinate descent for the fast solver (internal).
//
// A block is a set of nodes whose induced subgraph is a tree. With every node outside the block
// held at its current strategy, the best strategies for the whole block follow exactly from one
// dynamic program over the tree (leaves to root, then back), in time linear in the block's edge
// matrices. Blocks are grown by breadth-first search from a root, admitting a node only when
// exactly one of its neighbours is already inside (so the induced subgraph stays a tree); the
// contest graphs are sparse (about 1.5 edges per node), so one block often spans thousands of
// nodes and moves whole chains at once, which single-node moves cannot do when most strategy
// pairs of an edge are prohibitively expensive.

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "plan/model.h"

namespace px::plan {

// How far a block grows: at most `max_size` nodes, and past the root only nodes with at most
// `max_degree` neighbours (a hub with thousands of edges would make every block near it pay for
// all of them; as a fixed neighbour it costs one matrix entry per edge).
struct BlockLimits {
  int32_t max_size = std::numeric_limits<int32_t>::max();
  int32_t max_degree = std::numeric_limits<int32_t>::max();
};

class TreeBlockSolver {
 public:
  explicit TreeBlockSolver(const Model& model);

  // Grows a block from `root` (within `limits`) and sets its nodes to the exact optimum of
  // sum unary[strategy] + edge costs with all other nodes fixed. A strategy s of node k is only
  // allowed when usage(s) <= usage_cap[k] (pass nullptr for no cap). Ties keep the current
  // strategy. Returns the objective change: <= 0 when every current strategy is allowed; when one
  // is not (a cap below a node's current usage forces it to move), it may be positive.
  double solve_block(int32_t root, const std::vector<double>& unary, const double* usage_cap, BlockLimits limits,
                     std::vector<int32_t>& x);

  // The block of the last solve_block and its strategies before that call (to undo it).
  const std::vector<int32_t>& block() const { return order_; }
  const std::vector<int32_t>& previous() const { return previous_; }

  // Blocks from every node in a random order that is not yet in a block of this sweep, until the
  // deadline (a sweep of a large model takes long enough to overrun a time limit).
  // Returns the number of nodes whose strategy changed.
  int64_t sweep(const std::vector<double>& unary, const double* usage_cap, BlockLimits limits, std::vector<int32_t>& x,
                std::mt19937_64& rng, Clock::time_point deadline);

 private:
  void grow(int32_t root, BlockLimits limits);
  void release();

  const Model& model_;
  std::vector<int32_t> position_;          // node -> index in order_, or -1 outside the block
  std::vector<int32_t> inside_count_;      // node -> neighbours inside the block
  std::vector<int32_t> touched_;           // nodes whose inside_count_ is non-zero
  std::vector<int32_t> order_;             // block nodes, breadth-first
  std::vector<int64_t> parent_incidence_;  // per block position: incidence index towards the parent, -1 at the root
  std::vector<int64_t> value_offset_;      // per block position: into values_
  std::vector<double> values_;             // per block node and strategy: best cost of its subtree
  std::vector<int64_t> choice_offset_;     // per block position: into best_child_ (sized by the parent's strategies)
  std::vector<int32_t> best_child_;        // per parent strategy: the child's best strategy
  std::vector<int32_t> previous_;
  std::vector<uint8_t> covered_;
};

}  // namespace px::plan
