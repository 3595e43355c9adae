#include "parallax/ir/verifier.h"

#include <gtest/gtest.h>

#include "ir/ir_test_util.h"
#include "parallax/ir/parser.h"

namespace px::ir {
namespace {

using testing::error_text;
using testing::f32;
using testing::Ints;
using testing::op;

// x, y: f32[4,8]; %2 = add(x, y); %3 = exp(%2); returns %3.
Graph small_graph() {
  Graph graph("small");
  ValueId x = graph.add_input("x", f32({4, 8}));
  ValueId y = graph.add_input("y", f32({4, 8}));
  ValueId sum = graph.add_node1(op("add"), {x, y});
  graph.set_outputs({graph.add_node1(op("exp"), {sum})});
  return graph;
}

// The only error, which must mention every piece of `expected`.
void expect_single_error(const Graph& graph, const std::vector<std::string>& expected) {
  std::vector<std::string> errors = verify_errors(graph);
  ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
  for (const std::string& piece : expected) {
    EXPECT_NE(errors[0].find(piece), std::string::npos) << "error: " << errors[0] << "\nexpected: " << piece;
  }
}

TEST(Verifier, AcceptsValidGraphs) {
  Graph graph = small_graph();
  EXPECT_TRUE(verify_errors(graph).empty());
  EXPECT_NO_THROW(verify(graph));
}

TEST(Verifier, WrongRecordedShapeNamesTheNode) {
  Graph graph = parse_unchecked(R"(graph g(%5: f32[4,8], %6: f32[4,8]) {
  %7 = add(%5, %6) : f32[4,9]
  return %7
})");
  expect_single_error(graph, {"%7 = add(%5, %6): inferred f32[4,8], recorded f32[4,9]"});
  std::string message = error_text<VerifyError>([&] { verify(graph); });
  EXPECT_EQ(message, "VerifyError: graph 'g' has 1 error\n  %7 = add(%5, %6): inferred f32[4,8], recorded f32[4,9]");
}

TEST(Verifier, WrongRecordedDTypeAndOutputCount) {
  Graph graph = small_graph();
  graph.value(3).meta.dtype = DType::Float64;
  expect_single_error(graph, {"%3 = exp(%2): inferred f32[4,8], recorded f64[4,8]"});

  Graph split = parse_unchecked(R"(graph g(%0: f32[4]) {
  %1 = split(%0) {sizes=[2,2]} : f32[2]
  return %1
})");
  expect_single_error(split, {"%1 = split(%0) {sizes=[2,2], dim=0}: inferred f32[2], f32[2], recorded f32[2]"});
}

TEST(Verifier, CollectsAllErrors) {
  Graph graph = parse_unchecked(R"(graph g(%0: f32[4,8], %1: f32[4,8]) {
  %2 = add(%0, %1) : f32[4,9]
  %3 = exp(%2) : f32[4,8]
  %4 = neg(%0) : bf16[4,8]
  return %3, %4
})");
  std::vector<std::string> errors = verify_errors(graph);
  // exp is checked against its input's recorded type, so the bad %2 shows there too.
  EXPECT_EQ(errors, (std::vector<std::string>{"%2 = add(%0, %1): inferred f32[4,8], recorded f32[4,9]",
                                              "%3 = exp(%2): inferred f32[4,9], recorded f32[4,8]",
                                              "%4 = neg(%0): inferred f32[4,8], recorded bf16[4,8]"}));
  std::string message = error_text<VerifyError>([&] { verify(graph, "after pass 'cse'"); });
  EXPECT_EQ(message.rfind("VerifyError: after pass 'cse': graph 'g' has 3 errors\n  %2 = add", 0), 0u) << message;
  EXPECT_NE(message.find("\n  %4 = neg(%0)"), std::string::npos) << message;
}

TEST(Verifier, UseBeforeDefinition) {
  Graph graph = small_graph();
  std::swap(graph.mutable_nodes()[0], graph.mutable_nodes()[1]);
  expect_single_error(graph, {"%3 = exp(%2): %2 is used before its definition"});
}

