#include "parallax/ir/tracer.h"

#include <gtest/gtest.h>

#include "ir/ir_test_util.h"
#include "parallax/ir/interpreter.h"
#include "parallax/ir/provenance.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/reduction.h"
#include "parallax/ops/shape.h"
#include "support/test_util.h"

namespace px::ir {
namespace {

using px::testing::all_close;
using px::testing::random_tensor;
using testing::error_text;
using testing::f32;
using testing::f64;

TEST(Tracer, RecordsOpCallsAsNodes) {
  Tracer tracer("mlp");
  Tensor x = tracer.add_input("x", f32({8, 4}));
  Tensor w = tracer.add_input("w", f32({16, 4}));
  {
    InterceptScope scope(tracer);
    Tensor h = px::matmul(x, w.transpose(0, 1));
    EXPECT_TRUE(h.is_proxy());
    EXPECT_EQ(h.meta_info(), f32({8, 16}));
    std::vector<Tensor> halves = px::split(px::relu(h), {8, 8}, 1);
    tracer.set_outputs({px::sum(halves[0], {1}), halves[1]});
  }
  Graph graph = tracer.finish();
  EXPECT_EQ(graph.str(),
            "graph mlp(%0: f32[8,4] \"x\", %1: f32[16,4] \"w\") {\n"
            "  %2 = transpose(%1) {dim0=0, dim1=1} : f32[4,16]\n"
            "  %3 = matmul(%0, %2) : f32[8,16]\n"
            "  %4 = relu(%3) : f32[8,16]\n"
            "  %5, %6 = split(%4) {sizes=[8,8], dim=1} : f32[8,8], f32[8,8]\n"
            "  %7 = sum(%5) {dims=[1], keepdim=false} : f32[8]\n"
            "  return %7, %6\n"
            "}\n");
}

TEST(Tracer, StampsProvenanceFromTheScopes) {
  Tracer tracer("g");
  Tensor x = tracer.add_input("x", f32({4}));
  {
    InterceptScope scope(tracer);
    Tensor a = px::exp(x);
    Tensor b, c, d;
    {
      ProvenanceScope layer("layers.0");
      ProvenanceScope mlp("mlp");
      b = px::neg(a);
      ProvenanceScope backward(Phase::Backward);
      c = px::exp(b);
      EXPECT_EQ(current_provenance(), (Provenance{"layers.0.mlp", Phase::Backward}));
    }
    {
      ProvenanceScope optimizer(Provenance{"opt", Phase::Optimizer});
      d = px::neg(c);
    }
    tracer.set_outputs({d});
  }
  EXPECT_EQ(current_provenance(), Provenance{});
  Graph graph = tracer.finish();
  const std::vector<Node>& nodes = graph.nodes();
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].provenance, Provenance{});
  EXPECT_EQ(nodes[1].provenance, (Provenance{"layers.0.mlp", Phase::Forward}));
  EXPECT_EQ(nodes[2].provenance, (Provenance{"layers.0.mlp", Phase::Backward}));
  EXPECT_EQ(nodes[3].provenance, (Provenance{"opt", Phase::Optimizer}));
  EXPECT_NE(graph.str().find("%3 = exp(%2) : f32[4] @ \"layers.0.mlp\" backward"), std::string::npos) << graph.str();
}

TEST(Tracer, ProvenanceScopesUnwindOnThrow) {
  try {
    ProvenanceScope scope("boom");
    throw ValueError("x");
  } catch (const ValueError&) {
  }
  EXPECT_EQ(current_provenance(), Provenance{});
}

TEST(Tracer, ConcreteTensorsInsideTheTraceAreErrors) {
  Tracer tracer("g");
  Tensor x = tracer.add_input("x", f32({8, 4}));
  Tensor dense = Tensor::from_vector({1, 2, 3, 4}, {4, 1});
  InterceptScope scope(tracer);
  EXPECT_EQ(error_text<ValueError>([&] { px::matmul(x, dense); }),
            "ValueError: input 1 of matmul is a concrete tensor f32[4,1] not produced in this trace; "
            "make it a graph input");
  EXPECT_NE(error_text<ValueError>([&] {
              px::add(Tensor::meta({8, 4}), x);
            }).find("input 0 of add is a meta tensor f32[8,4] not produced in this trace"),
            std::string::npos);
  EXPECT_TRUE(tracer.graph().nodes().empty());
}

TEST(Tracer, ProxiesOfAnotherTraceAreErrors) {
  Tracer first("first");
  Tensor foreign = first.add_input("a", f32({4}));
  Tracer second("second");
  Tensor x = second.add_input("x", f32({4}));
  {
    InterceptScope scope(second);
    EXPECT_NE(error_text<ValueError>([&] {
                px::add(x, foreign);
              }).find("input 1 of add is a proxy f32[4] of another trace; make it a graph input"),
              std::string::npos);
    EXPECT_THROW(second.set_outputs({foreign}), ValueError);
  }
  EXPECT_FALSE(second.owns(foreign));
  EXPECT_TRUE(first.owns(foreign));
  EXPECT_EQ(first.value_of(foreign), 0);
  EXPECT_THROW(second.value_of(foreign), ValueError);
}

