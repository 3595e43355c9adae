// One training step of a GPT on one rank (issue 8, section 8): the joint forward+backward graph of
// training_step_joint run by runtime::Executor, then runtime::AdamW on every parameter. The same
// model, batch and step are timed in PyTorch by bench/torch_train_step.py; scripts/bench-torch.sh
// runs the two alternately and prints the ratio.
//
//   train_step_bench [--batch 8] [--seq 16] [--vocab 64] [--dim 32] [--layers 2] [--heads 4]
//                    [--threads 1] [--steps 50] [--warmup 10] [--repeats 5] [--seed 0]
//                    [--profile | --profile-shapes] [--check K --dump DIR] [--no-pool]
//                    [--openblas-threads]
//
// Prints `key: value` lines: median_ms (the median over `repeats` of the mean step time of `steps`
// steps), min_ms, loss0 (the first step's loss), nodes, params, openblas_core, blas_threads.
// --profile times `steps` steps instead through the executor with its per-node timer
// (RunOptions::time_nodes), then AdamW; it prints the time per op type and per phase (--profile-shapes: per op, input
// shapes and attributes). --check K writes the initial parameters, tokens and targets to DIR, runs K steps and writes
// the losses and the final parameters, for torch_train_step.py --check DIR to compare.
//
// --threads t runs the step on a px::ThreadPool of t threads (core/parallel.h): Parallax's kernels
// split over it, GEMMs included, with OpenBLAS single-threaded. --openblas-threads instead gives
// the t threads to OpenBLAS alone and runs Parallax's kernels on one thread (the behaviour before
// the pool, kept for comparison). --no-pool runs the executor without its buffer pool (RunOptions::pool_buffers),
// every buffer from the system allocator, to measure what the pool saves. PyTorch is given the same count for its
// intra-op pool and its BLAS.

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "parallax/autodiff/training_step.h"
#include "parallax/core/parallel.h"
#include "parallax/ir/graph.h"
#include "parallax/kernels/blas_threads.h"
#include "parallax/nn/zoo.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/op_def.h"
#include "parallax/runtime/executor.h"
#include "parallax/runtime/optimizer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int64_t batch = 8, seq = 16, vocab = 64, dim = 32, layers = 2, heads = 4;
  int threads = 1;
  bool openblas_threads = false;
  int steps = 50, warmup = 10, repeats = 5;
  uint64_t seed = 0;
  bool profile = false;
  bool by_shape = false;  // --profile-shapes: per op and input shapes
  int check = 0;
  std::string dump;
  bool pool = true;
};

Options parse(int argc, char** argv) {
  Options o;
  int64_t threads = o.threads, steps = o.steps, warmup = o.warmup, repeats = o.repeats, seed = 0, check = 0;
  const std::map<std::string, int64_t*> numbers{{"--batch", &o.batch},   {"--seq", &o.seq},       {"--vocab", &o.vocab},
                                                {"--dim", &o.dim},       {"--layers", &o.layers}, {"--heads", &o.heads},
                                                {"--threads", &threads}, {"--steps", &steps},     {"--warmup", &warmup},
                                                {"--repeats", &repeats}, {"--seed", &seed},       {"--check", &check}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (auto it = numbers.find(arg); it != numbers.end() && has_value) {
      *it->second = std::stoll(argv[++i]);
    } else if (arg == "--dump" && has_value) {
      o.dump = argv[++i];
    } else if (arg == "--no-pool") {
      o.pool = false;
    } else if (arg == "--openblas-threads") {
      o.openblas_threads = true;
    } else if (arg == "--profile" || arg == "--profile-shapes") {
      o.profile = true;
      o.by_shape = arg == "--profile-shapes";
    } else {
      throw std::invalid_argument("unknown option or missing value: " + arg +
                                  " (see the comment at the top of train_step_bench.cpp)");
    }
  }
  o.threads = static_cast<int>(threads);
  o.steps = static_cast<int>(steps);
  o.warmup = static_cast<int>(warmup);
  o.repeats = static_cast<int>(repeats);
  o.seed = static_cast<uint64_t>(seed);
  o.check = static_cast<int>(check);
  if (o.steps < 1 || o.repeats < 1 || o.warmup < 0) throw std::invalid_argument("steps, repeats >= 1, warmup >= 0");
  if (o.check > 0 && o.dump.empty()) throw std::invalid_argument("--check needs --dump DIR");
  return o;
}

