#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "parallax/core/error.h"
#include "parallax/plan/problem.h"
#include "plan/plan_test_util.h"
#include "support/test_util.h"

namespace px::plan {
namespace {

using px::testing::error_message;

using testing::slurp;
using testing::spit;

// A two-node problem; `edge_costs` and friends replace one part to break it.
std::string small_problem(const std::string& intervals = "[[0, 2], [1, 3]]",
                          const std::string& costs = "[[1, 2], [3, 4, 5]]",
                          const std::string& usages = "[[1, 1], [1, 1, 1]]", const std::string& edges = "[[0, 1]]",
                          const std::string& edge_costs = "[[1, 2, 3, 4, 5, 6]]", const std::string& limit = "10") {
  return "{\"problem\": {\"name\": \"t\",\n"
         " \"nodes\": {\"intervals\": " +
         intervals +
         ",\n"
         "  \"costs\": " +
         costs +
         ",\n"
         "  \"usages\": " +
         usages +
         "},\n"
         " \"edges\": {\"nodes\": " +
         edges +
         ",\n"
         "  \"costs\": " +
         edge_costs +
         "},\n"
         " \"usage_limit\": " +
         limit + "}}\n";
}

std::string parse_error(const std::string& text) {
  try {
    parse_problem(text, "t.json");
  } catch (const ParseError& error) {
    return error.what();
  } catch (const std::exception& error) {
    return std::string("not a ParseError: ") + error.what();
  }
  return "(no error)";
}

TEST(ProblemIo, SmallProblemParses) {
  const ShardingProblem problem = parse_problem(small_problem(), "t.json");
  EXPECT_EQ(problem.nodes.size(), 2u);
  EXPECT_EQ(problem.edges[0].costs.size(), 6u);
  EXPECT_EQ(problem.usage_limit, 10);
}

TEST(ProblemIo, ErrorsNameFileJsonPathLineAndColumn) {
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[1, 2], [3, 4, 5]]", "[[1, 1], [1, 1, 1]]", "[[0, 1]]",
                                      "[[1, 2, 3, 4, 5]]")),
            "ParseError at 6:13: t.json: problem.edges.costs[0]: expected 6 values (2 x 3 strategies of nodes 0 "
            "and 1), got 5");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [3, 1]]")),
            "ParseError at 2:34: t.json: problem.nodes.intervals[1]: the interval [3, 1) ends before it starts");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[1, 2]]")),
            "ParseError at 3:12: t.json: problem.nodes.costs: expected 2 entries (one per interval), got 1");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[1, 2], [3, 4, 5]]", "[[1, 1], [1, 1]]")),
            "ParseError at 4:22: t.json: problem.nodes.usages[1]: expected 3 values (one per strategy), got 2");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[1, \"x\"], [3, 4, 5]]")),
            "ParseError at 3:17: t.json: problem.nodes.costs[0][1]: expected a number, got string");
  EXPECT_EQ(parse_error(small_problem("[[0, 2.5], [1, 3]]")),
            "ParseError at 2:30: t.json: problem.nodes.intervals[0][1]: expected an integer, got 2.5");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[1, 2], [3, 4, 5]]", "[[1, 1], [1, 1, 1]]", "[[0, 5]]")),
            "ParseError at 5:26: t.json: problem.edges.nodes[0][1]: node 5 does not exist (there are 2 nodes)");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[1, 2], [3, 4, 5]]", "[[1, 1], [1, 1, 1]]", "[[1, 1]]")),
            "ParseError at 5:22: t.json: problem.edges.nodes[0]: a self edge on node 1");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[1, 2], [3, 4, 5]]", "[[1, 1], [1, 1, 1]]", "[[0, 1]]",
                                      "[[1, 2, 3, 4, 5, 6]]", "\"big\"")),
            "ParseError at 7:17: t.json: problem.usage_limit: expected a number, got string");
  EXPECT_EQ(parse_error(small_problem("[[0, 2], [1, 3]]", "[[], [3, 4, 5]]")),
            "ParseError at 3:13: t.json: problem.nodes.costs[0]: a node needs at least one strategy");
  EXPECT_EQ(parse_error("{\"x\": 1}"), "ParseError at 1:1: t.json: (root): missing \"problem\"");
  EXPECT_EQ(parse_error("{\"problem\": {\"nodes\": {\"intervals\": [], \"costs\": []}}}"),
            "ParseError at 1:23: t.json: problem.nodes: missing \"usages\"");
  EXPECT_EQ(parse_error("[1, 2]"), "ParseError at 1:1: t.json: (root): expected an object, got array");
}