TEST(Tracer, ProxiesThatOutliveTheirTracerAreForeign) {
  Tensor orphan;
  {
    Tracer gone("gone");
    orphan = gone.add_input("x", f32({4}));
  }
  Tracer tracer("g");
  Tensor x = tracer.add_input("x", f32({4}));
  InterceptScope scope(tracer);
  EXPECT_THROW(px::add(x, orphan), ValueError);
}

TEST(Tracer, ProxiesOutsideTheirTraceAreErrors) {
  Tracer tracer("g");
  Tensor x = tracer.add_input("x", f32({4}));
  std::string message = error_text<ValueError>([&] { px::exp(x); });
  EXPECT_NE(message.find("exp: got a traced proxy tensor f32[4] outside the trace that made it"), std::string::npos)
      << message;
}

TEST(Tracer, ShapeErrorsLeaveTheGraphUnchanged) {
  Tracer tracer("g");
  Tensor a = tracer.add_input("a", f32({8, 512}));
  Tensor b = tracer.add_input("b", f32({256, 1024}));
  InterceptScope scope(tracer);
  std::string message = error_text<ShapeError>([&] { px::matmul(a, b); });
  EXPECT_NE(message.find("f32[8,512]"), std::string::npos) << message;
  EXPECT_TRUE(tracer.graph().nodes().empty());
  EXPECT_EQ(tracer.graph().values().size(), 2u);
}

TEST(Tracer, OutputsMustBeProxiesOfThisTrace) {
  Tracer tracer("g");
  tracer.add_input("x", f32({4}));
  EXPECT_EQ(error_text<ValueError>([&] { tracer.set_outputs({Tensor::from_vector({1}, {1})}); }),
            "ValueError: output 0 is a concrete tensor f32[1] not produced in this trace; make it a graph input");
  EXPECT_NE(error_text<ValueError>([&] { tracer.set_outputs({Tensor()}); }).find("output 0 is an undefined tensor"),
            std::string::npos);
}

TEST(Tracer, FinishHandsOverTheGraphOnce) {
  Tracer tracer("g");
  Tensor x = tracer.add_input("x", f32({4}));
  tracer.set_name(x, "renamed");
  tracer.set_outputs({x});
  Graph graph = tracer.finish();
  EXPECT_EQ(graph.str(), "graph g(%0: f32[4] \"renamed\") {\n  return %0\n}\n");
  EXPECT_NE(error_text<ValueError>([&] { tracer.finish(); }).find("the trace of graph 'g' is finished"),
            std::string::npos);
  EXPECT_THROW(tracer.add_input("y", f32({4})), ValueError);
  InterceptScope scope(tracer);
  EXPECT_NE(error_text<ValueError>([&] { px::exp(x); }).find("exp: the trace of graph 'g' is finished"),
            std::string::npos);
}

TEST(Tracer, ZeroInputOpsAreRecorded) {
  Tracer tracer("g");
  Tensor x = tracer.add_input("x", f32({2, 3}));
  {
    InterceptScope scope(tracer);
    Tensor ones = px::call1("full", {}, {{"shape", std::vector<int64_t>{2, 3}}, {"value", 1.0}});
    EXPECT_TRUE(ones.is_proxy());
    tracer.set_outputs({px::add(x, ones)});
  }
  Graph graph = tracer.finish();
  EXPECT_NE(graph.str().find("%1 = full() {shape=[2,3], value=1.0, dtype=f32} : f32[2,3]"), std::string::npos)
      << graph.str();
  std::vector<Tensor> out = interpret(graph, {Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3})});
  EXPECT_TRUE(all_close(out[0], {2, 3, 4, 5, 6, 7}));
}

TEST(Tracer, TracedGraphComputesWhatEagerComputes) {
  auto fn = [](const Tensor& a, const Tensor& b) { return px::sum(px::exp(a) * b + 2.0, {0}); };
  Tensor a = random_tensor({3, 5}, DType::Float64, 1);
  Tensor b = random_tensor({5}, DType::Float64, 2);
  Tracer tracer("fn");
  Tensor pa = tracer.add_input("a", a.meta_info());
  Tensor pb = tracer.add_input("b", b.meta_info());
  {
    InterceptScope scope(tracer);
    tracer.set_outputs({fn(pa, pb)});
  }
  Graph graph = tracer.finish();
  EXPECT_TRUE(all_close(interpret(graph, {a, b})[0], fn(a, b), 0, 0));
  EXPECT_EQ(graph.meta(graph.outputs()[0]), f64({5}));
}

TEST(Tracer, NestedTracersRecordIntoTheInnermost) {
  Tracer outer("outer");
  Tensor x = outer.add_input("x", f32({4}));
  InterceptScope outer_scope(outer);
  Tensor y = px::exp(x);
  {
    Tracer inner("inner");
    Tensor z = inner.add_input("z", f32({4}));
    InterceptScope inner_scope(inner);
    inner.set_outputs({px::neg(z)});
    EXPECT_EQ(inner.graph().nodes().size(), 1u);
  }
  outer.set_outputs({px::neg(y)});
  EXPECT_EQ(outer.graph().nodes().size(), 2u);
}

}  // namespace
}  // namespace px::ir
