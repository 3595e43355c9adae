// Liveness intervals in real and compressed time (see plan/builder.h, "Memory").

#include <algorithm>
#include <map>
#include <tuple>

#include "parallax/core/error.h"
#include "plan/builder_internal.h"

namespace px::plan::detail {

Liveness compute_liveness(const JointProgram& program, const std::vector<bool>& persistent,
                          const std::vector<bool>& grad_only) {
  const ir::Graph& graph = program.graph;
  const auto& nodes = graph.nodes();
  Liveness live;
  live.steps = static_cast<int64_t>(nodes.size()) + 1;

  // Exclusive end of every value: one past its last reader, at least one past its definition.
  std::map<ir::ValueId, int64_t> end;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    end[graph.inputs()[i]] = persistent[i] ? live.steps : 1;
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    auto step = static_cast<int64_t>(n) + 1;
    for (ir::ValueId output : nodes[n].outputs) end[output] = step + 1;
    for (ir::ValueId input : nodes[n].inputs) end[input] = std::max(end[input], step + 1);
  }
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    if (!grad_only[o]) end[graph.outputs()[o]] = live.steps;
  }
  // A view keeps its base's storage alive: last readers first, so chains of views propagate.
  for (size_t n = nodes.size(); n-- > 0;) {
    const ir::Node& node = nodes[n];
    if (node.op->traits.view && !node.inputs.empty() && !node.outputs.empty()) {
      int64_t& base = end[node.inputs.front()];
      base = std::max(base, end[node.outputs.front()]);
    }
  }

  live.input_end.resize(graph.inputs().size());
  for (size_t i = 0; i < graph.inputs().size(); ++i) live.input_end[i] = end[graph.inputs()[i]];
  live.node_end.resize(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    int64_t last = static_cast<int64_t>(n) + 2;
    for (ir::ValueId output : nodes[n].outputs) last = std::max(last, end[output]);
    live.node_end[n] = last;
  }
  return live;
}

TimeCompression::TimeCompression(const std::vector<bool>& kept_step) {
  for (size_t s = 0; s < kept_step.size(); ++s) {
    if (kept_step[s]) kept_.push_back(static_cast<int64_t>(s));
  }
}

bool TimeCompression::map(int64_t start, int64_t end, int64_t& mapped_start, int64_t& mapped_end) const {
  // [first kept step >= start, last kept step <= end - 1], as compressed indices.
  auto first = std::lower_bound(kept_.begin(), kept_.end(), start);
  auto past_last = std::upper_bound(kept_.begin(), kept_.end(), end - 1);
  if (first >= past_last) {
    mapped_start = mapped_end = 0;
    return false;
  }
  mapped_start = first - kept_.begin();
  mapped_end = past_last - kept_.begin();
  return true;
}

int64_t max_overlap(std::vector<std::pair<int64_t, int64_t>> intervals) {
  // Sweep: +1 at a start, -1 at an end; an end and a start at the same step do not overlap.
  std::vector<std::pair<int64_t, int>> events;
  events.reserve(intervals.size() * 2);
  for (const auto& [start, end] : intervals) {
    if (end <= start) continue;
    events.emplace_back(start, 1);
    events.emplace_back(end, -1);
  }
  std::sort(events.begin(), events.end());  // at equal steps, -1 sorts before +1
  int64_t current = 0, best = 0;
  for (const auto& event : events) {
    current += event.second;
    best = std::max(best, current);
  }
  return best;
}

}  // namespace px::plan::detail

namespace px::plan {

PredictedPeak predicted_peak(const PlanProblem& plan, const Choice& choice) {
  const ShardingProblem& problem = plan.problem;
  if (choice.size() != problem.nodes.size() || plan.nodes.size() != problem.nodes.size()) {
    throw ValueError("predicted_peak: a choice of " + std::to_string(choice.size()) + " strategies for " +
                     std::to_string(problem.nodes.size()) + " nodes");
  }
  // (time, change of the total, change of the parameters' part)
  std::vector<std::tuple<int64_t, long double, long double>> events;
  for (size_t p = 0; p < problem.nodes.size(); ++p) {
    const ProblemNode& node = problem.nodes[p];
    const PlanNode& plan_node = plan.nodes[p];
    if (node.end <= node.start) continue;
    const auto s = static_cast<size_t>(choice[p]);
    if (s >= node.usages.size()) throw ValueError("predicted_peak: strategy out of range at " + node.name);
    const bool parameter =
        plan_node.kind == PlanNode::Kind::Input && plan_node.input_kind == InputDescriptor::Kind::Param;
    const long double usage = node.usages[s];
    events.emplace_back(node.start, usage, parameter ? usage : 0);
    events.emplace_back(node.end, -usage, parameter ? -usage : 0);
    // A gradient (as many bytes as its parameter's shard) is not there before the step that makes it.
    for (int64_t from : plan_node.gradient_from) {
      const int64_t until = std::clamp(from, node.start, node.end);
      if (until == node.start) continue;
      const long double gradient = plan_node.local_bytes[s];
      events.emplace_back(node.start, -gradient, parameter ? -gradient : 0);
      events.emplace_back(until, gradient, parameter ? gradient : 0);
    }
  }
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  PredictedPeak peak;
  long double total = 0;
  long double parameters = 0;
  bool have_peak = false;
  for (size_t k = 0; k < events.size();) {
    const int64_t time = std::get<0>(events[k]);
    for (; k < events.size() && std::get<0>(events[k]) == time; ++k) {
      total += std::get<1>(events[k]);
      parameters += std::get<2>(events[k]);
    }
    // After the last group every interval has ended.
    if (k < events.size() && (!have_peak || total > peak.bytes)) {
      peak.bytes = static_cast<double>(total);
      peak.step = time;
      peak.parameter_bytes = static_cast<double>(parameters);
      have_peak = true;
    }
  }
  return peak;
}

}  // namespace px::plan
