// parallax plan: a zoo model (or a config file) on a device mesh -> the solver's sharding plan,
// its report, and the hand-written baselines priced next to it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "mesh_arguments.h"
#include "option_checks.h"
#include "parallax/autodiff/training_step.h"
#include "parallax/core/error.h"
#include "parallax/nn/zoo.h"
#include "parallax/plan/baselines.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/imported_plan.h"
#include "parallax/plan/plan.h"
#include "parallax/plan/report.h"
#include "precision_arguments.h"

namespace px::cli {
namespace {

struct PlanArguments {
  std::string model;
  std::string mesh = "8";
  std::string mesh_dims;
  int64_t batch = 0;  // 0: one sample per device
  int64_t seq = 0;    // 0: min(max_seq, 2048)
  std::string device = "h100";
  double memory_budget_gb = 0;  // 0: the device's capacity
  bool no_memory_limit = false;
  std::vector<double> parameter_memory;
  std::string solver = "auto";
  double time_limit_s = 60;
  uint64_t seed = 0;
  bool baselines = true;
  bool no_cluster = false;
  std::string out;
  std::string export_problem;
  std::vector<std::string> explain;
  size_t parameters = 40;
  bool progress = false;
  PrecisionArguments precision;
  std::string checkpointing = "auto";
  std::vector<std::string> compare;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(seconds < 10 ? 2 : 1) << seconds << " s";
  return out.str();
}

int run_plan(const PlanArguments& args) {
  try {
    const Clock::time_point start = Clock::now();
    const nn::ModelSpec model = nn::load_model(args.model);
    const std::vector<int64_t> shape = parse_mesh(args.mesh);
    const dist::DeviceMesh mesh(shape, mesh_dim_names(args.mesh_dims, shape.size()));
    const int64_t batch = args.batch > 0 ? args.batch : mesh.size();
    const int64_t seq = args.seq > 0 ? args.seq : std::min<int64_t>(model.max_seq(), 2048);

    plan::PlanOptions options;
    options.device = plan::device_profile(args.device);
    options.cluster_layers = !args.no_cluster;
    options.precision = precision_policy(args.precision);
    options.checkpointing = plan::parse_checkpointing(args.checkpointing);
    plan::PlanConstraints constraints;
    if (!args.no_memory_limit) {
      constraints.memory_budget_bytes =
          args.memory_budget_gb > 0 ? args.memory_budget_gb * 1e9 : options.device.memory_capacity_bytes;
      options.memory_limit_bytes = constraints.memory_budget_bytes;  // the exported problem's usage limit
    }
    if (!args.parameter_memory.empty()) {
      if (args.parameter_memory.size() != 2) throw ValueError("--parameter-memory takes LOW,HIGH");
      constraints.parameter_memory = plan::ParameterMemory{args.parameter_memory[0], args.parameter_memory[1]};
    }

    // Read the files to compare against before solving anything, so a bad file fails fast.
    std::vector<plan::ImportedPlacements> imports;
    for (const std::string& entry : args.compare) {
      // LABEL=FILE names the plan in the report; a bare FILE is named by its stem.
      const size_t equals = entry.find('=');
      const bool labelled = equals != std::string::npos && equals > 0 && !std::filesystem::exists(entry);
      imports.push_back(plan::read_imported_placements(labelled ? entry.substr(equals + 1) : entry));
      if (labelled) imports.back().label = entry.substr(0, equals);
    }

    std::cout << "model   " << model.describe() << "\n"
              << "mesh    " << mesh.str() << " of " << options.device.name << ", batch " << batch;
    if (model.kind != nn::ModelSpec::Kind::Mlp) std::cout << " x seq " << seq;
    std::cout << "\n";
    for (const std::string& note : model.notes) std::cout << "note    " << note << "\n";
    if (!options.precision.empty()) std::cout << "dtypes  " << options.precision.str() << "\n";
    std::cout << std::flush;

    const Clock::time_point capture_start = Clock::now();
    const JointProgram program = training_step_joint(model, batch, seq, options.precision);
    const double capture_s = seconds_since(capture_start);
    const plan::PlanProblem problem = plan::build_problem(program, mesh, options);
    if (!args.export_problem.empty()) plan::write_problem(problem.problem, args.export_problem);

    plan::SolveOptions solve_options;
    solve_options.solver = plan::parse_solver_kind(args.solver);
    solve_options.time_limit_s = args.time_limit_s;
    solve_options.seed = args.seed;
    if (args.progress) {
      solve_options.on_progress = [](double elapsed_s, double best_cost) {
        std::cerr << std::fixed << std::setprecision(2) << "\r[" << elapsed_s << " s] best step " << best_cost * 1e3
                  << " ms   " << std::flush;
      };
    }
    // The baselines solve beside the solver's plan (they are independent problems).
    std::future<std::vector<plan::BaselineResult>> baselines;
    if (args.baselines) {
      baselines = std::async(std::launch::async,
                             [&] { return plan::solve_baselines(program, problem, constraints, solve_options); });
    }
    const plan::ShardingPlan solved = plan::solve_plan(program, problem, constraints, solve_options);
    if (args.progress) std::cerr << std::endl;
    const double plan_s = seconds_since(start);

    std::cout << "graph   " << program.graph.nodes().size() << " nodes, " << program.inputs.size() << " inputs -> "
              << problem.problem.nodes.size() << " decisions, " << problem.problem.edges.size() << " edges ("
              << problem.layer_groups.size() << " repeated-layer group"
              << (problem.layer_groups.size() == 1 ? ")\n" : "s)\n") << "time    capture+joint "
              << seconds_text(capture_s) << ", build " << seconds_text(problem.build_seconds) << ", solve "
              << seconds_text(solved.solve_seconds) << " (" << solved.solver << "): plan in " << seconds_text(plan_s)
              << "\n\n";

    std::vector<plan::PlanReport> reports{plan::make_report(program, problem, solved)};
    std::cout << plan::format_report(reports.front(), args.parameters) << "\n";
    for (const std::string& name : args.explain) {
      std::cout << plan::explain(problem, solved, plan::find_plan_node(program, problem, name)).str() << "\n";
    }
    std::vector<plan::PlanReport> imported_reports;
    std::vector<std::string> failed;
    for (const plan::ImportedPlacements& imported : imports) {
      const plan::BaselineResult result = plan::solve_imported(imported, program, problem, constraints, solve_options);
      if (result.plan) {
        imported_reports.push_back(plan::make_report(program, problem, *result.plan));
      } else {
        failed.push_back(imported.label + ": " + result.error);
      }
    }
    if (args.baselines || !imports.empty()) {
      reports.insert(reports.end(), imported_reports.begin(), imported_reports.end());
      if (args.baselines) {
        for (const plan::BaselineResult& result : baselines.get()) {
          if (result.plan) {
            reports.push_back(plan::make_report(program, problem, *result.plan));
          } else {
            failed.push_back(result.baseline.name + ": " + result.error);
          }
        }
      }
      std::cout << "solver against " << (imported_reports.empty() ? "" : "the imported and ")
                << (args.baselines ? "the hand-written plans" : "plans") << " (same cost model):\n"
                << plan::format_comparison(reports);
      for (const std::string& line : failed) std::cout << "  not feasible: " << line << "\n";
      std::cout << "\n";
    }
    for (const plan::PlanReport& imported : imported_reports) {
      for (const std::string& note : imported.notes) std::cout << "note (" << imported.label << "): " << note << "\n";
      std::cout << plan::format_difference(reports.front(), imported, mesh) << "\n";
    }
    if (!args.out.empty()) {
      plan::save_plan(program, problem, solved, args.out);
      std::cout << "plan written to " << args.out << "\n";
    }
    if (!args.export_problem.empty()) std::cout << "problem written to " << args.export_problem << "\n";
    std::cout << std::flush;
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "parallax plan: " << error.what() << std::endl;
    return 2;
  }
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArguments>();
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Plan the sharding of a model's training step on a device mesh: the solver's plan, its report, and the "
      "hand-written baselines (DP, FSDP, TP, FSDP+TP) priced by the same cost model");
  std::string names;
  for (const std::string& name : nn::zoo_names()) names += (names.empty() ? "" : ", ") + name;
  sub->add_option(
         "--model", args->model,
         "A zoo model (" + names + "), a JSON config file, or a Hugging Face model directory (its config.json)")
      ->required();
  sub->add_option("--mesh", args->mesh, "Mesh shape: 8, 8x8, 2,2,2")->check(mesh_validator())->capture_default_str();
  sub->add_option("--mesh-dims", args->mesh_dims, "Mesh dim names, comma-separated (default dp / dp,tp)");
  sub->add_option("--batch", args->batch, "Global batch (default: one sample per device)")->check(positive_integer());
  sub->add_option("--seq", args->seq, "Sequence length (default: the model's max_seq, at most 2048)")
      ->check(positive_integer());
  sub->add_option(
         "--device", args->device,
         "Device profile: h100, h200, a100, cpu (a fixed reference CPU, not this machine), or a profile file (.json) "
         "from parallax calibrate, which measures this machine")
      ->capture_default_str();
  sub->add_option("--memory-budget", args->memory_budget_gb, "Per-device memory budget in GB (default: capacity)")
      ->check(positive_number());
  sub->add_flag("--no-memory-limit", args->no_memory_limit, "Plan without a per-device memory budget")
      ->excludes(sub->get_option("--memory-budget"));
  sub->add_option(
         "--parameter-memory", args->parameter_memory,
         "LOW,HIGH: each parameter's bytes per device as a fraction of its full size (1/8: fully sharded on 8)")
      ->delimiter(',')
      ->expected(2);
  sub->add_option("--solver", args->solver, "auto, ilp (exact, COIN-OR CBC) or fast")
      ->check(CLI::IsMember({"auto", "ilp", "fast"}))
      ->capture_default_str();
  sub->add_option("--time-limit", args->time_limit_s, "Solver time limit in seconds")
      ->check(positive_number())
      ->capture_default_str();
  sub->add_option("--seed", args->seed, "Solver seed")->capture_default_str();
  sub->add_flag("!--no-baselines", args->baselines, "Skip pricing the hand-written plans");
  sub->add_flag("--no-cluster", args->no_cluster, "One decision per layer instead of one per set of identical layers");
  sub->add_option("--out", args->out, "Save the plan as JSON (.gz compresses)");
  sub->add_option("--export-problem", args->export_problem,
                  "Write the sharding problem in IOPDDL JSON (.gz compresses), for `parallax solve`");
  sub->add_option("--explain", args->explain, "Explain a node's strategy against its alternatives (repeatable)");
  sub->add_option("--parameters", args->parameters, "Rows of the parameter table (0: all)")->capture_default_str();
  sub->add_flag("--progress", args->progress, "Show the solver's best plan as it improves");
  sub->add_option(
      "--compare", args->compare,
      "[LABEL=]FILE: price another planner's parameter placements (JSON: {\"placements\": {name: \"(Shard(dim=0), "
      "Replicate())\"}}, as AutoParallel's in ../shared/anchors) next to the solver's plan, and say "
      "where they differ (repeatable)");
  add_precision_options(*sub, args->precision);
  add_checkpointing_option(*sub, args->checkpointing);
  return {sub, [args] { return run_plan(*args); }};
}

}  // namespace px::cli
