#pragma once
// Sequential tree-reweighted message passing (TRW-S, Kolmogorov 2006) for the fast solver
// (internal): min-sum messages along the model's node order, forward then backward, each node's
// belief split evenly over its edges to earlier and later nodes. Unlike moves that change a few
// nodes while the rest stays put, messages carry the cost of a choice around cycles (a residual
// connection closes one in every layer), so the decoded solutions land in the right basin; the
// block descent then finishes them. Messages persist between calls, so after the unary costs
// change (new memory prices) a few passes pick up where the last ones stopped.

#include <cstdint>
#include <vector>

#include "plan/model.h"

namespace px::plan {

class Trws {
 public:
  explicit Trws(const Model& model);

  // One forward and one backward pass for these per-strategy node costs (replacing the model's);
  // the forward pass also decodes a solution into x (each node's best strategy given the earlier
  // nodes' decoded strategies and the later nodes' messages). At the deadline it stops where it is:
  // every message update is valid on its own, and x keeps its old strategies past that point.
  void iterate(const std::vector<double>& unary, std::vector<int32_t>& x,
               Clock::time_point deadline = Clock::time_point::max());

 private:
  // False when the deadline cut it short.
  bool pass(const std::vector<double>& unary, bool forward, std::vector<int32_t>* x, Clock::time_point deadline);
  bool is_leaf(int32_t k) const { return model_.incidence_offset[k + 1] - model_.incidence_offset[k] == 1; }

  const Model& model_;
  std::vector<int64_t> message_offset_;  // per incidence: its message into the incidence's node
  std::vector<double> messages_;
  std::vector<double> weight_;  // per node: 1 / max(earlier neighbours, later neighbours)
  std::vector<double> belief_, scratch_;
  // Per leaf (a node with one edge): the unary costs its last message was computed from.
  std::vector<double> leaf_unary_;
};

}  // namespace px::plan