// Tokens in [0, vocab) from a fixed 64-bit LCG: both sides read the same ones from the dump.
px::Tensor random_tokens(int64_t batch, int64_t seq, int64_t vocab, uint64_t state) {
  px::Tensor t = px::Tensor::empty({batch, seq}, px::DType::Int64);
  int64_t* data = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    data[i] = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(vocab));
  }
  return t;
}

void write_raw(const std::string& path, const px::Tensor& tensor) {
  px::Tensor dense = tensor.contiguous();
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(dense.raw_data()),
            static_cast<std::streamsize>(dense.numel() * (dense.dtype() == px::DType::Int64 ? 8 : 4)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string shape_str(const px::Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s;
}

// The step's pieces: the joint graph's executor, its inputs (parameters are the module's tensors,
// which AdamW updates in place), and where the loss and each parameter's gradient come out.
struct Step {
  px::runtime::Executor executor;
  std::vector<px::Tensor> inputs;
  std::vector<std::string> param_names;  // canonical FQN per parameter input, "model." stripped
  std::vector<px::Tensor> params;
  std::vector<int64_t> grad_outputs;  // graph output per parameter
  int64_t loss_output = 0;
  px::runtime::RunOptions run_options;
};

Step make_step(const px::JointProgram& program, px::nn::Module& module, const px::Tensor& tokens,
               const px::Tensor& targets) {
  Step step{px::runtime::Executor(program.graph), {}, {}, {}, {}, program.graph_output.at(0), {}};
  int64_t user = 0;
  for (const px::InputDescriptor& input : program.inputs) {
    switch (input.kind) {
      case px::InputDescriptor::Kind::Param: {
        px::Tensor param = module.slot(input.fqns.at(0));
        step.inputs.push_back(param);
        step.params.push_back(param);
        std::string name = input.fqns.at(0);
        step.param_names.push_back(name.rfind("model.", 0) == 0 ? name.substr(6) : name);
        step.grad_outputs.push_back(program.grad_output_of(input));
        break;
      }
      case px::InputDescriptor::Kind::UserInput:
        step.inputs.push_back(user++ == 0 ? tokens : targets);
        break;
      case px::InputDescriptor::Kind::Tangent:
        step.inputs.push_back(px::Tensor::scalar(1.0, px::DType::Float32));
        break;
      default:
        throw std::runtime_error("unexpected input " + input.str() + " in the GPT joint graph");
    }
  }
  if (user != 2) throw std::runtime_error("expected tokens and targets as the user inputs");
  return step;
}

// Forward + backward + AdamW; returns the loss.
double train_step(const Step& step, px::runtime::AdamW& adamw) {
  std::vector<px::Tensor> outputs = step.executor.run(step.inputs, nullptr, step.run_options);
  std::vector<px::Tensor> grads;
  grads.reserve(step.grad_outputs.size());
  for (int64_t index : step.grad_outputs)
    grads.push_back(index >= 0 ? outputs[static_cast<size_t>(index)] : px::Tensor());
  adamw.step(grads);
  return static_cast<double>(outputs[static_cast<size_t>(step.loss_output)].item<float>());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A GEMM node's shape: `batch` products of [m, k] x [k, n] (matmul, or linear's x·wᵀ).
struct GemmShape {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  double flops() const { return 2.0 * static_cast<double>(batch * m * n * k); }
};

std::optional<GemmShape> gemm_shape(const px::ir::Graph& graph, const px::ir::Node& node) {
  const std::string& op = node.op->name;
  if (op != "matmul" && op != "linear") return std::nullopt;
  const px::Shape& a = graph.meta(node.inputs.at(0)).shape;
  const px::Shape& b = graph.meta(node.inputs.at(1)).shape;
  if (a.size() < 2 || b.size() < 1) return std::nullopt;
  GemmShape g;
  g.k = a.back();
  if (op == "linear") {
    for (size_t d = 0; d + 1 < a.size(); ++d) g.m *= a[d];
    g.n = b.at(0);
    return g;
  }
  if (b.size() < 2) return std::nullopt;
  g.m = a[a.size() - 2];
  g.n = b.back();
  for (size_t d = 0; d + 2 < std::max(a.size(), b.size()); ++d) {
    const int64_t da = d + 2 < a.size() ? a[a.size() - 3 - d] : 1;
    const int64_t db = d + 2 < b.size() ? b[b.size() - 3 - d] : 1;
    g.batch *= std::max(da, db);
  }
  // A weight shared by the whole batch makes one GEMM of batch x m rows.
  if (b.size() == 2) {
    g.m *= g.batch;
    g.batch = 1;
  }
  return g;
}

// Seconds cblas_sgemm takes for the same products (row-major, no transposes, fresh output), the
// median of 3 runs, with OpenBLAS at `threads` threads.
double cblas_seconds(const GemmShape& g, int threads) {
  px::kernels::set_blas_threads(threads);
  std::vector<float> a(static_cast<size_t>(g.m * g.k), 0.5f), b(static_cast<size_t>(g.k * g.n), 0.25f);
  std::vector<float> c(static_cast<size_t>(g.m * g.n));
  std::vector<double> runs;
  for (int r = 0; r < 3; ++r) {
    Clock::time_point start = Clock::now();
    for (int64_t i = 0; i < g.batch; ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.m), static_cast<int>(g.n),
                  static_cast<int>(g.k), 1.0f, a.data(), static_cast<int>(g.k), b.data(), static_cast<int>(g.n), 0.0f,
                  c.data(), static_cast<int>(g.n));
    }
    runs.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(runs.begin(), runs.end());
  return runs[1];
}

// `passes` steps through the executor itself (its buffer pool and liveness, as the timed steps
// run), with its per-node timer on; then one AdamW step each. Time per op type and phase.
void profile(const Step& step, px::runtime::AdamW& adamw, int passes, bool by_shape, int threads) {
  const px::ir::Graph& graph = step.executor.graph();
  double gemm_ms = 0, gemm_flops = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int64_t> gemm_calls;  // per shape, per step
  std::map<std::string, std::pair<double, int64_t>> by_op;                       // ms, calls
  std::map<std::string, double> by_phase;
  double optimizer_ms = 0, nodes_ms = 0;
  px::runtime::RunOptions options = step.run_options;
  options.time_nodes = true;
  for (int pass = 0; pass < passes; ++pass) {
    px::runtime::ExecutionStats stats;
    std::vector<px::Tensor> outputs = step.executor.run(step.inputs, &stats, options);
    for (size_t n = 0; n < graph.nodes().size(); ++n) {
      const px::ir::Node& node = graph.nodes()[n];
      double ms = 1000.0 * stats.node_seconds.at(n);
      std::string key = node.op->name;
      if (by_shape) {
        for (px::ir::ValueId id : node.inputs) key += " [" + shape_str(graph.meta(id).shape) + "]";
        key += " " + node.attrs.str();
      }
      if (std::optional<GemmShape> g = gemm_shape(graph, node)) {
        gemm_ms += ms;
        gemm_flops += g->flops();
        if (pass == 0) ++gemm_calls[{g->batch, g->m, g->n, g->k}];
      }
      auto& entry = by_op[key];
      entry.first += ms;
      entry.second += 1;
      by_phase[std::string(px::ir::phase_name(node.provenance.phase))] += ms;
      nodes_ms += ms;
    }
    std::vector<px::Tensor> grads;
    for (int64_t index : step.grad_outputs) {
      grads.push_back(index >= 0 ? outputs.at(static_cast<size_t>(index)) : px::Tensor());
    }
    Clock::time_point start = Clock::now();
    adamw.step(grads);
    optimizer_ms += ms_since(start);
  }
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto& [name, entry] : by_op) sorted.emplace_back(entry.first, name);
  std::sort(sorted.rbegin(), sorted.rend());
  double total = nodes_ms + optimizer_ms;
  std::printf("profile: %d passes; per step: nodes %.3f ms, adamw %.3f ms\n", passes, nodes_ms / passes,
              optimizer_ms / passes);
  for (const auto& [phase, ms] : by_phase) std::printf("profile_phase: %-10s %8.3f ms\n", phase.c_str(), ms / passes);
  for (const auto& [ms, name] : sorted) {
    const auto& entry = by_op[name];
    std::printf("profile_op: %-32s %8.3f ms %5.1f%%  %4lld calls  %7.2f us/call\n", name.c_str(), ms / passes,
                100.0 * ms / total, static_cast<long long>(entry.second / passes), 1000.0 * ms / entry.second);
  }
  std::printf("profile_op: %-32s %8.3f ms %5.1f%%\n", "(adamw step)", optimizer_ms / passes,
              100.0 * optimizer_ms / total);
  if (gemm_ms == 0) return;
  // The same GEMM shapes through cblas_sgemm alone, on as many OpenBLAS threads as the step had.
  const int blas_before = px::kernels::blas_threads();
  double cblas_s = 0;
  for (const auto& [shape, calls] : gemm_calls) {
    const auto [batch, m, n, k] = shape;
    cblas_s += static_cast<double>(calls) * cblas_seconds(GemmShape{batch, m, n, k}, threads);
  }
  px::kernels::set_blas_threads(blas_before);
  std::printf("gemm_share: %.1f%% of the step (%.3f ms of %.3f ms)\n", 100.0 * gemm_ms / total, gemm_ms / passes,
              total / passes);
  std::printf("gemm_gflops: %.1f (step's matmul and linear nodes)\n", gemm_flops / (gemm_ms * 1e6));
  std::printf("cblas_sgemm_gflops: %.1f (same shapes, no transposes, OpenBLAS at %d thread(s): %.3f ms)\n",
              gemm_flops / passes / (cblas_s * 1e9), threads, cblas_s * 1e3);
}

