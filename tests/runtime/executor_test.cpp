#include "parallax/runtime/executor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallax/ir/interpreter.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/reduction.h"
#include "parallax/ops/shape.h"
#include "support/test_util.h"

namespace px::runtime {
namespace {

using px::testing::all_close;
using px::testing::error_message;
using px::testing::random_tensor;

using Fn = std::vector<Tensor> (*)(const std::vector<Tensor>&);

ir::Graph trace(const std::string& name, const std::vector<std::pair<std::string, TensorMeta>>& inputs, Fn fn) {
  ir::Tracer tracer(name);
  std::vector<Tensor> proxies;
  for (const auto& [input_name, meta] : inputs) proxies.push_back(tracer.add_input(input_name, meta));
  InterceptScope scope(tracer);
  tracer.set_outputs(fn(proxies));
  return tracer.finish();
}

std::vector<Tensor> mlp(const std::vector<Tensor>& in) {
  Tensor hidden = px::relu(px::linear(in[0], in[1], in[2]));
  Tensor logits = px::linear(hidden, in[3], in[4]);
  return {logits, px::cross_entropy(logits, in[5])};
}

struct MlpCase {
  std::vector<Tensor> inputs(uint64_t seed) const {
    return {random_tensor({8, 4}, DType::Float64, seed),   random_tensor({16, 4}, DType::Float64, seed + 1),
            random_tensor({16}, DType::Float64, seed + 2), random_tensor({3, 16}, DType::Float64, seed + 3),
            random_tensor({3}, DType::Float64, seed + 4),  px::testing::random_ints({8}, 0, 3, seed + 5)};
  }
  ir::Graph graph() const {
    std::vector<std::pair<std::string, TensorMeta>> metas;
    const char* names[] = {"x", "w1", "b1", "w2", "b2", "target"};
    std::vector<Tensor> values = inputs(0);
    for (size_t i = 0; i < values.size(); ++i) metas.emplace_back(names[i], values[i].meta_info());
    return trace("mlp", metas, mlp);
  }
};

void expect_same(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].meta_info(), expected[i].meta_info()) << "output " << i;
    EXPECT_TRUE(all_close(actual[i], expected[i], 0, 0)) << "output " << i;
  }
}

TEST(Executor, MatchesTheInterpreterOnAnMlp) {
  MlpCase c;
  ir::Graph graph = c.graph();
  ExecutionStats stats;
  expect_same(execute(graph, c.inputs(1), &stats), ir::interpret(graph, c.inputs(1)));
  EXPECT_EQ(stats.nodes, static_cast<int64_t>(graph.nodes().size()));
  EXPECT_GT(stats.peak_bytes, stats.input_bytes);
  EXPECT_GE(stats.seconds, 0.0);
}

TEST(Executor, TimesEachNodeOnlyWhenAsked) {
  MlpCase c;
  Executor executor(c.graph());
  ExecutionStats stats;
  stats.node_seconds = {1.0};  // overwritten
  executor.run(c.inputs(1), &stats);
  EXPECT_TRUE(stats.node_seconds.empty());
  const std::vector<Tensor> timed = executor.run(c.inputs(1), &stats, RunOptions{.time_nodes = true});
  expect_same(timed, ir::interpret(executor.graph(), c.inputs(1)));
  ASSERT_EQ(stats.node_seconds.size(), executor.graph().nodes().size());
  double sum = 0;
  for (double seconds : stats.node_seconds) {
    EXPECT_GE(seconds, 0.0);
    sum += seconds;
  }
  EXPECT_LE(sum, stats.seconds);  // the nodes run inside the run
}

TEST(Executor, LaterRunsReuseTheBuffersOfEarlierOnes) {
  MlpCase c;
  Executor executor(c.graph());
  ExecutionStats first, second, unpooled;
  const std::vector<Tensor> expected = ir::interpret(executor.graph(), c.inputs(1));
  executor.run(c.inputs(1), &first);
  EXPECT_GT(first.allocations, 0);
  EXPECT_GT(first.pool_bytes, 0);
  // The first run's outputs are gone: every buffer of the second run is a reused one.
  expect_same(executor.run(c.inputs(1), &second), expected);
  EXPECT_EQ(second.allocations, first.allocations);
  EXPECT_EQ(second.reused_allocations, second.allocations);
  EXPECT_EQ(second.pool_bytes, first.pool_bytes);
  // Without the pool: the same results, nothing counted.
  expect_same(executor.run(c.inputs(1), &unpooled, RunOptions{.pool_buffers = false}), expected);
  EXPECT_EQ(unpooled.allocations, 0);
  EXPECT_EQ(unpooled.reused_allocations, 0);
}

