#include "parallax/ir/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "ir/ir_test_util.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "support/test_util.h"

namespace px::ir {
namespace {

using px::testing::all_close;
using px::testing::random_tensor;
using testing::error_text;
using testing::f64;
using testing::op;

struct Mlp {
  Tensor x = random_tensor({8, 4}, DType::Float64, 1);
  Tensor w1 = random_tensor({16, 4}, DType::Float64, 2);
  Tensor b1 = random_tensor({16}, DType::Float64, 3);
  Tensor w2 = random_tensor({3, 16}, DType::Float64, 4);
  Tensor b2 = random_tensor({3}, DType::Float64, 5);
  Tensor target = Tensor::from_vector({0, 2, 1, 1, 0, 2, 2, 1}, {8}, DType::Int64);

  std::vector<Tensor> inputs() const { return {x, w1, b1, w2, b2, target}; }

  static std::vector<Tensor> forward(const std::vector<Tensor>& in) {
    Tensor hidden = px::relu(px::linear(in[0], in[1], in[2]));
    Tensor logits = px::linear(hidden, in[3], in[4]);
    return {logits, px::cross_entropy(logits, in[5])};
  }

  Graph trace() const {
    Tracer tracer("mlp");
    std::vector<Tensor> proxies;
    const char* names[] = {"x", "w1", "b1", "w2", "b2", "target"};
    std::vector<Tensor> values = inputs();
    for (size_t i = 0; i < values.size(); ++i) proxies.push_back(tracer.add_input(names[i], values[i].meta_info()));
    InterceptScope scope(tracer);
    tracer.set_outputs(forward(proxies));
    return tracer.finish();
  }
};

TEST(Interpreter, MlpMatchesEagerExecution) {
  Mlp mlp;
  Graph graph = mlp.trace();
  std::vector<Tensor> eager = Mlp::forward(mlp.inputs());
  std::vector<Tensor> interpreted = interpret(graph, mlp.inputs());
  ASSERT_EQ(interpreted.size(), 2u);
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_TRUE(interpreted[i].is_dense());
    EXPECT_TRUE(all_close(interpreted[i], eager[i], 0, 0));
  }
  EXPECT_EQ(interpreted[1].shape(), Shape{});
}

TEST(Interpreter, MetaInputsGiveMetaOutputs) {
  Mlp mlp;
  Graph graph = mlp.trace();
  std::vector<Tensor> metas;
  for (const Tensor& input : mlp.inputs()) metas.push_back(Tensor::meta(input.shape(), input.dtype()));
  std::vector<Tensor> outputs = interpret(graph, metas);
  EXPECT_TRUE(outputs[0].is_meta());
  EXPECT_EQ(outputs[0].meta_info(), f64({8, 3}));
  EXPECT_EQ(outputs[1].meta_info(), f64({}));
}

TEST(Interpreter, RejectsInputsThatDoNotMatchTheGraph) {
  Mlp mlp;
  Graph graph = mlp.trace();
  std::vector<Tensor> inputs = mlp.inputs();
  inputs.pop_back();
  EXPECT_EQ(error_text<ValueError>([&] { interpret(graph, inputs); }),
            "ValueError: interpret: graph 'mlp' takes 6 inputs, got 5");
  inputs = mlp.inputs();
  inputs[1] = random_tensor({16, 5}, DType::Float64, 9);
  EXPECT_EQ(error_text<ValueError>([&] { interpret(graph, inputs); }),
            "ValueError: interpret: graph 'mlp' input 1 (%1 \"w1\") expects f64[16,4], got f64[16,5]");
  inputs[1] = mlp.w1.to(DType::Float32);
  EXPECT_NE(error_text<ValueError>([&] { interpret(graph, inputs); }).find("expects f64[16,4], got f32[16,4]"),
            std::string::npos);
  inputs[1] = Tensor();
  EXPECT_NE(error_text<ValueError>([&] { interpret(graph, inputs); }).find("input 1 (%1 \"w1\") is undefined"),
            std::string::npos);
}

TEST(Interpreter, ReturnsInputsAndRepeatedOutputs) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f64({3}));
  ValueId y = graph.add_node1(op("exp"), {x});
  graph.set_outputs({y, x, y});
  Tensor input = Tensor::from_vector({0, 1, 2}, {3}, DType::Float64);
  std::vector<Tensor> outputs = interpret(graph, {input});
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_TRUE(outputs[1].same(input));
  EXPECT_TRUE(outputs[0].same(outputs[2]));
  EXPECT_TRUE(all_close(outputs[0], {1.0, std::exp(1.0), std::exp(2.0)}));
}

