#pragma once
// Partition crossover (internal to the fast solver): the best of two solutions, taken part by
// part. Where two solutions `base` and `other` differ, the differing nodes fall into connected
// components of the graph restricted to them. Every edge leaving a component ends at a node both
// solutions agree on, so a component's change of cost, switched from base to other, depends on
// that component alone: the costs of switching components add up exactly, and base with every
// cheaper component of other switched in costs at most min(cost(base), cost(other)) when memory
// does not bind (Tinós, Whitley and Ochoa's partition crossover for pseudo-Boolean functions,
// here on the general pairwise cost). Memory couples components only through the summed usage
// at each step; the caller switches components one by one and keeps those that fit.

#include <cstdint>
#include <vector>

#include "plan/model.h"
#include "plan/search_state.h"

namespace px::plan {

struct DifferenceComponent {
  std::vector<int32_t> nodes;
  // cost(base) - cost(base with this component's nodes at other's strategies): > 0 when other's
  // part is cheaper. Exact up to rounding (summed in long double).
  double gain = 0;
};

// The components where `base` and `other` (model strategies, one per model node) differ, in order
// of gain, largest first (ties by their least node, so the order is deterministic).
std::vector<DifferenceComponent> difference_components(const Model& model, const std::vector<int32_t>& base,
                                                       const std::vector<int32_t>& other);

// Switches into `state` (a feasible solution) every part of `other` that gains more than
// `least_gain`, largest gain first, keeping those after which every step still fits and undoing
// the others. Returns the number of parts kept; the state stays feasible.
int64_t cross_into(const Model& model, SearchState& state, const std::vector<int32_t>& other, double least_gain);

}  // namespace px::plan