TEST(Executor, RunsTheSameGraphManyTimes) {
  MlpCase c;
  Executor executor(c.graph());
  for (uint64_t seed = 10; seed < 40; seed += 10) {
    expect_same(executor.run(c.inputs(seed)), ir::interpret(executor.graph(), c.inputs(seed)));
  }
}

std::vector<Tensor> shapes_and_reductions(const std::vector<Tensor>& in) {
  Tensor a = px::exp(in[0]).transpose(0, 1);
  Tensor b = px::softmax(px::matmul(a, in[1]), -1);
  std::vector<Tensor> parts = px::chunk(b, 2, 0);
  return {px::sum(parts[0], {0}), px::cat({parts[1], parts[0]}, 0), in[1], a};
}

TEST(Executor, MatchesTheInterpreterWithViewsChunksAndPassThroughOutputs) {
  ir::Graph graph =
      trace("mixed", {{"x", {{6, 5}, DType::Float32}}, {"w", {{6, 3}, DType::Float32}}}, shapes_and_reductions);
  std::vector<Tensor> inputs = {random_tensor({6, 5}, DType::Float32, 1), random_tensor({6, 3}, DType::Float32, 2)};
  std::vector<Tensor> outputs = execute(graph, inputs);
  expect_same(outputs, ir::interpret(graph, inputs));
  EXPECT_TRUE(outputs[2].same(inputs[1]));
}

TEST(Executor, MetaInputsGiveMetaOutputsAndNoBytes) {
  MlpCase c;
  std::vector<Tensor> metas;
  for (const Tensor& input : c.inputs(0)) metas.push_back(Tensor::meta(input.shape(), input.dtype()));
  ExecutionStats stats;
  std::vector<Tensor> outputs = execute(c.graph(), metas, &stats);
  EXPECT_TRUE(outputs[0].is_meta());
  EXPECT_EQ(stats.peak_bytes, 0);
}

// x -> a -> b -> c -> s, all f32[10,100] (4000 bytes) but s (a scalar, 4 bytes).
std::vector<Tensor> chain(const std::vector<Tensor>& in) {
  Tensor a = px::exp(in[0]);
  Tensor b = px::exp(a);
  Tensor c = px::exp(b);
  return {px::sum(c)};
}

TEST(Executor, PeakOfAChainFreesEachLinkAfterItsLastUse) {
  ir::Graph graph = trace("chain", {{"x", {{10, 100}, DType::Float32}}}, chain);
  ASSERT_EQ(graph.nodes().size(), 4u);
  ExecutionStats stats;
  std::vector<Tensor> out = execute(graph, {random_tensor({10, 100}, DType::Float32, 3)}, &stats);
  // a: x + a = 8000; b: x + a + b = 12000, then a goes; c: x + b + c = 12000, then b goes;
  // s: x + c + s = 8004. Keeping every link would reach 16004.
  EXPECT_EQ(stats.input_bytes, 4000);
  EXPECT_EQ(stats.peak_bytes, 12000);
  EXPECT_EQ(stats.nodes, 4);
}

// x f32[20,50] -> a = exp(x) [20,50] -> b = sum(a, 1) [20] -> c = exp(b) [20].
std::vector<Tensor> narrowing_chain(const std::vector<Tensor>& in) {
  Tensor a = px::exp(in[0]);
  Tensor b = px::sum(a, {1});
  return {px::exp(b)};
}

TEST(Executor, PeakOfAChainOfDifferentSizes) {
  ir::Graph graph = trace("narrowing", {{"x", {{20, 50}, DType::Float32}}}, narrowing_chain);
  ExecutionStats stats;
  execute(graph, {random_tensor({20, 50}, DType::Float32, 4)}, &stats);
  // a: 4000 + 4000; b: 4000 + 4000 + 80 = 8080, then a goes; c: 4000 + 80 + 80.
  EXPECT_EQ(stats.peak_bytes, 8080);
}

