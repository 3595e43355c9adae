// The fast solver's lower bound (see dual_bound.h).

#include "plan/dual_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace px::plan {

DualBound::DualBound(const Model& model) : model_(model) {
  const int32_t n = model.num_nodes();
  const auto incidences = static_cast<int64_t>(model.incidence.size());
  message_offset_.resize(incidences + 1, 0);
  for (int32_t k = 0; k < n; ++k) {
    for (int64_t i = model.incidence_offset[k]; i < model.incidence_offset[k + 1]; ++i) {
      message_offset_[i + 1] = message_offset_[i] + model.num_strategies(k);
    }
  }
  messages_.assign(message_offset_[incidences], 0.0);
  belief_.assign(model.cost.size(), 0.0);
}

double DualBound::improve(const std::vector<double>& unary, int passes) {
  const int32_t n = model_.num_nodes();
  for (int32_t k = 0; k < n; ++k) {
    for (int32_t s = 0; s < model_.num_strategies(k); ++s) {
      const double cost = unary[model_.strategy_offset[k] + s];
      double belief = is_forbidden_cost(cost) ? kInfinity : cost;
      for (int64_t i = model_.incidence_offset[k]; i < model_.incidence_offset[k + 1]; ++i) {
        belief += messages_[message_offset_[i] + s];
      }
      belief_[model_.strategy_offset[k] + s] = belief;
    }
  }
  for (int p = 0; p < passes; ++p) {
    for (int forward = 1; forward >= 0; --forward) {
      for (int32_t step = 0; step < n; ++step) {
        const int32_t k = forward ? step : n - 1 - step;
        for (int64_t i = model_.incidence_offset[k]; i < model_.incidence_offset[k + 1]; ++i) {
          if (model_.incidence[i].is_u) update(i);
        }
      }
    }
  }
  using Wide = long double;
  Wide total = model_.constant_cost;
  for (int32_t k = 0; k < n; ++k) {
    const double* belief = belief_.data() + model_.strategy_offset[k];
    const double least = *std::min_element(belief, belief + model_.num_strategies(k));
    if (std::isinf(least)) return -kInfinity;  // the marks rule out every strategy of this node
    total += least;
  }
  return static_cast<double>(total);
}

// MPLP's update of edge e = (u, v): with r_u = u's belief less e's message into u (and r_v so),
//   m_eu(s) = (min_t [cost(s, t) + r_v(t)] - r_u(s)) / 2,   m_ev(t) likewise,
// which keeps m_eu(s) + m_ev(t) <= cost(s, t) and does not lower min_s b_u + min_t b_v. A strategy
// with r infinite is ruled out already: its message becomes +infinity, which keeps it so.
void DualBound::update(int64_t incidence) {
  const ModelIncidence& inc = model_.incidence[incidence];
  const ModelEdge& e = model_.edges[inc.edge];
  const int32_t rows = model_.num_strategies(e.u);
  const int32_t columns = model_.num_strategies(e.v);
  double* into_u = messages_.data() + message_offset_[incidence];
  double* into_v = messages_.data() + message_offset_[inc.reverse];
  double* belief_u = belief_.data() + model_.strategy_offset[e.u];
  double* belief_v = belief_.data() + model_.strategy_offset[e.v];
  const auto rest = [](double belief, double message) { return std::isinf(belief) ? kInfinity : belief - message; };
  rest_u_.resize(rows);
  rest_v_.resize(columns);
  for (int32_t s = 0; s < rows; ++s) rest_u_[s] = rest(belief_u[s], into_u[s]);
  for (int32_t t = 0; t < columns; ++t) rest_v_[t] = rest(belief_v[t], into_v[t]);
  new_u_.assign(rows, kInfinity);
  new_v_.assign(columns, kInfinity);
  const double* matrix = model_.matrix(e);
  for (int32_t s = 0; s < rows; ++s) {
    const double* row = matrix + int64_t{s} * columns;
    const double r_u = rest_u_[s];
    for (int32_t t = 0; t < columns; ++t) {
      if (is_forbidden_cost(row[t])) continue;
      new_u_[s] = std::min(new_u_[s], row[t] + rest_v_[t]);
      new_v_[t] = std::min(new_v_[t], row[t] + r_u);
    }
  }
  for (int32_t s = 0; s < rows; ++s) {
    const double message = std::isinf(rest_u_[s]) || std::isinf(new_u_[s]) ? kInfinity : (new_u_[s] - rest_u_[s]) / 2;
    into_u[s] = message;
    belief_u[s] = std::isinf(message) ? kInfinity : rest_u_[s] + message;
  }
  for (int32_t t = 0; t < columns; ++t) {
    const double message = std::isinf(rest_v_[t]) || std::isinf(new_v_[t]) ? kInfinity : (new_v_[t] - rest_v_[t]) / 2;
    into_v[t] = message;
    belief_v[t] = std::isinf(message) ? kInfinity : rest_v_[t] + message;
  }
}

}  // namespace px::plan
