#include <map>
// parallax run: plans a zoo model on a mesh and trains it for N steps on synthetic data, on the
// threads backend (N ranks in this process) or one rank per process under mpirun; --check
// trains the same steps on one device and fails loudly on any difference.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "mesh_arguments.h"
#include "option_checks.h"
#include "parallax/api/auto_parallel.h"
#include "parallax/core/error.h"
#include "parallax/core/parallel.h"
#include "parallax/dist/process_group.h"
#include "parallax/io/hf_model.h"
#include "parallax/nn/zoo.h"
#include "parallax/ops/factory.h"
#include "parallax/plan/calibration.h"
#include "parallax/plan/device_profile.h"
#include "precision_arguments.h"
#include "statistics.h"
#include "training_setup.h"

namespace px::cli {
namespace {

struct RunArguments {
  std::string model;
  std::string mesh = "2";
  std::string mesh_dims;
  int64_t batch = 8;
  int64_t seq = 0;  // 0: min(max_seq, 16)
  int64_t steps = 10;
  std::string plan = "solver";
  std::string dtype = "f32";
  std::string optimizer = "adamw";
  double lr = 1e-2;
  double max_grad_norm = 0;
  uint64_t seed = 0;
  std::string device = "cpu";
  std::string backend = "auto";
  int threads_per_rank = 0;  // 0: the core-sharing rule (core/parallel.h)
  bool check = false;
  double check_tolerance = -1;  // < 0: by dtype
  bool baselines = true;
  std::string dump_graphs;
  std::string json;
  size_t parameters = 12;
  bool op_profile = false;
  PrecisionArguments precision;
  std::string checkpointing = "auto";
  std::string save;       // checkpoint directory written after the last step
  std::string load;       // checkpoint directory to resume from
  std::string export_hf;  // Hugging Face directory written after the last step
};

using Clock = std::chrono::steady_clock;
struct RunResult {
  std::vector<double> losses;
  std::vector<double> step_seconds;
  std::vector<std::pair<std::string, Tensor>> parameters;  // whole, at the end (with --check)
  double peak_bytes = 0;            // the largest over ranks of the executor's peak plus the optimizer's state
  double predicted_peak_bytes = 0;  // the plan report's peak per device
  double pool_bytes = 0;            // the largest over ranks of the executor's buffer pool, after the last step
  double predicted_step_s = 0;      // the plan's cost under the device profile
  std::string plan_label;
  std::vector<plan::OpSample> op_samples;  // rank 0's nodes, median over the steps after the first
  double executor_seconds = 0;             // rank 0's median graph run, within the step
  double predicted_communication_s = 0;    // the plan's communication share of predicted_step_s
};

// Trains on `mesh` (every rank of the job runs this); rank 0 prints as it goes when `out` is set.
RunResult train(const RunArguments& args, const nn::ModelSpec& spec, const Batches& data, const dist::DeviceMesh& mesh,
                dist::Backend backend, std::ostream* out) {
  RunResult result;
  std::mutex mutex;
  dist::launch(
      static_cast<int>(mesh.size()),
      [&](int rank, dist::ProcessGroup& world) {
        auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
        std::ostream* print = rank == 0 ? out : nullptr;
        with_model(spec, [&](auto& model) {
          // A Hugging Face directory with weights starts from them (else from the seed).
          if (!spec.architecture.empty() && io::has_hf_weights(args.model)) {
            io::load_hf_weights(model, spec, args.model, "model.");
            if (print) *print << "weights " << args.model << " (Hugging Face safetensors)\n";
          }
          AutoParallelOptions options;
          options.plan.device = plan::device_profile(args.device);
          options.plan.precision = precision_policy(args.precision);
          options.plan.checkpointing = plan::parse_checkpointing(args.checkpointing);
          options.train.seed = args.seed;
          options.train.time_nodes = args.op_profile;
          options.train.optimizer =
              args.optimizer == "sgd" ? TrainOptions::OptimizerKind::Sgd : TrainOptions::OptimizerKind::AdamW;
          // What the plan prices (memory and the update): AdamW's two moments; SGD without
          // momentum has no state.
          options.plan.optimizer_states = args.optimizer == "sgd" ? 0 : 2;
          options.train.adamw.lr = args.lr;
          options.train.sgd.lr = args.lr;
          if (args.max_grad_norm > 0) options.train.max_grad_norm = args.max_grad_norm;
          AutoParallel ap(
              model, [&] { return data.metas(); }, mesh, options);
          const plan::ShardingPlan sharding =
              ap.broadcast_plan(*groups, [&] { return select_plan(ap, args.plan, mesh); });
          if (print) {
            *print << plan::format_report(ap.report(sharding), args.parameters) << "\n";
            if (args.baselines) {
              std::vector<plan::PlanReport> reports{ap.report(sharding)};
              for (const plan::BaselineResult& baseline : ap.baselines()) {
                if (baseline.plan) reports.push_back(ap.report(*baseline.plan));
              }
              *print << "predicted step time against the hand-written plans:\n"
                     << plan::format_comparison(reports) << "\n";
            }
          }
          if (rank == 0 && std::getenv("PX_DEBUG_OPS")) {
            std::map<std::string, std::pair<int, double>> by_op;
            const auto& pp = ap.problem();
            for (size_t p = 0; p < pp.nodes.size(); ++p) {
              std::string name = pp.problem.nodes[p].name;
              auto sp = name.find_first_of(" (@");
              std::string key = pp.nodes[p].kind == plan::PlanNode::Kind::Input ? "input" : name.substr(0, sp);
              by_op[key].first += static_cast<int>(pp.nodes[p].members.size());
              by_op[key].second += pp.nodes[p].compute_seconds[static_cast<size_t>(sharding.choice[p])];
            }
            for (auto& [k, v] : by_op) std::cerr << "PLANOP " << k << " " << v.first << " " << v.second * 1e3 << "\n";
          }
          ParallelModule module = ap.apply_placement(sharding, groups);
          if (!args.dump_graphs.empty()) {
            std::filesystem::create_directories(args.dump_graphs);
            std::ofstream(args.dump_graphs + "/rank" + std::to_string(rank) + ".txt")
                << lower::dump({module.program()});
          }
          if (!args.load.empty()) {
            const int64_t bytes = module.load(args.load);
            if (print) {
              *print << "loaded  " << args.load << " at step " << module.steps_done() << " (rank 0 read " << std::fixed
                     << std::setprecision(2) << static_cast<double>(bytes) / 1e6 << " MB)\n";
            }
          }
          std::vector<double> losses, seconds, executor_seconds;
          std::vector<std::vector<double>> node_seconds, update_seconds;
          const int64_t first_step = module.steps_done();  // 0, or where a loaded checkpoint stopped
          for (int64_t step = first_step; step < first_step + args.steps; ++step) {
            const auto [a, b] = data.at(step);
            const Clock::time_point start = Clock::now();
            module.train_step(a, b);
            seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
            losses.push_back(module.last_loss());
            // The first step pays for first-touch page faults and warm-up; keep it only when alone.
            if (step > first_step || args.steps == 1) {
              executor_seconds.push_back(module.last_stats().seconds);
              if (args.op_profile) {
                node_seconds.push_back(module.last_stats().node_seconds);
                update_seconds.push_back(module.last_update_seconds());
              }
            }
            if (print) {
              *print << "step " << std::setw(4) << step + 1 << "  loss " << std::fixed << std::setprecision(6)
                     << losses.back() << "  " << std::setprecision(0)
                     << static_cast<double>(data.tokens_per_step()) / seconds.back() << " tokens/s" << std::endl;
            }
          }
          if (!args.save.empty()) {
            module.save(args.save);
            if (print) *print << "saved   " << args.save << " at step " << module.steps_done() << "\n";
          }
          if (!args.export_hf.empty()) {
            std::map<std::string, Tensor> whole;  // every rank gathers: full_tensor is collective
            for (const std::string& name : module.parameter_names()) whole[name] = module.full_tensor(name);
            if (rank == 0) {
              io::save_hf_model(args.export_hf, spec,
                                [&](const std::string& name) { return whole.at("model." + name); });
              if (print) *print << "exported " << args.export_hf << " (Hugging Face " << spec.architecture << ")\n";
            }
          }
          Tensor peak = px::full({2}, 0.0, DType::Float64);
          peak.data<double>()[0] = module.last_stats().peak_bytes + static_cast<double>(module.optimizer_state_bytes());
          peak.data<double>()[1] = module.last_stats().pool_bytes;
          world.all_reduce(peak, ReduceOp::Max);
          std::vector<std::pair<std::string, Tensor>> parameters;
          if (args.check) {
            for (const std::string& name : module.parameter_names()) {
              parameters.emplace_back(name, module.full_tensor(name));
            }
          }
          if (rank == 0) {
            std::lock_guard<std::mutex> lock(mutex);
            result = RunResult{};
            result.losses = losses;
            result.step_seconds = seconds;
            result.parameters = parameters;
            result.peak_bytes = peak.data<double>()[0];
            result.pool_bytes = peak.data<double>()[1];
            result.predicted_step_s = sharding.evaluation.cost;
            result.predicted_peak_bytes = ap.report(sharding).memory.peak_bytes;
            result.plan_label = sharding.label;
            result.predicted_communication_s = sharding.communication_seconds;
            result.executor_seconds = median(executor_seconds);
            if (args.op_profile) {
              result.op_samples = plan::op_samples(module.program().graph, plan::median_node_seconds(node_seconds));
              for (plan::OpSample& sample : plan::optimizer_update_samples(module.trained_local_metas(),
                                                                           plan::median_node_seconds(update_seconds),
                                                                           options.plan.optimizer_states)) {
                result.op_samples.push_back(std::move(sample));
              }
            }
          }
        });
      },
      dist::LaunchOptions{backend, args.threads_per_rank});
  return result;
}

// The first difference beyond `tolerance` (relative, with the same absolute floor), or "".
std::string compare(const RunResult& mesh_run, const RunResult& single, double tolerance) {
  auto close = [tolerance](double a, double b) { return std::fabs(a - b) <= tolerance * std::max(1.0, std::fabs(b)); };
  for (size_t step = 0; step < single.losses.size(); ++step) {
    if (!close(mesh_run.losses[step], single.losses[step])) {
      std::ostringstream out;
      out << std::setprecision(17) << "loss of step " << step + 1 << ": " << mesh_run.losses[step] << " on the mesh, "
          << single.losses[step] << " on one device";
      return out.str();
    }
  }
  for (size_t p = 0; p < single.parameters.size(); ++p) {
    const Tensor a = mesh_run.parameters[p].second.to(DType::Float64).contiguous();
    const Tensor b = single.parameters[p].second.to(DType::Float64).contiguous();
    for (int64_t i = 0; i < b.numel(); ++i) {
      if (!close(a.data<double>()[i], b.data<double>()[i])) {
        std::ostringstream out;
        out << std::setprecision(17) << "parameter " << single.parameters[p].first << " element " << i << ": "
            << a.data<double>()[i] << " on the mesh, " << b.data<double>()[i] << " on one device";
        return out.str();
      }
    }
  }
  return "";
}

int run_run(const RunArguments& args) {
  try {
    nn::ModelSpec spec = nn::load_model(args.model);
    if (!args.export_hf.empty() && spec.architecture.empty()) {
      throw ValueError("--export-hf: " + spec.name +
                       " was not read from a Hugging Face config, so it has no Hugging Face layout");
    }
    const DType dtype = args.dtype == "f64" ? DType::Float64 : DType::Float32;
    spec.mlp.dtype = spec.gpt.dtype = spec.llama.dtype = dtype;
    const std::vector<int64_t> shape = parse_mesh(args.mesh);
    const dist::DeviceMesh mesh(shape, mesh_dim_names(args.mesh_dims, shape.size()));
    const Batches data{spec, args.batch, args.seq > 0 ? args.seq : std::min<int64_t>(spec.max_seq(), 16), args.seed};
    const dist::Backend backend = dist::resolve_backend(args.backend == "threads" ? dist::Backend::Threads
                                                        : args.backend == "mpi"   ? dist::Backend::Mpi
                                                                                  : dist::Backend::Auto);
    // Under MPI every process runs this; only the job's rank 0 talks.
    const bool talk = backend == dist::Backend::Threads || std::getenv("OMPI_COMM_WORLD_RANK") == nullptr ||
                      std::string(std::getenv("OMPI_COMM_WORLD_RANK")) == "0";
    std::ostream* out = talk && args.json.empty() ? &std::cout : nullptr;
    if (out) {
      *out << "model   " << spec.describe() << "\nmesh    " << mesh.str() << ", " << dist::backend_name(backend)
           << " backend, batch " << data.batch;
      if (spec.kind != nn::ModelSpec::Kind::Mlp) *out << " x seq " << data.seq;
      *out << ", " << args.steps << " steps of " << args.optimizer << " (lr " << args.lr << ")\n";
      for (const std::string& note : spec.notes) *out << "note    " << note << "\n";
      const MixedPrecisionPolicy policy = precision_policy(args.precision);
      if (!policy.empty()) *out << "dtypes  " << policy.str() << "\n";
      if (backend == dist::Backend::Threads) {
        const int threads =
            args.threads_per_rank > 0 ? args.threads_per_rank : threads_per_rank(static_cast<int>(mesh.size()));
        *out << "threads " << mesh.size() << " rank(s) x " << threads << " kernel thread(s) each\n";
      }
      *out << "\n";
    }
    const RunResult result = train(args, spec, data, mesh, backend, out);
    std::string mismatch;
    // bf16 compute rounds each rank's partial sums before they are reduced, and AdamW turns a
    // gradient that is rounding noise into an lr-sized step of either sign: no two meshes agree
    // closely (tests/runtime/parallel_parity_test.cpp states the measured spread).
    const std::optional<DType> compute_dtype = precision_policy(args.precision).param_dtype;
    const bool bf16_compute = compute_dtype == DType::BFloat16;
    const double tolerance = args.check_tolerance >= 0 ? args.check_tolerance
                             : bf16_compute            ? 0.1
                             : dtype == DType::Float64 ? 1e-10
                                                       : 1e-4;
    if (args.check) {
      RunResult single;
      // On one device every plan is the same program; the mesh's plan (FSDP+TP, a plan file) may
      // not even exist there.
      RunArguments reference = args;
      reference.plan = "solver";
      reference.op_profile = false;
      reference.save.clear();  // the mesh run's outputs are the ones asked for
      reference.export_hf.clear();
      if (talk) single = train(reference, spec, data, dist::DeviceMesh({1}), dist::Backend::Threads, nullptr);
      if (talk) mismatch = compare(result, single, tolerance);
    }
    if (!talk) return 0;
    const double seconds = median(result.step_seconds);
    const std::vector<plan::OpProfileRow> op_rows =
        args.op_profile ? plan::op_profile(result.op_samples, plan::device_profile(args.device))
                        : std::vector<plan::OpProfileRow>{};
    if (out) {
      *out << "\nmedian step " << std::fixed << std::setprecision(2) << seconds * 1e3 << " ms (" << std::setprecision(0)
           << static_cast<double>(data.tokens_per_step()) / seconds << " tokens/s), peak memory per rank "
           << std::setprecision(2) << result.peak_bytes / 1e6
           << " MB with the optimizer's state (its buffer pool holds " << result.pool_bytes / 1e6
           << " MB); the plan predicted " << result.predicted_step_s * 1e3 << " ms on " << args.device << " and "
           << result.predicted_peak_bytes / 1e6 << " MB\n";
      const unsigned cores = std::thread::hardware_concurrency();
      if (backend == dist::Backend::Threads && cores > 0 && mesh.size() > static_cast<int64_t>(cores)) {
        *out << "(" << mesh.size() << " thread ranks share this machine's " << cores
             << " cores; the prediction assumes one core per rank)\n";
      }
      if (args.op_profile) {
        *out << "\nrank 0's graph run: median " << std::setprecision(2) << result.executor_seconds * 1e3
             << " ms of the step's " << seconds * 1e3 << " ms (the rest: input slicing, the optimizer)\n"
             << "its nodes by op and its parameters' optimizer updates (optimizer_update), measured (median over "
             << "the steps after the first) against the " << args.device
             << " profile's prediction (communication excluded):\n"
             << plan::format_op_profile(op_rows);
        int64_t collectives = 0;
        double collective_seconds = 0;
        for (const plan::OpSample& sample : result.op_samples) {
          if (!sample.collective) continue;
          ++collectives;
          collective_seconds += sample.seconds;
        }
        *out << "collectives: " << collectives << " nodes, " << std::setprecision(3) << collective_seconds * 1e3
             << " ms measured; the plan predicts " << result.predicted_communication_s * 1e3
             << " ms of communication\n";
      }
      if (args.check) {
        std::ostringstream bound;
        bound << (dtype == DType::Float64 ? "float64" : "float32") << (bf16_compute ? " with bf16 compute" : "")
              << ", relative " << tolerance;
        *out << (mismatch.empty() ? "check: the mesh run matches the single-device run (" + bound.str() +
                                        ") at every step and in every parameter\n"
                                  : "check FAILED (" + bound.str() + "): " + mismatch + "\n");
      }
    }
    if (!args.json.empty()) {
      nlohmann::ordered_json json;
      json["model"] = spec.name;
      json["mesh"] = mesh.shape();
      json["backend"] = dist::backend_name(backend);
      json["losses"] = result.losses;
      json["plan"] = result.plan_label;
      json["median_step_s"] = seconds;
      json["predicted_step_s"] = result.predicted_step_s;
      json["peak_bytes"] = result.peak_bytes;
      json["predicted_peak_bytes"] = result.predicted_peak_bytes;
      json["pool_bytes"] = result.pool_bytes;
      json["executor_step_s"] = result.executor_seconds;
      if (args.op_profile) {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (const plan::OpProfileRow& row : op_rows) {
          rows.push_back(
              {{"op", row.op}, {"nodes", row.nodes}, {"measured_s", row.measured_s}, {"predicted_s", row.predicted_s}});
        }
        json["op_profile"] = rows;
      }
      if (args.check) json["check"] = mismatch.empty() ? "ok" : mismatch;
      std::ofstream(args.json) << std::setprecision(17) << json.dump() << "\n";
    }
    if (!mismatch.empty()) {
      std::cerr << "parallax run: check failed: " << mismatch << std::endl;
      return 2;
    }
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "parallax run: " << error.what() << std::endl;
    return 2;
  }
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArguments>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Plan a model on a mesh and train it on synthetic data: threads backend, or one rank per process under "
      "mpirun; --check compares with a single-device run");
  std::string names;
  for (const std::string& name : nn::zoo_names()) names += (names.empty() ? "" : ", ") + name;
  sub->add_option(
         "--model", args->model,
         "A zoo model (" + names + "), a JSON config file, or a Hugging Face model directory (its config.json)")
      ->required();
  sub->add_option("--mesh", args->mesh, "Mesh shape: 4, 2x2, 2,2")->check(mesh_validator())->capture_default_str();
  sub->add_option("--mesh-dims", args->mesh_dims, "Mesh dim names, comma-separated (default dp / dp,tp)");
  sub->add_option("--batch", args->batch, "Global batch")->check(positive_integer())->capture_default_str();
  sub->add_option("--seq", args->seq, "Sequence length (default: the model's max_seq, at most 16)")
      ->check(positive_integer());
  sub->add_option("--steps", args->steps, "Training steps")->check(positive_integer())->capture_default_str();
  sub->add_option("--plan", args->plan, "solver, a baseline (DP, FSDP, TP, FSDP+TP) or a plan JSON file")
      ->capture_default_str();
  sub->add_option("--dtype", args->dtype, "f32 or f64")->check(CLI::IsMember({"f32", "f64"}))->capture_default_str();
  sub->add_option("--optimizer", args->optimizer, "adamw or sgd")
      ->check(CLI::IsMember({"adamw", "sgd"}))
      ->capture_default_str();
  sub->add_option("--lr", args->lr, "Learning rate")->check(positive_number())->capture_default_str();
  sub->add_option("--max-grad-norm", args->max_grad_norm, "Clip gradients to this global norm")
      ->check(positive_number());
  sub->add_option("--seed", args->seed, "Parameter and data seed")->capture_default_str();
  sub->add_option("--device", args->device,
                  "Device profile the plan is priced for: cpu (a fixed reference CPU, not this machine), h100, h200, "
                  "a100, or a profile file (.json) from parallax calibrate, which measures this machine")
      ->capture_default_str();
  sub->add_option("--backend", args->backend, "auto (mpi under mpirun, else threads), threads or mpi")
      ->check(CLI::IsMember({"auto", "threads", "mpi"}))
      ->capture_default_str();
  sub->add_option("--threads-per-rank", args->threads_per_rank,
                  "Kernel threads per rank (0: this machine's cores shared among its ranks)")
      ->check(integer_in_range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  sub->add_flag("--check", args->check, "Train the same steps on one device and fail on any difference");
  sub->add_option("--check-tolerance", args->check_tolerance,
                  "Relative tolerance of --check (default: 1e-10 for f64, 1e-4 for f32, 0.1 with bf16 compute)")
      ->check(non_negative_number());
  sub->add_flag("!--no-baselines", args->baselines, "Do not price the hand-written plans");
  sub->add_option("--dump-graphs", args->dump_graphs, "Write each rank's lowered graph to DIR/rank<r>.txt");
  sub->add_option("--json", args->json, "Write the losses and timings as JSON to this file instead of printing");
  sub->add_flag("--op-profile", args->op_profile,
                "Time every node of rank 0's graph and print measured against predicted time by op");
  sub->add_option("--parameters", args->parameters, "Rows of the parameter table (0: all)")->capture_default_str();
  add_precision_options(*sub, args->precision);
  add_checkpointing_option(*sub, args->checkpointing);
  sub->add_option("--save", args->save,
                  "Save a sharded checkpoint to DIR after the last step (each rank its shards; docs/checkpoint.md)");
  sub->add_option("--load", args->load,
                  "Resume from a checkpoint DIR saved on any mesh and plan: its parameters, optimizer state and step "
                  "count (the steps and data continue from there)");
  sub->add_option("--export-hf", args->export_hf,
                  "After the last step, write the model as a Hugging Face directory (config.json, model.safetensors); "
                  "for models read from a Hugging Face config");
  return {sub, [args] { return run_run(*args); }};
}

}  // namespace px::cli