int run(const Options& o) {
  px::kernels::set_blas_threads(o.openblas_threads ? o.threads : 1);
  px::ThreadPool pool(o.openblas_threads ? 1 : o.threads);
  px::ParallelScope parallel(&pool);
  px::nn::ModelSpec spec = px::nn::zoo_model("gpt-mini");
  spec.name = "gpt";
  spec.gpt.vocab = o.vocab;
  spec.gpt.max_seq = o.seq;
  spec.gpt.dim = o.dim;
  spec.gpt.n_layers = o.layers;
  spec.gpt.n_heads = o.heads;
  spec.gpt.dtype = px::DType::Float32;

  const px::JointProgram program = px::training_step_joint(spec, o.batch, o.seq);
  px::nn::LmLoss<px::nn::GPT> module(spec.gpt);
  module.materialize(o.seed);
  const px::Tensor tokens = random_tokens(o.batch, o.seq, o.vocab, o.seed * 2 + 1);
  const px::Tensor targets = random_tokens(o.batch, o.seq, o.vocab, o.seed * 2 + 2);
  Step step = make_step(program, module, tokens, targets);
  step.run_options.pool_buffers = o.pool;

  if (o.check > 0) {
    std::ofstream manifest(o.dump + "/manifest.txt");
    manifest << "config " << o.batch << " " << o.seq << " " << o.vocab << " " << o.dim << " " << o.layers << " "
             << o.heads << "\n";
    write_raw(o.dump + "/tokens.bin", tokens);
    write_raw(o.dump + "/targets.bin", targets);
    for (size_t i = 0; i < step.params.size(); ++i) {
      manifest << "param " << step.param_names[i] << " " << shape_str(step.params[i].shape()) << "\n";
      write_raw(o.dump + "/init." + step.param_names[i] + ".bin", step.params[i]);
    }
  }

  px::runtime::AdamW adamw(step.params);
  if (o.check > 0) {
    std::ofstream losses(o.dump + "/parallax_losses.txt");
    losses.precision(9);
    for (int k = 0; k < o.check; ++k) losses << train_step(step, adamw) << "\n";
    for (size_t i = 0; i < step.params.size(); ++i) {
      write_raw(o.dump + "/final." + step.param_names[i] + ".bin", step.params[i]);
    }
    std::printf("check_steps: %d\n", o.check);
    return 0;
  }

  double loss0 = train_step(step, adamw);
  for (int i = 0; i < o.warmup; ++i) train_step(step, adamw);
  if (o.profile) {
    profile(step, adamw, o.steps, o.by_shape, o.threads);
    return 0;
  }
  std::vector<double> per_step;
  for (int r = 0; r < o.repeats; ++r) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < o.steps; ++i) train_step(step, adamw);
    per_step.push_back(ms_since(start) / o.steps);
  }
  std::printf("median_ms: %.6f\n", median(per_step));
  std::printf("min_ms: %.6f\n", *std::min_element(per_step.begin(), per_step.end()));
  std::printf("loss0: %.6f\n", loss0);
  std::printf("nodes: %zu\n", program.graph.nodes().size());
  std::printf("params: %lld\n", static_cast<long long>(module.num_parameters()));
  std::printf("openblas_core: %s\n", openblas_get_corename());
  std::printf("blas_threads: %d\n", px::kernels::blas_threads());
  std::printf("pool_threads: %d\n", pool.threads());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "train_step_bench: %s\n", error.what());
    return 1;
  }
}
