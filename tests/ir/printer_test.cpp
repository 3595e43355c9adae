#include "parallax/ir/printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/ir_test_util.h"
#include "parallax/ir/parser.h"

namespace px::ir {
namespace {

using testing::f32;
using testing::i64;
using testing::Ints;
using testing::op;

void expect_round_trip(const Graph& graph) {
  std::string text = print(graph);
  EXPECT_EQ(print(parse(text)), text);
}

TEST(Printer, PrintsTypesAttributesNamesAndProvenance) {
  Graph graph("mlp");
  ValueId x = graph.add_input("x", f32({8, 4}));
  ValueId w = graph.add_input("w1", f32({16, 4}));
  ValueId h = graph.add_node1(op("linear"), {x, w}, {}, {"layers.0", Phase::Forward});
  std::vector<ValueId> halves =
      graph.add_node(op("split"), {h}, {{"sizes", Ints{8, 8}}, {"dim", int64_t{1}}}, {"layers.0.mlp", Phase::Backward});
  ValueId total = graph.add_node1(op("sum"), {halves[0]});
  graph.value(total).name = "loss";
  graph.set_outputs({halves[1], total});
  EXPECT_EQ(print(graph),
            "graph mlp(%0: f32[8,4] \"x\", %1: f32[16,4] \"w1\") {\n"
            "  %2 = linear(%0, %1) : f32[8,16] @ \"layers.0\" forward\n"
            "  %3, %4 = split(%2) {sizes=[8,8], dim=1} : f32[8,8], f32[8,8] @ \"layers.0.mlp\" backward\n"
            "  %5 = sum(%3) {dims=[], keepdim=false} : f32[] \"loss\"\n"
            "  return %4, %5\n"
            "}\n");
  expect_round_trip(graph);
}

TEST(Printer, PrintsEveryAttributeTypeSoItParsesBack) {
  Graph graph("attrs");
  ValueId x = graph.add_input("", f32({2, 3}));
  ValueId indices = graph.add_input("", i64({4}));
  graph.add_node(op("mul_scalar"), {x}, {{"scalar", 0.1}});                      // float
  graph.add_node(op("mul_scalar"), {x}, {{"scalar", int64_t{3}}});               // int given for a float
  graph.add_node(op("gelu"), {x}, {{"approximate", std::string("tanh")}});       // string
  graph.add_node(op("cast"), {x}, {{"dtype", DType::BFloat16}});                 // dtype
  graph.add_node(op("argmax"), {x}, {});                                         // optional int: none
  graph.add_node(op("argmax"), {x}, {{"dim", int64_t{-1}}, {"keepdim", true}});  // optional int, bool
  graph.add_node(op("one_hot"), {indices}, {{"num_classes", int64_t{5}}});
  std::string text = print(graph);
  EXPECT_NE(text.find("graph attrs(%0: f32[2,3], %1: i64[4]) {"), std::string::npos) << text;
  EXPECT_NE(text.find("%2 = mul_scalar(%0) {scalar=0.1} : f32[2,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("%3 = mul_scalar(%0) {scalar=3.0} : f32[2,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("{approximate=\"tanh\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("{dtype=bf16} : bf16[2,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("{dim=none, keepdim=false} : i64[]"), std::string::npos) << text;
  EXPECT_NE(text.find("{dim=-1, keepdim=true} : i64[2,1]"), std::string::npos) << text;
  EXPECT_NE(text.find("{num_classes=5, dtype=f32} : f32[4,5]"), std::string::npos) << text;
  EXPECT_NE(text.find("  return\n}"), std::string::npos) << text;
  expect_round_trip(graph);
}

TEST(Printer, FloatsRoundTripExactly) {
  Graph graph("floats");
  ValueId x = graph.add_input("x", f32({2}));
  std::vector<double> values = {0.1,
                                1.0 / 3.0,
                                1e-5,
                                1e300,
                                -2.5e-300,
                                -0.0,
                                3.0,
                                123456789.0,
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::denorm_min()};
  for (double value : values) graph.add_node(op("add_scalar"), {x}, {{"scalar", value}});
  Graph parsed = parse(print(graph));
  ASSERT_EQ(parsed.nodes().size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    double got = parsed.nodes()[i].attrs.get_float("scalar");
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      EXPECT_EQ(got, values[i]) << print(graph);
      EXPECT_EQ(std::signbit(got), std::signbit(values[i]));
    }
  }
  EXPECT_EQ(print(parsed), print(graph));
}

TEST(Printer, QuotesNamesAndGraphNamesThatNeedIt) {
  Graph graph("my model");
  ValueId x = graph.add_input("a \"quoted\" \\ name", f32({1}));
  ValueId y = graph.add_node1(op("exp"), {x}, {}, {"blocks.0 \"odd\"", Phase::Optimizer});
  graph.value(y).name = "line\nbreak";
  graph.set_outputs({y});
  std::string text = print(graph);
  EXPECT_EQ(text,
            "graph \"my model\"(%0: f32[1] \"a \\\"quoted\\\" \\\\ name\") {\n"
            "  %1 = exp(%0) : f32[1] \"line\nbreak\" @ \"blocks.0 \\\"odd\\\"\" optimizer\n"
            "  return %1\n"
            "}\n");
  Graph parsed = parse(text);
  EXPECT_EQ(parsed.name(), "my model");
  EXPECT_EQ(parsed.value(0).name, "a \"quoted\" \\ name");
  EXPECT_EQ(parsed.value(1).name, "line\nbreak");
  EXPECT_EQ(parsed.nodes()[0].provenance, (Provenance{"blocks.0 \"odd\"", Phase::Optimizer}));
  EXPECT_EQ(print(parsed), text);
}

TEST(Printer, BackwardPhaseWithoutModulePathIsKept) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({2}));
  graph.set_outputs({graph.add_node1(op("neg"), {x}, {}, {"", Phase::Backward})});
  EXPECT_NE(print(graph).find("%1 = neg(%0) : f32[2] @ \"\" backward"), std::string::npos) << print(graph);
  expect_round_trip(graph);
}

TEST(Printer, ScalarsAndZeroSizedShapes) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({}));
  ValueId empty = graph.add_input("e", f32({0, 3}));
  graph.set_outputs({graph.add_node1(op("exp"), {x}), graph.add_node1(op("exp"), {empty})});
  EXPECT_NE(print(graph).find("(%0: f32[] \"x\", %1: f32[0,3] \"e\")"), std::string::npos) << print(graph);
  expect_round_trip(graph);
}

TEST(Printer, NodeLabelNamesTheNodeForErrors) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({4, 8}));
  ValueId y = graph.add_input("y", f32({4, 8}));
  graph.add_node(op("add"), {x, y});
  graph.add_node(op("sum"), {x}, {{"dims", Ints{0}}}, {"model.layers.0.mlp", Phase::Forward});
  EXPECT_EQ(node_label(graph.nodes()[0]), "%2 = add(%0, %1)");
  EXPECT_EQ(node_label(graph.nodes()[1]), "%3 = sum(%0) {dims=[0], keepdim=false} [model.layers.0.mlp, forward]");
  EXPECT_EQ(print_node(graph, graph.nodes()[0]), "%2 = add(%0, %1) : f32[4,8]");
}

}  // namespace
}  // namespace px::ir