TEST(ProblemIo, InvalidJsonNamesLineAndColumn) {
  const std::string message = parse_error("{\"problem\": {\"name\": \"t\",\n \"nodes\": [1, 2,]}}");
  EXPECT_EQ(message.rfind("ParseError at 2:", 0), 0u) << message;
  EXPECT_NE(message.find("t.json: invalid JSON: "), std::string::npos) << message;
}

TEST(ProblemIo, RoundTripPlainAndGzip) {
  ShardingProblem problem = testing::random_problem(3, {.nodes = 12});
  problem.nodes[0].name = "x";
  problem.nodes[1].strategy_names.assign(problem.nodes[1].costs.size(), "S(0)");
  problem.nodes[2].costs[0] = 0.25;  // a non-integer value survives too
  problem.edges[0].costs[0] = 1e18;  // the contest's "incompatible" value, written as an integer
  for (const std::string suffix : {".json", ".json.gz"}) {
    const std::string path = testing::temp_path("round-trip" + suffix);
    write_problem(problem, path);
    const std::string bytes = slurp(path);
    ASSERT_GT(bytes.size(), 2u);
    const bool gzip = static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b;
    EXPECT_EQ(gzip, suffix == ".json.gz");
    if (!gzip) {
      EXPECT_NE(bytes.find("1000000000000000000"), std::string::npos);
    }
    const ShardingProblem back = read_problem(path);
    EXPECT_EQ(back.name, problem.name);
    ASSERT_EQ(back.nodes.size(), problem.nodes.size());
    for (size_t i = 0; i < problem.nodes.size(); ++i) {
      EXPECT_EQ(back.nodes[i].name, problem.nodes[i].name);
      EXPECT_EQ(back.nodes[i].start, problem.nodes[i].start);
      EXPECT_EQ(back.nodes[i].end, problem.nodes[i].end);
      EXPECT_EQ(back.nodes[i].costs, problem.nodes[i].costs);
      EXPECT_EQ(back.nodes[i].usages, problem.nodes[i].usages);
      EXPECT_EQ(back.nodes[i].strategy_names.empty(), i != 1);
    }
    EXPECT_EQ(back.nodes[1].strategy_names, problem.nodes[1].strategy_names);
    ASSERT_EQ(back.edges.size(), problem.edges.size());
    for (size_t e = 0; e < problem.edges.size(); ++e) {
      EXPECT_EQ(back.edges[e].from, problem.edges[e].from);
      EXPECT_EQ(back.edges[e].to, problem.edges[e].to);
      EXPECT_EQ(back.edges[e].costs, problem.edges[e].costs);
    }
    EXPECT_EQ(back.usage_limit, problem.usage_limit);
    EXPECT_EQ(problem_to_json(back), problem_to_json(problem));
    std::remove(path.c_str());
  }
}

TEST(ProblemIo, FileErrors) {
  EXPECT_EQ(error_message([] { read_problem("/nonexistent/p.json"); }),
            "ValueError: cannot open '/nonexistent/p.json': No such file or directory");
  // A broken gzip stream (cut in the middle) is an error, not a short problem.
  const std::string path = testing::temp_path("cut.json.gz");
  write_problem(testing::random_problem(1, {.nodes = 200}), path);
  const std::string bytes = slurp(path);
  spit(path, bytes.substr(0, bytes.size() / 2));
  const std::string message = error_message([&] { read_problem(path); });
  EXPECT_NE(message.find("cut.json.gz"), std::string::npos) << message;
  std::remove(path.c_str());
  // The file name is in every parse error.
  const std::string bad = testing::temp_path("bad.json");
  spit(bad, "{\"problem\": 3}");
  EXPECT_EQ(error_message([&] { read_problem(bad); }),
            "ParseError at 1:13: " + bad + ": problem: expected an object, got number");
  std::remove(bad.c_str());
}

TEST(ProblemIo, ChoiceRoundTripAndErrors) {
  const ShardingProblem problem = parse_problem(testing::example_json());
  const std::string path = testing::temp_path("choice.json");
  write_choice(problem, {0, 0, 2, 1, 0}, path);
  EXPECT_EQ(read_choice(path), (Choice{0, 0, 2, 1, 0}));
  EXPECT_NE(slurp(path).find("\"name\":\"example\""), std::string::npos);
  spit(path, "{\"strategies\": [0, -1]}");
  EXPECT_EQ(error_message([&] { read_choice(path); }),
            "ParseError at 1:20: " + path + ": strategies[1]: expected a strategy index >= 0, got -1");
  spit(path, "{\"strategies\": [0, 1.5]}");
  EXPECT_EQ(error_message([&] { read_choice(path); }),
            "ParseError at 1:20: " + path + ": strategies[1]: expected an integer, got 1.5");
  spit(path, "{\"name\": \"x\"}");
  EXPECT_EQ(error_message([&] { read_choice(path); }),
            "ParseError at 1:1: " + path + ": (root): missing \"strategies\"");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace px::plan
