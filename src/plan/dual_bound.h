#pragma once
// A lower bound on the model's optimum for the fast solver (internal).
//
// The dual of the problem's LP relaxation: give every edge e = (u, v) two messages m_eu(s) and
// m_ev(t) with m_eu(s) + m_ev(t) <= cost_e(s, t) for every pair. Then each solution's cost is at
// least the sum over nodes of its node cost plus the messages into it, so the sum over nodes of
// their least such belief, plus the model's constant, is below every solution's cost. MPLP's edge
// update (Globerson and Jaakkola, 2007) keeps the condition and never lowers the sum, so passes
// over the edges only raise the bound; it is tight on trees and where the relaxation is.
//
// The forbidden marks (1e18) are +infinity here, not numbers: a message that is infinite for a
// strategy proves that no solution free of marks uses it, so the strategy drops out of every
// minimum and what is left stays finite (the fast solver's own messages, trws.h, carry the marks
// as numbers and cannot give a bound: their sums cancel 1e18 against 1e18). The bound then holds
// for every solution without a forbidden pair, which includes the optimum whenever one such
// solution exists (the best found shows it). Sums run in long double.
//
// With the memory limit priced (lambda_t >= 0 per step), the bound of the priced problem less
// sum_t lambda_t * capacity_t bounds the constrained optimum (weak duality): the caller passes the
// priced costs and subtracts.

#include <cstdint>
#include <vector>

#include "plan/model.h"

namespace px::plan {

class DualBound {
 public:
  explicit DualBound(const Model& model);

  // `passes` forward and backward passes of edge updates for these per-strategy costs (forbidden
  // marks as +infinity; the messages persist, so after the costs change a few passes go on from
  // where the last ones stopped), then the bound: at most the cost (these costs, the model's
  // edges and its constant) of every solution free of forbidden marks; -infinity when the marks
  // rule every solution out.
  double improve(const std::vector<double>& unary, int passes);

 private:
  void update(int64_t incidence);  // the edge at this incidence, from its row (u) side

  const Model& model_;
  std::vector<int64_t> message_offset_;  // per incidence: the edge's message into the incidence's node
  std::vector<double> messages_;
  std::vector<double> belief_;  // per strategy: node cost plus every message into the node
  std::vector<double> rest_u_, rest_v_, new_u_, new_v_;
};

}  // namespace px::plan
