// parallax solve PROBLEM.json[.gz]: solves a sharding problem (IOPDDL format) and prints one JSON
// object; --evaluate prices a given solution instead.

#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "option_checks.h"
#include "parallax/core/error.h"
#include "parallax/plan/problem.h"
#include "parallax/plan/solver.h"

namespace px::cli {
namespace {

// Integral values as JSON integers (the contest's costs), others as doubles.
nlohmann::ordered_json number_json(double value) {
  if (value == std::trunc(value) && std::fabs(value) < 9.2e18) return static_cast<int64_t>(value);
  return value;
}

struct SolveArguments {
  std::string problem;
  double time_limit_s = 60;
  std::string solver = "auto";
  uint64_t seed = 0;
  std::string out;
  std::string evaluate;
  bool progress = false;
  int threads = 0;
  int64_t stop_after_stall = 0;
};

int run_solve(const SolveArguments& args) {
  try {
    const plan::ShardingProblem problem = plan::read_problem(args.problem);
    if (!args.evaluate.empty()) {
      const plan::Evaluation evaluation = plan::evaluate(problem, plan::read_choice(args.evaluate));
      nlohmann::ordered_json out;
      out["name"] = problem.name;
      out["cost"] = number_json(evaluation.cost);
      out["feasible"] = evaluation.feasible;
      out["peak_usage"] = number_json(evaluation.peak_usage);
      out["peak_step"] = evaluation.peak_step;
      if (problem.usage_limit) out["usage_limit"] = number_json(*problem.usage_limit);
      if (!evaluation.feasible) out["violation"] = evaluation.violation;
      std::cout << out.dump() << std::endl;
      return 0;
    }
    plan::SolveOptions options;
    options.solver = plan::parse_solver_kind(args.solver);
    options.time_limit_s = args.time_limit_s;
    options.seed = args.seed;
    options.threads = args.threads;
    options.stop_after_stall = args.stop_after_stall;
    if (args.progress) {
      // Each line: the best cost and the best bound so far, and the gap once both exist.
      auto best = std::make_shared<double>(std::numeric_limits<double>::infinity());
      auto bound = std::make_shared<double>(-std::numeric_limits<double>::infinity());
      auto print = [best, bound](double elapsed_s) {
        std::cerr << std::fixed << std::setprecision(2) << "[" << elapsed_s << " s] best " << std::setprecision(0)
                  << *best;
        if (std::isfinite(*bound)) {
          std::cerr << "  bound " << *bound;
          if (std::isfinite(*best)) {
            std::cerr << "  gap " << std::setprecision(4) << 100 * (*best - *bound) / std::max(std::fabs(*best), 1e-9)
                      << "%";
          }
        }
        std::cerr << std::endl;
      };
      options.on_progress = [best, print](double elapsed_s, double cost) {
        *best = cost;
        print(elapsed_s);
      };
      // The bound rises in many small steps: a line for it at most every second.
      auto bound_printed = std::make_shared<double>(-1.0);
      options.on_bound = [bound, bound_printed, print](double elapsed_s, double value) {
        *bound = value;
        if (*bound_printed >= 0 && elapsed_s - *bound_printed < 1.0) return;
        *bound_printed = elapsed_s;
        print(elapsed_s);
      };
    }
    const plan::SolveResult result = plan::solve(problem, options);
    if (args.progress) {  // the last word: the lines above skip bounds that came within a second
      std::cerr << std::fixed << std::setprecision(2) << "[" << result.wall_s << " s] end: best "
                << std::setprecision(0) << result.evaluation.cost;
      if (result.bound) {
        std::cerr << "  bound " << *result.bound << "  gap " << std::setprecision(4) << 100 * result.gap.value_or(0)
                  << "%";
      }
      std::cerr << (result.optimal ? "  (proven optimal)" : "") << std::endl;
    }
    if (!args.out.empty()) plan::write_choice(problem, result.choice, args.out);
    std::cout << plan::solve_result_json(problem, result) << std::endl;
    return 0;
  } catch (const px::Error& error) {
    std::cerr << "parallax solve: " << error.what() << std::endl;
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "parallax solve: " << error.what() << std::endl;
    return 2;
  }
}

}  // namespace

Command add_solve_command(CLI::App& app) {
  auto args = std::make_shared<SolveArguments>();
  CLI::App* sub = app.add_subcommand("solve",
                                     "Solve a sharding problem (IOPDDL JSON, optionally .gz) and print one "
                                     "JSON object: name, cost, feasible, peak_usage, wall_s, solver, "
                                     "bound and gap where known");
  sub->add_option("problem", args->problem, "PROBLEM.json or PROBLEM.json.gz")->required();
  sub->add_option("--time-limit", args->time_limit_s, "Time limit in seconds")
      ->check(positive_number())
      ->capture_default_str();
  sub->add_option("--solver", args->solver, "auto, ilp (exact, COIN-OR CBC) or fast")
      ->check(CLI::IsMember({"auto", "ilp", "fast"}))
      ->capture_default_str();
  sub->add_option("--seed", args->seed,
                  "Random seed (the same seed and --threads give the same answer when the search stops by itself)")
      ->capture_default_str();
  sub->add_option("--threads", args->threads,
                  "Fast-solver searches side by side, one per thread (0: one per hardware thread); the answer "
                  "depends on the seed and this count")
      ->check(non_negative_integer())
      ->capture_default_str();
  sub->add_option("--stop-after-stall", args->stop_after_stall,
                  "Stop the fast solver after N rounds without a better solution (0: search until the time limit)")
      ->check(non_negative_integer())
      ->capture_default_str();
  sub->add_option("--out", args->out, "Write the solution here ({\"name\", \"strategies\"}; .gz compresses)");
  sub->add_option("--evaluate", args->evaluate, "Check and price this solution instead of solving");
  sub->add_flag("--progress", args->progress, "Print each better solution and lower bound, with the gap, to stderr");
  return {sub, [args] { return run_solve(*args); }};
}

}  // namespace px::cli