TEST(Interpreter, ReportsGraphsWhoseRecordedTypesAreWrong) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f64({3}));
  ValueId y = graph.add_node1(op("exp"), {x});
  graph.set_outputs({y});
  graph.value(y).meta.shape = {4};
  std::string message = error_text<ValueError>([&] { interpret(graph, {random_tensor({3})}); });
  EXPECT_NE(message.find("interpret: graph 'g': %1 = exp(%0) produced f64[3], which differs from the graph's "
                         "recorded types"),
            std::string::npos)
      << message;
  graph.mutable_nodes()[0].op = nullptr;
  EXPECT_THROW(interpret(graph, {random_tensor({3})}), ValueError);
}

// An op that records, each time it runs, how many of the storages it saw before
// are still alive, then remembers its own input's storage.
OpDef make_probe(std::shared_ptr<std::vector<std::weak_ptr<Storage>>> seen, std::shared_ptr<std::vector<int>> alive) {
  OpDef def;
  def.name = "probe";
  def.inputs = {{"x"}};
  def.infer = [](const std::vector<TensorMeta>& inputs, const Attrs&) { return inputs; };
  def.kernel = [seen, alive](const std::vector<Tensor>& inputs, const Attrs&) {
    int count = 0;
    for (const auto& storage : *seen) count += storage.expired() ? 0 : 1;
    alive->push_back(count);
    seen->push_back(inputs[0].storage());
    return std::vector<Tensor>{Tensor::empty(inputs[0].shape(), inputs[0].dtype())};
  };
  def.cost = [](const std::vector<TensorMeta>&, const std::vector<TensorMeta>&, const Attrs&) { return OpCost{}; };
  return def;
}

TEST(Interpreter, ReleasesEachValueAfterItsLastUse) {
  auto seen = std::make_shared<std::vector<std::weak_ptr<Storage>>>();
  auto alive = std::make_shared<std::vector<int>>();
  Registry registry;
  registry.add(op("exp"));
  registry.add(make_probe(seen, alive));
  const OpDef& probe = registry.get("probe");
  Graph graph("chain");
  ValueId x = graph.add_input("x", f64({1024}));
  ValueId a = graph.add_node1(registry.get("exp"), {x});
  ValueId b = graph.add_node1(probe, {a});  // last use of a
  ValueId c = graph.add_node1(probe, {b});  // last use of b; a must be gone
  ValueId d = graph.add_node1(probe, {c});  // b must be gone too
  graph.set_outputs({d, c});
  Tensor input = random_tensor({1024});
  std::vector<Tensor> outputs = interpret(graph, {input});
  EXPECT_EQ(*alive, (std::vector<int>{0, 0, 0}));
  ASSERT_EQ(seen->size(), 3u);
  EXPECT_TRUE((*seen)[0].expired());   // a
  EXPECT_TRUE((*seen)[1].expired());   // b
  EXPECT_FALSE((*seen)[2].expired());  // c is a graph output
  EXPECT_TRUE(outputs[1].storage() == (*seen)[2].lock());
}

TEST(Interpreter, InsideATraceTheGraphIsInlined) {
  Graph inner("inner");
  ValueId x = inner.add_input("x", f64({2, 3}));
  inner.set_outputs({inner.add_node1(op("exp"), {inner.add_node1(op("neg"), {x})})});

  Tracer tracer("outer");
  Tensor input = tracer.add_input("in", f64({2, 3}));
  {
    InterceptScope scope(tracer);
    std::vector<Tensor> once = interpret(inner, {input});
    tracer.set_outputs(interpret(inner, once));
  }
  Graph outer = tracer.finish();
  EXPECT_EQ(outer.str(),
            "graph outer(%0: f64[2,3] \"in\") {\n"
            "  %1 = neg(%0) : f64[2,3]\n"
            "  %2 = exp(%1) : f64[2,3]\n"
            "  %3 = neg(%2) : f64[2,3]\n"
            "  %4 = exp(%3) : f64[2,3]\n"
            "  return %4\n"
            "}\n");
}

}  // namespace
}  // namespace px::ir
