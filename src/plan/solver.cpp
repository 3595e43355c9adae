// solve(): the model, the solver auto picks, the ILP's warm start and fallback, and the result.
//
// auto: the ILP when CBC's model would be small, the fast solver beyond. The measure is the model's
// size before pruning: strategies plus edge-matrix entries that are not prohibitive, at most 200k
// and at most what CBC can take in the time limit (ilp_column_budget: 5000 per second). Measured
// on this machine (docs/benchmarks.md, "Sharding problems"): the contest's G instance (816 nodes,
// ~150k such entries) is proven optimal in 2-3 s (10 s when the warm start is weaker), while the
// A, M and S instances (millions of entries) do not even get through CBC's root processing within
// their contest time limits (A used 24 GB before it was stopped). Size is not the whole story:
// random problems with random costs (weak LP bounds) of 300 nodes and 10k entries still have a
// 0.9% gap after 60 s; the ILP path then returns the better of CBC's answer and the fast solver's
// warm start, with CBC's bound, after using the whole time limit.

#include "parallax/plan/solver.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "parallax/core/error.h"
#include "plan/fast_solver.h"
#include "plan/ilp_solver.h"
#include "plan/model.h"
#include "plan/number_format.h"

namespace px::plan {
namespace {

constexpr int64_t kAutoIlpMaxEntries = 200000;
constexpr int64_t kWarmStartStall = 50;  // the fast solver's stall limit as CBC's warm start

int64_t ilp_size(const Model& model) {
  int64_t entries = static_cast<int64_t>(model.cost.size());
  for (double c : model.edge_costs) entries += !is_forbidden_cost(c) ? 1 : 0;
  return entries;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

SolveResult finish(const ShardingProblem& problem, const Model& model, const std::vector<int32_t>& x,
                   std::string solver, Clock::time_point start) {
  SolveResult result;
  result.choice = expand_choice(model, x);
  result.evaluation = evaluate(problem, result.choice);
  result.solver = std::move(solver);
  result.wall_s = seconds_since(start);
  return result;
}

FastOptions fast_options(const SolveOptions& options, Clock::time_point start, Clock::time_point deadline) {
  FastOptions fast;
  fast.deadline = deadline;
  fast.seed = options.seed;
  fast.stop_after_stall = options.stop_after_stall;
  fast.threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.on_progress) {
    fast.on_improvement = [&options, start](double cost) { options.on_progress(seconds_since(start), cost); };
  }
  if (options.on_bound) {
    fast.on_bound = [&options, start](double bound) { options.on_bound(seconds_since(start), bound); };
  }
  return fast;
}

// The fast solver's answer with its bound, the gap and whether it is proven optimal.
SolveResult finish_fast(const ShardingProblem& problem, const Model& model, const FastOutcome& outcome,
                        std::string solver, Clock::time_point start) {
  SolveResult result = finish(problem, model, outcome.x, std::move(solver), start);
  if (std::isfinite(outcome.lower_bound)) {
    result.bound =
        result.evaluation.feasible ? std::min(outcome.lower_bound, result.evaluation.cost) : outcome.lower_bound;
    result.gap = (result.evaluation.cost - *result.bound) / std::max(std::fabs(result.evaluation.cost), 1e-9);
  }
  result.optimal = outcome.optimal && result.evaluation.feasible;
  return result;
}

SolveResult solve_with_ilp(const ShardingProblem& problem, const Model& model, const SolveOptions& options,
                           Clock::time_point start, Clock::time_point deadline) {
  // Hopeless even if a good incumbent prunes every prohibitive entry: all the time to the fast solver.
  if (const int64_t size = ilp_size(model); size > ilp_column_budget(options.time_limit_s)) {
    const FastOutcome fast = solve_fast_model(model, fast_options(options, start, deadline));
    return finish_fast(
        problem, model, fast,
        "fast (the ilp model, ~" + std::to_string(size) + " columns, is too large for CBC within the time limit)",
        start);
  }
  // A short fast run first: CBC's start, and the incumbent that prunes the model.
  const auto warm_deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(
                                         0.1 * options.time_limit_s, std::max(0.02 * options.time_limit_s, 2.0))));
  // The start stops at a stall whatever the caller asked: CBC gets the rest of the time.
  FastOptions warm_options = fast_options(options, start, std::min(warm_deadline, deadline));
  if (warm_options.stop_after_stall == 0) warm_options.stop_after_stall = kWarmStartStall;
  const FastOutcome warm = solve_fast_model(model, warm_options);
  IlpOptions ilp;
  ilp.deadline = deadline;
  if (warm.feasible) {
    ilp.incumbent = &warm.x;
    ilp.incumbent_cost = warm.cost;
  }
  const IlpOutcome outcome = solve_ilp_model(model, ilp);
  if (outcome.status == IlpStatus::TooLarge) {
    // The rest of the time goes to the fast solver, from scratch (it is deterministic: the same
    // seed would retrace the warm start's steps, then go on).
    const FastOutcome fast = solve_fast_model(model, fast_options(options, start, deadline));
    return finish_fast(problem, model, fast,
                       "fast (the ilp model, " + std::to_string(outcome.columns) +
                           " columns, is too large for CBC within the time limit)",
                       start);
  }
  if (outcome.status == IlpStatus::NoSolution || outcome.status == IlpStatus::Infeasible) {
    return finish(problem, model, warm.x,
                  outcome.status == IlpStatus::Infeasible
                      ? "ilp (proven infeasible; the least infeasible choice the fast solver found)"
                      : "fast (ilp found no solution within the time limit)",
                  start);
  }
  // CBC may stop with a worse solution than its start (a time limit hit inside its presolve).
  const bool keep_warm = warm.feasible && warm.cost < outcome.cost;
  SolveResult result = finish(problem, model, keep_warm ? warm.x : outcome.x, "ilp", start);
  // A start no worse than CBC's proven optimum is optimal too (they differ by rounding, summed
  // in another order, or by less than CBC's tolerances).
  result.optimal = outcome.status == IlpStatus::Optimal;
  if (outcome.bound) {
    result.bound = std::min(*outcome.bound, result.evaluation.cost);
    result.gap = (result.evaluation.cost - *result.bound) / std::max(std::fabs(result.evaluation.cost), 1e-9);
  }
  if (options.on_progress) options.on_progress(result.wall_s, result.evaluation.cost);
  return result;
}

}  // namespace

