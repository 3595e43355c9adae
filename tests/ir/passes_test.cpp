#include "parallax/ir/passes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/ir_test_util.h"
#include "parallax/ir/parser.h"
#include "parallax/ir/printer.h"
#include "parallax/ir/verifier.h"

namespace px::ir {
namespace {

using testing::error_text;
using testing::f32;
using testing::op;

// tests/ir/passes/*.pxir: "# RUN: pass, pass" on the first line, the input graph,
// then "# EXPECT" and exactly what the printer gives after running the passes.
struct PassCase {
  std::string file;
  std::vector<std::string> passes;
  std::string input;
  std::string expected;
};

std::filesystem::path cases_dir() { return std::filesystem::path(__FILE__).parent_path() / "passes"; }

std::vector<std::string> split_pass_list(const std::string& list) {
  std::vector<std::string> names;
  std::stringstream stream(list);
  std::string name;
  while (std::getline(stream, name, ',')) {
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

PassCase load_case(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  std::string text = buffer.str();
  const std::string run = "# RUN:";
  const std::string expect = "# EXPECT\n";
  size_t marker = text.find(expect);
  if (text.rfind(run, 0) != 0 || marker == std::string::npos) {
    ADD_FAILURE() << path << ": needs a '# RUN: ...' first line and a '# EXPECT' line";
    return {};
  }
  std::string first_line = text.substr(run.size(), text.find('\n') - run.size());
  return {path.filename().string(), split_pass_list(first_line), text.substr(0, marker),
          text.substr(marker + expect.size())};
}

TEST(PassFiles, TextInTextOut) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(cases_dir())) {
    if (entry.path().extension() == ".pxir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 4u) << "pass cases not found under " << cases_dir();
  for (const auto& path : files) {
    PassCase test_case = load_case(path);
    SCOPED_TRACE(test_case.file);
    PassManager manager;
    for (const std::string& name : test_case.passes) manager.add(create_pass(name));
    Graph graph = parse(test_case.input);
    manager.run(graph);
    EXPECT_EQ(print(graph), test_case.expected);
    // The expected text is itself a valid, stable graph.
    EXPECT_EQ(print(parse(test_case.expected)), test_case.expected);
  }
}

TEST(Passes, DceReportsWhatItRemoved) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({3}));
  graph.add_node(op("exp"), {x});
  graph.add_node(op("neg"), {x});
  ValueId kept = graph.add_node1(op("relu"), {x});
  graph.set_outputs({kept});
  PassContext context;
  EXPECT_TRUE(DeadCodeElimination().run(graph, context).changed);
  EXPECT_EQ(context.stats["dce.erased_nodes"], 2);
  EXPECT_EQ(graph.nodes().size(), 1u);
  EXPECT_EQ(graph.values().size(), 2u);  // the dead outputs left the value table
  EXPECT_FALSE(DeadCodeElimination().run(graph, context).changed);
  EXPECT_EQ(context.stats["dce.erased_nodes"], 2);
}

TEST(Passes, DceOnAGraphWithoutOutputsRemovesEverything) {
  Graph graph = parse("graph g(%0: f32[3]) {\n  %1 = exp(%0) : f32[3]\n  return\n}\n");
  PassManager().add<DeadCodeElimination>().run(graph);
  EXPECT_EQ(print(graph), "graph g(%0: f32[3]) {\n  return\n}\n");
}

TEST(Passes, CseReportsWhatItMerged) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({3}));
  ValueId a = graph.add_node1(op("exp"), {x});
  ValueId b = graph.add_node1(op("exp"), {x});
  ValueId c = graph.add_node1(op("exp"), {x});
  graph.set_outputs({a, b, c});
  PassContext context;
  EXPECT_TRUE(CommonSubexpressionElimination().run(graph, context).changed);
  EXPECT_EQ(context.stats["cse.erased_nodes"], 2);
  EXPECT_EQ(graph.outputs(), (std::vector<ValueId>{a, a, a}));
  EXPECT_FALSE(CommonSubexpressionElimination().run(graph, context).changed);
  EXPECT_TRUE(verify_errors(graph).empty());
}

TEST(Passes, CseDoesNotMergeDifferentTypesOrOps) {
  Graph graph = parse(R"(graph g(%0: f32[3], %1: f64[3]) {
  %2 = exp(%0) : f32[3]
  %3 = exp(%1) : f64[3]
  %4 = neg(%0) : f32[3]
  %5 = cast(%0) {dtype=f64} : f64[3]
  %6 = cast(%0) {dtype=bf16} : bf16[3]
  return %2, %3, %4, %5, %6
})");
  std::string before = print(graph);
  PassContext context;
  EXPECT_FALSE(PassManager().add<CommonSubexpressionElimination>().run(graph, context).changed);
  EXPECT_EQ(print(graph), before);
}

// Breaks the recorded type of the last node's first output.
class BreakTypes : public Pass {
 public:
  std::string_view name() const override { return "break_types"; }
  PassResult run(Graph& graph, PassContext&) const override {
    graph.value(graph.nodes().back().outputs[0]).meta.shape.push_back(1);
    return {true};
  }
};

TEST(PassManager, VerifiesAfterEachPassAndNamesTheCulprit) {
  Graph graph("g");
  ValueId x = graph.add_input("x", f32({4, 8}));
  ValueId y = graph.add_input("y", f32({4, 8}));
  graph.set_outputs({graph.add_node1(op("add"), {x, y})});
  PassManager manager;
  manager.add<DeadCodeElimination>().add<BreakTypes>().add<CommonSubexpressionElimination>();
  EXPECT_EQ(manager.pass_names(), (std::vector<std::string>{"dce", "break_types", "cse"}));
  std::string message = error_text<VerifyError>([&] { manager.run(graph); });
  EXPECT_EQ(message,
            "VerifyError: after pass 'break_types': graph 'g' has 1 error\n"
            "  %2 = add(%0, %1): inferred f32[4,8], recorded f32[4,8,1]");
}

TEST(PassManager, VerifiesItsInputAndCanBeToldNotTo) {
  Graph graph = parse_unchecked("graph g(%0: f32[4]) {\n  %1 = exp(%0) : f32[5]\n  return %1\n}\n");
  PassManager manager;
  manager.add<DeadCodeElimination>();
  EXPECT_NE(error_text<VerifyError>([&] { manager.run(graph); }).find("before the first pass: graph 'g' has 1 error"),
            std::string::npos);
  manager.set_verify(false);
  EXPECT_FALSE(manager.run(graph).changed);
}

TEST(PassManager, PassesAreStatelessAcrossGraphs) {
  PassManager manager;
  manager.add(create_pass("cse")).add(create_pass("dce"));
  for (int round = 0; round < 2; ++round) {
    Graph graph = parse("graph g(%0: f32[2]) {\n  %1 = exp(%0) : f32[2]\n  %2 = exp(%0) : f32[2]\n  return %2\n}\n");
    PassContext context;
    EXPECT_TRUE(manager.run(graph, context).changed);
    EXPECT_EQ(print(graph), "graph g(%0: f32[2]) {\n  %1 = exp(%0) : f32[2]\n  return %1\n}\n");
    EXPECT_EQ(context.stats["cse.erased_nodes"], 1);
  }
}

TEST(PassManager, UnknownPassNameListsTheKnownOnes) {
  EXPECT_EQ(error_text<ValueError>([] { create_pass("licm"); }),
            "ValueError: no pass named 'licm' (known passes: dce, cse)");
}

}  // namespace
}  // namespace px::ir