TEST(Verifier, UndefinedValue) {
  Graph graph = small_graph();
  graph.mutable_nodes()[1].inputs[0] = 42;
  expect_single_error(graph, {"%3 = exp(%42): %42 is undefined"});
  graph = small_graph();
  graph.mutable_outputs().push_back(17);
  expect_single_error(graph, {"return: output 1 is %17, which is never defined"});
}

TEST(Verifier, DuplicateDefinition) {
  Graph graph = small_graph();
  Node copy = graph.nodes()[1];
  graph.mutable_nodes().push_back(copy);
  expect_single_error(graph, {"%3 = exp(%2): redefines %3"});

  Graph inputs = small_graph();
  inputs.mutable_inputs().push_back(0);
  expect_single_error(inputs, {"graph input %0: redefines %0"});

  Graph node_redefines_input = small_graph();
  node_redefines_input.mutable_nodes()[1].outputs[0] = 1;
  node_redefines_input.erase_value(3);
  node_redefines_input.mutable_outputs() = {1};
  expect_single_error(node_redefines_input, {"%1 = exp(%2): redefines %1"});
}

TEST(Verifier, WrongAttributes) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({4, 8}));
  graph.set_outputs({graph.add_node1(op("sum"), {x}, {{"dims", Ints{1}}})});

  Graph wrong_type = graph;
  wrong_type.mutable_nodes()[0].attrs.set("keepdim", int64_t{3});
  expect_single_error(wrong_type,
                      {"%1 = sum(%0) {dims=[1], keepdim=3}: ValueError: sum: attribute 'keepdim' expects bool"});

  Graph unknown = graph;
  unknown.mutable_nodes()[0].attrs.set("bogus", 1.5);
  expect_single_error(unknown, {"unknown attribute 'bogus'"});

  Graph incomplete = graph;
  incomplete.mutable_nodes()[0].attrs = Attrs{{"dims", Ints{1}}};
  expect_single_error(incomplete, {"%1 = sum(%0) {dims=[1]}: attributes must be complete and in schema order: "
                                   "{dims=[1], keepdim=false}"});

  Graph reordered = graph;
  reordered.mutable_nodes()[0].attrs = Attrs{{"keepdim", false}, {"dims", Ints{1}}};
  expect_single_error(reordered, {"attributes must be complete and in schema order"});

  Graph out_of_range = graph;
  out_of_range.mutable_nodes()[0].attrs.set("dims", Ints{5});
  std::vector<std::string> errors = verify_errors(out_of_range);
  ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0].rfind("%1 = sum(%0) {dims=[5], keepdim=false}: ", 0), 0u) << errors[0];
}

TEST(Verifier, InputsThatTheOpRejects) {
  Graph graph = small_graph();
  graph.mutable_nodes()[0].inputs = {0};
  expect_single_error(graph, {"%2 = add(%0): ValueError: add: expected 2 tensor inputs, got 1"});

  Graph shapes = parse_unchecked(R"(graph g(%0: f32[8,512], %1: f32[256,1024]) {
  %2 = matmul(%0, %1) : f32[8,1024] @ "model.layers.0.mlp.up_proj" forward
  return %2
})");
  expect_single_error(shapes, {"%2 = matmul(%0, %1) [model.layers.0.mlp.up_proj, forward]: ShapeError: matmul:",
                               "f32[8,512]", "f32[256,1024]"});
}

TEST(Verifier, MissingOpAndStaleValues) {
  Graph graph = small_graph();
  graph.mutable_nodes()[1].op = nullptr;
  expect_single_error(graph, {"%3 = <no op>(%2): the node has no op"});

  Graph stale = small_graph();
  stale.new_value(f32({2}), "orphan");
  expect_single_error(stale, {"value table: %4 (f32[2]) is defined by no input or node"});

  Graph untyped = small_graph();
  untyped.erase_value(3);
  expect_single_error(untyped, {"%3 = exp(%2): %3 has no recorded type"});
}

}  // namespace
}  // namespace px::ir
