#include "plan/trws.h"

#include <algorithm>
#include <limits>

namespace px::plan {
namespace {}  // namespace

Trws::Trws(const Model& model) : model_(model) {
  const int32_t n = model.num_nodes();
  const auto incidences = static_cast<int64_t>(model.incidence.size());
  message_offset_.resize(incidences + 1, 0);
  weight_.resize(n);
  for (int32_t k = 0; k < n; ++k) {
    int32_t earlier = 0;
    int32_t later = 0;
    for (int64_t i = model.incidence_offset[k]; i < model.incidence_offset[k + 1]; ++i) {
      message_offset_[i + 1] = message_offset_[i] + model.num_strategies(k);
      const ModelIncidence& inc = model.incidence[i];
      (inc.other < k ? earlier : later) += 1;
    }
    weight_[k] = 1.0 / std::max({earlier, later, 1});
  }
  messages_.assign(message_offset_[incidences], 0.0);
  // NaN equals nothing, so every leaf sends its first message.
  leaf_unary_.assign(model.cost.size(), std::numeric_limits<double>::quiet_NaN());
}

void Trws::iterate(const std::vector<double>& unary, std::vector<int32_t>& x, Clock::time_point deadline) {
  if (pass(unary, true, &x, deadline)) pass(unary, false, nullptr, deadline);
}

bool Trws::pass(const std::vector<double>& unary, bool forward, std::vector<int32_t>* x, Clock::time_point deadline) {
  const int32_t n = model_.num_nodes();
  for (int32_t step = 0; step < n; ++step) {
    if ((step & 255) == 255 && Clock::now() >= deadline) return false;
    const int32_t k = forward ? step : n - 1 - step;
    const int32_t strategies = model_.num_strategies(k);
    const int64_t begin = model_.incidence_offset[k];
    const int64_t end = model_.incidence_offset[k + 1];
    belief_.assign(unary.begin() + model_.strategy_offset[k], unary.begin() + model_.strategy_offset[k + 1]);
    for (int64_t i = begin; i < end; ++i) {
      const double* in = messages_.data() + message_offset_[i];
      for (int32_t s = 0; s < strategies; ++s) belief_[s] += in[s];
    }
    if (x != nullptr) {
      // Decode: earlier nodes are decided (their edge costs exactly), later ones by their messages.
      scratch_.assign(unary.begin() + model_.strategy_offset[k], unary.begin() + model_.strategy_offset[k + 1]);
      for (int64_t i = begin; i < end; ++i) {
        const ModelIncidence& inc = model_.incidence[i];
        if (inc.other > k) {
          const double* in = messages_.data() + message_offset_[i];
          for (int32_t s = 0; s < strategies; ++s) scratch_[s] += in[s];
        } else {
          for (int32_t s = 0; s < strategies; ++s) scratch_[s] += model_.edge_cost(inc, s, (*x)[inc.other]);
        }
      }
      (*x)[k] = static_cast<int32_t>(std::min_element(scratch_.begin(), scratch_.end()) - scratch_.begin());
    }
    // Messages to the nodes after k in this pass's direction.
    const bool leaf = is_leaf(k);
    const double* own = unary.data() + model_.strategy_offset[k];
    if (leaf) {
      // A leaf's message to its one neighbour is min over s of unary(s) + edge(s, t): its belief
      // less the message it received is its unary alone. So it changes only with the unary costs
      // (the prices, once a round), not from pass to pass. 27k of the contest instance A's 35k
      // nodes are leaves: about 10% more rounds there.
      const ModelIncidence& inc = model_.incidence[begin];
      if (forward ? inc.other < k : inc.other > k) continue;
      double* seen = leaf_unary_.data() + model_.strategy_offset[k];
      if (std::equal(own, own + strategies, seen)) continue;
      std::copy(own, own + strategies, seen);
    }
    for (int64_t i = begin; i < end; ++i) {
      const ModelIncidence& inc = model_.incidence[i];
      if (forward ? inc.other < k : inc.other > k) continue;
      // A message into a leaf matters only for decoding it, and the forward pass decodes a leaf
      // from its earlier neighbour's strategy, not from a message.
      if (forward && is_leaf(inc.other)) continue;
      const double* in = messages_.data() + message_offset_[i];
      scratch_.resize(strategies);
      if (leaf) {
        std::copy(own, own + strategies, scratch_.begin());
      } else {
        for (int32_t s = 0; s < strategies; ++s) scratch_[s] = weight_[k] * belief_[s] - in[s];
      }
      const int32_t theirs = model_.num_strategies(inc.other);
      double* out = messages_.data() + message_offset_[inc.reverse];
      const ModelEdge& e = model_.edges[inc.edge];
      const double* matrix = model_.matrix(e);
      std::fill(out, out + theirs, kInfinity);
      if (inc.is_u) {  // k is the row side: matrix[s * theirs + t]
        for (int32_t s = 0; s < strategies; ++s) {
          const double base = scratch_[s];
          const double* row = matrix + int64_t{s} * theirs;
          for (int32_t t = 0; t < theirs; ++t) out[t] = std::min(out[t], base + row[t]);
        }
      } else {  // k is the column side: matrix[t * strategies + s]
        for (int32_t t = 0; t < theirs; ++t) {
          const double* row = matrix + int64_t{t} * strategies;
          double best = kInfinity;
          for (int32_t s = 0; s < strategies; ++s) best = std::min(best, scratch_[s] + row[s]);
          out[t] = best;
        }
      }
      const double lowest = *std::min_element(out, out + theirs);
      for (int32_t t = 0; t < theirs; ++t) out[t] -= lowest;
    }
  }
  return true;
}

}  // namespace px::plan
