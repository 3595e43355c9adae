// parallax calibrate: trains zoo models for a few steps on one rank with every node timed, fits
// each op's time model to the measurements (plan/calibration.h) and writes the calibrated device
// profile as JSON, for `--device FILE.json` in plan and run.

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "commands.h"
#include "option_checks.h"
#include "parallax/api/auto_parallel.h"
#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/plan/calibration.h"
#include "parallax/plan/device_profile.h"
#include "training_setup.h"

namespace px::cli {
namespace {

struct CalibrateArguments {
  std::vector<std::string> models;
  int64_t batch = 8;
  int64_t seq = 0;  // 0: min(max_seq, 16)
  int64_t steps = 4;
  int64_t ranks = 1;
  std::string dtype = "f32";
  std::string base = "cpu";
  std::string out;
  int64_t min_samples = 3;
};

// Rank 0's node samples over `args.steps` AdamW steps of `spec` (medians over the steps after the
// first, which pays for first-touch page faults): on one device, or data-parallel on `args.ranks`
// thread ranks, so that each rank's kernels run beside the others, sharing memory bandwidth and
// caches as they will in a parallel run.
std::vector<plan::OpSample> measure(const CalibrateArguments& args, const nn::ModelSpec& spec,
                                    const plan::DeviceProfile& base) {
  const Batches data{spec, args.batch, args.seq > 0 ? args.seq : std::min<int64_t>(spec.max_seq(), 16), 0};
  const dist::DeviceMesh mesh({args.ranks});
  std::vector<plan::OpSample> samples;
  std::mutex mutex;
  dist::launch(
      static_cast<int>(args.ranks),
      [&](int rank, dist::ProcessGroup& world) {
        auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
        with_model(spec, [&](auto& model) {
          AutoParallelOptions options;
          options.plan.device = base;
          options.train.time_nodes = true;
          AutoParallel ap(
              model, [&] { return data.metas(); }, mesh, options);
          ParallelModule module = ap.apply_placement(select_plan(ap, args.ranks == 1 ? "solver" : "DP", mesh), groups);
          std::vector<std::vector<double>> runs, updates;
          for (int64_t step = 0; step < args.steps; ++step) {
            const auto [a, b] = data.at(step);
            module.train_step(a, b);
            if (step > 0) {
              runs.push_back(module.last_stats().node_seconds);
              updates.push_back(module.last_update_seconds());
            }
          }
          if (rank != 0) return;
          std::lock_guard<std::mutex> lock(mutex);
          samples = plan::op_samples(module.program().graph, plan::median_node_seconds(runs));
          for (plan::OpSample& sample : plan::optimizer_update_samples(
                   module.trained_local_metas(), plan::median_node_seconds(updates), options.plan.optimizer_states)) {
            samples.push_back(std::move(sample));
          }
        });
      },
      dist::LaunchOptions{dist::Backend::Threads});  // ranks side by side in this process, even under mpirun
  return samples;
}

double total_predicted(const std::vector<plan::OpSample>& samples, const plan::DeviceProfile& device) {
  return plan::op_profile(samples, device).back().predicted_s;
}

int run_calibrate(const CalibrateArguments& args) {
  try {
    const plan::DeviceProfile base = plan::device_profile(args.base);
    const DType dtype = args.dtype == "f64" ? DType::Float64 : DType::Float32;
    std::vector<std::vector<plan::OpSample>> per_model;
    std::vector<plan::OpSample> all;
    std::vector<nn::ModelSpec> specs;  // all read first: a bad config fails before any measuring
    for (const std::string& name : args.models) {
      specs.push_back(nn::load_model(name));
      specs.back().mlp.dtype = specs.back().gpt.dtype = specs.back().llama.dtype = dtype;
    }
    for (const nn::ModelSpec& spec : specs) {
      std::cout << "measuring " << spec.describe() << " on " << args.ranks << " rank" << (args.ranks > 1 ? "s" : "")
                << " ..." << std::endl;
      per_model.push_back(measure(args, spec, base));
      all.insert(all.end(), per_model.back().begin(), per_model.back().end());
    }
    const plan::DeviceProfile calibrated =
        plan::calibrate(base, all, plan::CalibrationOptions{.min_samples = args.min_samples});
    std::ofstream file(args.out);
    file << plan::device_profile_json(calibrated);
    if (!file.flush()) throw ValueError("cannot write '" + args.out + "'");

    std::cout << "\nfitted " << calibrated.op_timings.size() << " op timings (op overhead for the rest "
              << std::setprecision(3) << calibrated.op_overhead_s * 1e6
              << " us); rank 0's graph time per model, collectives apart:\n";
    std::cout << std::left << std::setw(44) << "model" << std::right << std::setw(14) << "measured ms" << std::setw(12)
              << args.base + " ms" << std::setw(16) << "calibrated ms\n";
    for (size_t m = 0; m < per_model.size(); ++m) {
      double measured = 0;
      for (const plan::OpSample& sample : per_model[m]) {
        if (!sample.collective) measured += sample.seconds;  // as op_profile: communication apart
      }
      std::cout << std::left << std::setw(44) << args.models[m] << std::right << std::fixed << std::setprecision(2)
                << std::setw(14) << measured * 1e3 << std::setw(12) << total_predicted(per_model[m], base) * 1e3
                << std::setw(15) << total_predicted(per_model[m], calibrated) * 1e3 << "\n";
    }
    std::cout << "wrote " << args.out << "\n";
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "parallax calibrate: " << error.what() << std::endl;
    return 2;
  }
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArguments>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Time every op of a few training steps of zoo models on one rank of this machine, fit each op's time "
      "model, and write the calibrated device profile (JSON) for --device in plan and run");
  std::string names;
  for (const std::string& name : nn::zoo_names()) names += (names.empty() ? "" : ", ") + name;
  sub->add_option("--model", args->models, "Zoo models (" + names + ") or JSON config files; repeat for several")
      ->required();
  sub->add_option("--batch", args->batch, "Batch")->check(positive_integer())->capture_default_str();
  sub->add_option("--seq", args->seq, "Sequence length (default: the model's max_seq, at most 16)")
      ->check(positive_integer());
  sub->add_option("--steps", args->steps, "Training steps per model (the first is not timed)")
      ->check(integer_in_range(2, 1000))
      ->capture_default_str();
  sub->add_option("--ranks", args->ranks,
                  "Thread ranks measured side by side, data-parallel (the batch split among them); rank 0's "
                  "times are fitted. Use the ranks per machine your runs will have")
      ->check(positive_integer())
      ->capture_default_str();
  sub->add_option("--dtype", args->dtype, "f32 or f64")->check(CLI::IsMember({"f32", "f64"}))->capture_default_str();
  sub->add_option("--base", args->base, "The profile to calibrate: its peaks, capacity and links are kept")
      ->capture_default_str();
  sub->add_option("--min-samples", args->min_samples, "Nodes an op needs before it gets its own time model")
      ->check(positive_integer())
      ->capture_default_str();
  sub->add_option("--out", args->out, "Where to write the profile (JSON)")->required();
  return {sub, [args] { return run_calibrate(*args); }};
}

}  // namespace px::cli