std::string solver_kind_name(SolverKind kind) {
  switch (kind) {
    case SolverKind::Auto:
      return "auto";
    case SolverKind::Ilp:
      return "ilp";
    case SolverKind::Fast:
      return "fast";
  }
  return "unknown";
}

SolverKind parse_solver_kind(std::string_view text) {
  if (text == "auto") return SolverKind::Auto;
  if (text == "ilp") return SolverKind::Ilp;
  if (text == "fast") return SolverKind::Fast;
  throw ValueError("unknown solver '" + std::string(text) + "': expected auto, ilp or fast");
}

SolveResult solve(const ShardingProblem& problem, const SolveOptions& options) {
  // The limit is the caller's whole wait: validating and compressing a large problem count too.
  const Clock::time_point start = Clock::now();
  problem.validate();
  if (!(options.time_limit_s > 0) || !std::isfinite(options.time_limit_s)) {
    throw ValueError("solve: the time limit must be a positive number of seconds, got " +
                     format_number(options.time_limit_s));
  }
  if (options.threads < 0)
    throw ValueError("solve: threads must be >= 0 (0: all), got " + std::to_string(options.threads));
  if (options.stop_after_stall < 0) {
    throw ValueError("solve: stop_after_stall must be >= 0 (0: never), got " +
                     std::to_string(options.stop_after_stall));
  }
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.time_limit_s));
  const Model model = build_model(problem);
  if (model.num_nodes() == 0) {  // every node has one strategy: nothing to decide
    SolveResult result = finish(problem, model, {}, options.solver == SolverKind::Fast ? "fast" : "ilp", start);
    result.optimal = result.evaluation.feasible;
    if (result.optimal) {
      result.bound = result.evaluation.cost;
      result.gap = 0.0;
    }
    return result;
  }
  SolverKind kind = options.solver;
  if (kind == SolverKind::Auto) {
    const int64_t limit = std::min(kAutoIlpMaxEntries, ilp_column_budget(options.time_limit_s));
    kind = ilp_size(model) <= limit ? SolverKind::Ilp : SolverKind::Fast;
  }
  if (kind == SolverKind::Ilp) return solve_with_ilp(problem, model, options, start, deadline);
  const FastOutcome outcome = solve_fast_model(model, fast_options(options, start, deadline));
  return finish_fast(problem, model, outcome, "fast", start);
}

std::string solve_result_json(const ShardingProblem& problem, const SolveResult& result) {
  nlohmann::ordered_json out;
  out["name"] = problem.name;
  out["cost"] = number_json<nlohmann::ordered_json>(result.evaluation.cost);
  out["feasible"] = result.evaluation.feasible;
  out["peak_usage"] = number_json<nlohmann::ordered_json>(result.evaluation.peak_usage);
  if (problem.usage_limit) out["usage_limit"] = number_json<nlohmann::ordered_json>(*problem.usage_limit);
  out["wall_s"] = std::round(result.wall_s * 1000) / 1000;
  out["solver"] = result.solver;
  out["optimal"] = result.optimal;
  if (result.bound) out["bound"] = number_json<nlohmann::ordered_json>(*result.bound);
  if (result.gap) out["gap"] = *result.gap;
  if (!result.evaluation.feasible) out["violation"] = result.evaluation.violation;
  return out.dump();
}

}  // namespace px::plan
