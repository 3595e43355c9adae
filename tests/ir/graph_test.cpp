#include "parallax/ir/graph.h"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "ir/ir_test_util.h"
#include "parallax/ir/printer.h"

namespace px::ir {
namespace {

using testing::error_text;
using testing::f32;
using testing::Ints;
using testing::op;

TEST(Graph, AddNodeInfersOutputTypesAndCompletesAttributes) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({4, 8}));
  ValueId total = graph.add_node1(op("sum"), {x}, {{"dims", Ints{1}}});
  EXPECT_EQ(graph.meta(total), f32({4}));
  ASSERT_EQ(graph.nodes().size(), 1u);
  EXPECT_EQ(graph.nodes()[0].op, &op("sum"));
  EXPECT_EQ(graph.nodes()[0].attrs, (Attrs{{"dims", Ints{1}}, {"keepdim", false}}));
  EXPECT_EQ(graph.value(x).name, "x");
  EXPECT_EQ(graph.inputs(), std::vector<ValueId>{x});
}

TEST(Graph, MultiOutputNodeGetsOneValuePerOutput) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({4, 6}));
  std::vector<ValueId> parts = graph.add_node(op("split"), {x}, {{"sizes", Ints{2, 4}}, {"dim", int64_t{1}}});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(graph.meta(parts[0]), f32({4, 2}));
  EXPECT_EQ(graph.meta(parts[1]), f32({4, 4}));
  EXPECT_NE(parts[0], parts[1]);
  EXPECT_THROW(graph.add_node1(op("split"), {x}, {{"sizes", Ints{2, 4}}, {"dim", int64_t{1}}}), ValueError);
  EXPECT_EQ(graph.nodes().size(), 1u);  // the refused call left nothing behind
  EXPECT_EQ(graph.values().size(), 3u);
}

TEST(Graph, BadCallThrowsAndLeavesTheGraphUnchanged) {
  Graph graph("g");
  ValueId a = graph.add_input("a", f32({8, 512}));
  ValueId b = graph.add_input("b", f32({256, 1024}));
  std::string before = graph.str();
  std::string message = error_text<ShapeError>([&] { graph.add_node(op("matmul"), {a, b}); });
  EXPECT_NE(message.find("matmul"), std::string::npos) << message;
  EXPECT_NE(message.find("[8,512]"), std::string::npos) << message;
  EXPECT_EQ(graph.str(), before);
  EXPECT_EQ(graph.values().size(), 2u);

  message = error_text<ValueError>([&] { graph.add_node(op("exp"), {ValueId{99}}); });
  EXPECT_NE(message.find("exp: input 0 is %99"), std::string::npos) << message;
  message = error_text<ValueError>([&] { graph.add_node(op("exp"), {a}, {{"bogus", int64_t{1}}}); });
  EXPECT_NE(message.find("unknown attribute 'bogus'"), std::string::npos) << message;
  EXPECT_THROW(graph.add_node(op("exp"), {a, b}), ValueError);
  EXPECT_EQ(graph.str(), before);
}

TEST(Graph, SetOutputsRejectsUnknownValues) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({2}));
  std::string message = error_text<ValueError>([&] { graph.set_outputs({x, 5}); });
  EXPECT_NE(message.find("output 1 is %5"), std::string::npos) << message;
  graph.set_outputs({x, x});
  EXPECT_EQ(graph.outputs(), (std::vector<ValueId>{x, x}));
}

TEST(Graph, UsersListEveryReadInNodeOrder) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({3}));
  ValueId doubled = graph.add_node1(op("add"), {x, x});
  ValueId y = graph.add_node1(op("mul"), {doubled, x});
  auto users = graph.users();
  EXPECT_EQ(users[x], (std::vector<size_t>{0, 0, 1}));
  EXPECT_EQ(users[doubled], (std::vector<size_t>{1}));
  EXPECT_EQ(users.count(y), 0u);
}

TEST(Graph, IdsStayStableWhenNodesAreErased) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({3}));
  ValueId a = graph.add_node1(op("exp"), {x});
  ValueId b = graph.add_node1(op("neg"), {x});
  graph.set_outputs({b});
  graph.erase_nodes({true, false});
  EXPECT_FALSE(graph.has_value(a));
  EXPECT_TRUE(graph.has_value(b));
  ValueId c = graph.add_node1(op("exp"), {b});
  EXPECT_GT(c, b);  // a's id is not reused
  EXPECT_EQ(graph.nodes()[0].outputs, std::vector<ValueId>{b});
}

TEST(Graph, ReplaceAllUsesRewritesNodesAndOutputs) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({3}));
  ValueId a = graph.add_node1(op("exp"), {x});
  ValueId b = graph.add_node1(op("exp"), {x});
  ValueId c = graph.add_node1(op("add"), {a, b});
  graph.set_outputs({c, b});
  graph.replace_all_uses(b, a);
  EXPECT_EQ(graph.nodes()[2].inputs, (std::vector<ValueId>{a, a}));
  EXPECT_EQ(graph.outputs(), (std::vector<ValueId>{c, a}));
}

TEST(Graph, NewValueRejectsATakenId) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({3}));
  EXPECT_THROW(graph.new_value(f32({3}), "", x), ValueError);
  EXPECT_EQ(graph.new_value(f32({3}), "", ValueId{10}), 10);
  EXPECT_EQ(graph.new_value(f32({3})), 11);
  EXPECT_THROW(graph.value(42), ValueError);
  EXPECT_THROW(graph.new_value(f32({3}), "", std::numeric_limits<ValueId>::max()), ValueError);
  EXPECT_THROW(graph.new_value(f32({3}), "", ValueId{-1}), ValueError);
}

TEST(Graph, StrMatchesPrintAndStream) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({3}));
  graph.set_outputs({graph.add_node1(op("exp"), {x})});
  std::ostringstream stream;
  stream << graph;
  EXPECT_EQ(stream.str(), print(graph));
  EXPECT_EQ(graph.str(), "graph g(%0: f32[3] \"x\") {\n  %1 = exp(%0) : f32[3]\n  return %1\n}\n");
}

TEST(Graph, PhaseNamesRoundTrip) {
  for (Phase phase : {Phase::Forward, Phase::Backward, Phase::Optimizer}) {
    EXPECT_EQ(parse_phase(phase_name(phase)), phase);
  }
  EXPECT_EQ(parse_phase("sideways"), std::nullopt);
}

}  // namespace
}  // namespace px::ir
