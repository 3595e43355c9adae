// Capture costs, measured:
//   - compiled-call overhead (guards + flatten + unflatten) with trivial compute: a program that
//     returns its N tensor inputs (no graph nodes), and one that also adds two of them (one op);
//   - capture + joint export of the LLaMA-3-8B-shaped model on meta tensors (construction apart).
// Run: build/bench/capture_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include "parallax/autodiff/export.h"
#include "parallax/capture/capture.h"
#include "parallax/nn/models.h"
#include "parallax/ops/elementwise.h"

namespace {

px::CaptureOptions named(std::string name, std::vector<std::string> input_names = {}) {
  px::CaptureOptions options;
  options.name = std::move(name);
  options.input_names = std::move(input_names);
  return options;
}

px::Tree tensor_inputs(int64_t leaves) {
  std::vector<px::Tensor> tensors;
  for (int64_t i = 0; i < leaves; ++i) tensors.push_back(px::Tensor::zeros({4}));
  return px::to_tree(std::make_tuple(tensors, int64_t{3}));
}

// forward(tensors, n) -> (tensors, n): every output leaf is a pass-through or a constant.
void BM_call_passthrough(benchmark::State& state) {
  px::Tree inputs = tensor_inputs(state.range(0));
  auto identity = [](const std::vector<px::Tensor>& tensors, int64_t n) { return std::make_tuple(tensors, n); };
  px::CapturedProgram program =
      px::capture(identity, px::from_tree<std::tuple<std::vector<px::Tensor>, int64_t>>(inputs), named("identity"));
  for (auto _ : state) benchmark::DoNotOptimize(program.run(inputs));
  state.counters["leaves"] = static_cast<double>(state.range(0) + 1);
}
BENCHMARK(BM_call_passthrough)->Arg(10)->Arg(100);

// The same through the typed call (C++ arguments converted to a Tree and back).
void BM_call_passthrough_typed(benchmark::State& state) {
  px::Tree inputs = tensor_inputs(state.range(0));
  auto args = px::from_tree<std::tuple<std::vector<px::Tensor>, int64_t>>(inputs);
  auto identity = [](const std::vector<px::Tensor>& tensors, int64_t n) { return std::make_tuple(tensors, n); };
  px::CapturedProgram program = px::capture(identity, args, named("identity"));
  const auto& tensors = std::get<0>(args);
  for (auto _ : state) {
    benchmark::DoNotOptimize(program.call<std::tuple<std::vector<px::Tensor>, int64_t>>(tensors, int64_t{3}));
  }
}
BENCHMARK(BM_call_passthrough_typed)->Arg(10)->Arg(100);

// forward(tensors, n) -> tensors[0] + tensors[1]: one op of 4 elements through the interpreter.
void BM_call_one_add(benchmark::State& state) {
  px::Tree inputs = tensor_inputs(state.range(0));
  auto add = [](const std::vector<px::Tensor>& tensors, int64_t) { return tensors[0] + tensors[1]; };
  px::CapturedProgram program =
      px::capture(add, px::from_tree<std::tuple<std::vector<px::Tensor>, int64_t>>(inputs), named("add"));
  for (auto _ : state) benchmark::DoNotOptimize(program.run(inputs));
}
BENCHMARK(BM_call_one_add)->Arg(10)->Arg(100);

void BM_construct_llama3_8b_meta(benchmark::State& state) {
  for (auto _ : state) {
    px::nn::Llama model(px::nn::llama3_8b());
    benchmark::DoNotOptimize(model.num_parameters());
  }
}
BENCHMARK(BM_construct_llama3_8b_meta)->Unit(benchmark::kMillisecond);

// Capture of forward(tokens [1, 2048]) -> logits, then the joint graph, all on meta tensors.
void BM_capture_and_export_llama3_8b_meta(benchmark::State& state) {
  px::nn::Llama model(px::nn::llama3_8b());
  px::Tensor tokens = px::Tensor::meta({1, 2048}, px::DType::Int64);
  size_t nodes = 0;
  for (auto _ : state) {
    px::CapturedProgram program = px::capture(model, std::make_tuple(tokens), named("llama3_8b"));
    px::JointProgram joint = px::export_joint(program);
    nodes = joint.graph.nodes().size();
    benchmark::DoNotOptimize(nodes);
  }
  state.counters["joint_nodes"] = static_cast<double>(nodes);
}
BENCHMARK(BM_capture_and_export_llama3_8b_meta)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