// a = exp(x); t = a^T (a view of a's storage); y = exp(t).
std::vector<Tensor> through_a_view(const std::vector<Tensor>& in) {
  Tensor a = px::exp(in[0]);
  Tensor t = px::transpose(a, 0, 1);
  return {px::exp(t)};
}

TEST(Executor, ViewsShareTheirBaseStorage) {
  ir::Graph graph = trace("view", {{"x", {{10, 100}, DType::Float32}}}, through_a_view);
  ASSERT_EQ(graph.nodes().size(), 3u);
  ExecutionStats stats;
  execute(graph, {random_tensor({10, 100}, DType::Float32, 5)}, &stats);
  // x + a (t adds nothing) + y = 12000; counting t on its own would give 16000.
  EXPECT_EQ(stats.peak_bytes, 12000);
}

std::vector<Tensor> view_of_input(const std::vector<Tensor>& in) { return {in[0].transpose(0, 1).unsqueeze(0)}; }

TEST(Executor, OutputsThatViewAnInputAddNothingAndUnusedInputsStillCount) {
  ir::Graph graph = trace("views", {{"x", {{4, 8}, DType::Float64}}}, view_of_input);
  ExecutionStats stats;
  Tensor x = random_tensor({4, 8}, DType::Float64, 6);
  std::vector<Tensor> out = execute(graph, {x}, &stats);
  EXPECT_TRUE(out[0].shares_storage_with(x));
  EXPECT_EQ(stats.input_bytes, 256);
  EXPECT_EQ(stats.peak_bytes, 256);
  std::vector<Tensor> (*unused)(const std::vector<Tensor>&) = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{px::exp(in[0])};
  };
  ir::Graph two = trace("unused", {{"x", {{4, 8}, DType::Float64}}, {"y", {{100}, DType::Float64}}}, unused);
  execute(two, {x, random_tensor({100}, DType::Float64, 7)}, &stats);
  EXPECT_EQ(stats.input_bytes, 256 + 800);
  EXPECT_EQ(stats.peak_bytes, 256 + 800 + 256);
  // Two inputs that are views of one storage count once.
  Tensor both = random_tensor({2, 4, 8}, DType::Float64, 8);
  std::vector<Tensor> (*add)(const std::vector<Tensor>&) = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{px::add(in[0], in[1])};
  };
  ir::Graph sum = trace("add", {{"x", {{4, 8}, DType::Float64}}, {"y", {{4, 8}, DType::Float64}}}, add);
  execute(sum, {both.select(0, 0), both.select(0, 1)}, &stats);
  EXPECT_EQ(stats.input_bytes, 512);
  EXPECT_EQ(stats.peak_bytes, 512 + 256);
}

TEST(Executor, InputErrorsNameTheInput) {
  ir::Graph graph = trace("chain", {{"x", {{10, 100}, DType::Float32}}}, chain);
  Executor executor(graph);
  EXPECT_EQ(error_message([&] { executor.run({}); }), "ValueError: execute: graph 'chain' takes 1 inputs, got 0");
  EXPECT_EQ(error_message([&] {
              executor.run({random_tensor({10, 10}, DType::Float32)});
            }),
            "ValueError: execute: graph 'chain' input 0 (%0 \"x\") expects f32[10,100], got f32[10,10]");
  EXPECT_EQ(error_message([&] {
              executor.run({random_tensor({10, 100}, DType::Float64)});
            }),
            "ValueError: execute: graph 'chain' input 0 (%0 \"x\") expects f32[10,100], got f64[10,100]");
  EXPECT_EQ(error_message([&] { executor.run({Tensor()}); }),
            "ValueError: execute: graph 'chain' input 0 (%0 \"x\") is undefined");
}

TEST(Executor, MalformedGraphsAreRejectedUpFront) {
  ir::Graph graph = trace("chain", {{"x", {{10, 100}, DType::Float32}}}, chain);
  ir::Graph dangling = graph;
  dangling.mutable_outputs() = {12345};
  EXPECT_EQ(error_message([&] { Executor{dangling}; }),
            "ValueError: execute: graph 'chain' returns %12345, which no input or earlier node defines (run verify() "
            "on the graph)");
  ir::Graph no_op = graph;
  no_op.mutable_nodes()[1].op = nullptr;
  EXPECT_NE(error_message([&] { Executor{no_op}; }).find("has no op"), std::string::npos);
}

}  // namespace
}  // namespace px::runtime
