// The `parallax solve` command, run as a process (its path comes from CMake).

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan_test_util.h"
#include "support/cli_runner.h"

namespace px::plan {
namespace {

using px::testing::CliRun;
using testing::slurp;
using testing::spit;

CliRun parallax(const std::string& arguments) { return px::testing::run_cli(PARALLAX_CLI_PATH, arguments); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    problem_ = testing::temp_path("example.json");
    spit(problem_, testing::example_json());
  }
  void TearDown() override { std::remove(problem_.c_str()); }
  std::string problem_;
};

TEST_F(Cli, SolvePrintsOneJsonObject) {
  for (const std::string solver : {"auto", "ilp", "fast"}) {
    const CliRun run =
        parallax("solve '" + problem_ + "' --solver " + solver + " --time-limit 10 --seed 3 --stop-after-stall 50");
    ASSERT_EQ(run.status, 0) << run.err;
    const nlohmann::json json = nlohmann::json::parse(run.out);
    EXPECT_EQ(json["name"], "example");
    EXPECT_EQ(json["cost"], 445);
    EXPECT_EQ(json["feasible"], true);
    EXPECT_EQ(json["peak_usage"], 50);
    EXPECT_TRUE(json["wall_s"].is_number());
    EXPECT_EQ(json["solver"], solver == "fast" ? "fast" : "ilp");
    // Every solver proves the example optimal: CBC, and the fast solver by its bound.
    EXPECT_EQ(json["bound"], 445);
    EXPECT_EQ(json["optimal"], true);
    EXPECT_EQ(run.out.find('\n'), run.out.size() - 1) << "one line";
  }
}

TEST_F(Cli, FastSolverThreadsAndStall) {
  const CliRun run = parallax("solve '" + problem_ + "' --solver fast --threads 2 --stop-after-stall 50 --seed 1");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["cost"], 445);
  // Without a stall limit the search goes on until it proves its best optimal (the example, at
  // once) or its time runs out (a problem whose bound stays below: cycles and a tight limit).
  const CliRun proven = parallax("solve '" + problem_ + "' --solver fast --threads 1 --time-limit 30 --progress");
  ASSERT_EQ(proven.status, 0) << proven.err;
  EXPECT_EQ(nlohmann::json::parse(proven.out)["cost"], 445);
  EXPECT_EQ(nlohmann::json::parse(proven.out)["optimal"], true);
  EXPECT_LT(nlohmann::json::parse(proven.out)["wall_s"].get<double>(), 10.0);
  EXPECT_NE(proven.err.find("end: best 445  bound 445  gap 0.0000%  (proven optimal)"), std::string::npos)
      << proven.err;
  testing::RandomProblemSpec spec;
  spec.nodes = 150;
  spec.max_strategies = 6;
  spec.extra_edges = 60;
  spec.limit_fraction = 0.2;
  spec.prohibitive_fraction = 0.3;
  const std::string hard = testing::temp_path("hard.json");
  write_problem(testing::random_problem(8, spec), hard);
  const CliRun anytime = parallax("solve '" + hard + "' --solver fast --threads 1 --time-limit 1");
  std::remove(hard.c_str());
  ASSERT_EQ(anytime.status, 0) << anytime.err;
  const nlohmann::json anytime_json = nlohmann::json::parse(anytime.out);
  EXPECT_EQ(anytime_json["optimal"], false);
  EXPECT_GE(anytime_json["wall_s"].get<double>(), 1.0);
  EXPECT_EQ(parallax("solve '" + problem_ + "' --threads -1").status, 1);
  EXPECT_EQ(parallax("solve '" + problem_ + "' --stop-after-stall x").status, 1);
}

TEST_F(Cli, OutThenEvaluate) {
  const std::string solution = testing::temp_path("solution.json");
  ASSERT_EQ(parallax("solve '" + problem_ + "' --out '" + solution + "'").status, 0);
  const CliRun run = parallax("solve '" + problem_ + "' --evaluate '" + solution + "'");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["cost"], 445);
  EXPECT_EQ(json["feasible"], true);
  EXPECT_EQ(json["peak_step"], 50);
  // A solution over the limit is priced and flagged, not an error.
  spit(solution, "{\"strategies\": [0, 0, 1, 1, 0]}");
  const CliRun over = parallax("solve '" + problem_ + "' --evaluate '" + solution + "'");
  ASSERT_EQ(over.status, 0) << over.err;
  const nlohmann::json over_json = nlohmann::json::parse(over.out);
  EXPECT_EQ(over_json["feasible"], false);
  EXPECT_EQ(over_json["violation"], "usage 55 > limit 50 at time step 50");
  // A solution of the wrong length is a failure.
  spit(solution, "{\"strategies\": [0, 0]}");
  const CliRun short_run = parallax("solve '" + problem_ + "' --evaluate '" + solution + "'");
  EXPECT_EQ(short_run.status, 2);
  EXPECT_NE(short_run.err.find("the choice has 2 strategies for 5 nodes"), std::string::npos) << short_run.err;
  std::remove(solution.c_str());
}

TEST_F(Cli, GzipProblem) {
  const std::string gz = testing::temp_path("example.json.gz");
  write_problem(parse_problem(testing::example_json()), gz);
  const CliRun run = parallax("solve '" + gz + "' --solver fast --stop-after-stall 50");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["cost"], 445);
  std::remove(gz.c_str());
}

TEST_F(Cli, MalformedFileExitsTwoWithItsLocation) {
  spit(problem_, "{\"problem\": {\"nodes\": {\"intervals\": [[0, 1]], \"costs\": [[1]], \"usages\": [[1, 2]]}}}");
  const CliRun run = parallax("solve '" + problem_ + "'");
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("ParseError at 1:"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(problem_ + ": problem.nodes.usages[0]: expected 1 values (one per strategy), got 2"),
            std::string::npos)
      << run.err;
  const CliRun missing = parallax("solve /nonexistent/problem.json");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("cannot open '/nonexistent/problem.json'"), std::string::npos) << missing.err;
}

TEST_F(Cli, UsageErrorsExitOne) {
  EXPECT_EQ(parallax("solve '" + problem_ + "' --bogus").status, 1);
  EXPECT_EQ(parallax("solve '" + problem_ + "' --solver cplex").status, 1);
  EXPECT_EQ(parallax("solve '" + problem_ + "' --time-limit -3").status, 1);
  EXPECT_EQ(parallax("solve").status, 1);
  EXPECT_EQ(parallax("").status, 1);
  EXPECT_EQ(parallax("frobnicate").status, 1);
}

TEST_F(Cli, Help) {
  const CliRun top = parallax("--help");
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("solve"), std::string::npos) << top.out;
  const CliRun solve = parallax("solve --help");
  EXPECT_EQ(solve.status, 0);
  for (const char* option :
       {"--time-limit", "--solver", "--seed", "--out", "--evaluate", "--threads", "--stop-after-stall"}) {
    EXPECT_NE(solve.out.find(option), std::string::npos) << option;
  }
}

// `parallax plan`: a zoo model on a mesh, the report, the baselines next to it, and the files.
TEST(CliPlan, ReportsThePlanAndTheBaselines) {
  const std::string plan_path = testing::temp_path("plan.json");
  const std::string problem_path = testing::temp_path("problem.json.gz");
  const CliRun run = parallax("plan --model gpt-mini --mesh 2x2 --batch 4 --seq 8 --device cpu --out '" + plan_path +
                              "' --export-problem '" + problem_path + "' --explain h.0.attn.wq.weight");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* text :
       {"model   gpt-mini: GPT, 2 layers", "mesh    DeviceMesh(dp=2, tp=2) of reference-cpu, batch 4 x seq 8",
        "plan 'solver': step", "peak memory per device", "model.h.0.attn.wq.weight",
        "explain 'Param(model.h.0.attn.wq.weight) x2'", "solver against the hand-written plans", "\nDP ", "\nFSDP ",
        "\nTP ", "\nFSDP+TP "}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  const nlohmann::json plan = nlohmann::json::parse(slurp(plan_path));
  EXPECT_EQ(plan["format"], "parallax-plan");
  EXPECT_EQ(plan["fingerprint"]["mesh"], nlohmann::json::array({2, 2}));
  // The exported problem is the one solved: `solve` on it finds no cheaper plan than `plan` did.
  const CliRun solve = parallax("solve '" + problem_path + "' --solver fast --stop-after-stall 50");
  ASSERT_EQ(solve.status, 0) << solve.err;
  const double exported_cost = nlohmann::json::parse(solve.out)["cost"].get<double>();
  EXPECT_NEAR(exported_cost, plan["cost"].get<double>(), 1e-9 * plan["cost"].get<double>());
  std::remove(plan_path.c_str());
  std::remove(problem_path.c_str());
}

// The same problem gives the same plan file, byte for byte: in separate processes, with one or two
// OpenBLAS threads, and with the baselines solved on threads beside it or not at all.
TEST(CliPlan, SamePlanBytesAcrossRunsAndThreadCounts) {
  for (const std::string solver : {"ilp", "fast"}) {
    std::vector<std::string> files;
    for (const std::string variant :
         {"OPENBLAS_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=2 --no-baselines", "OPENBLAS_NUM_THREADS=2"}) {
      const std::string path = testing::temp_path("plan-" + solver + "-" + std::to_string(files.size()) + ".json");
      const size_t space = variant.find(' ');
      const std::string environment = variant.substr(0, space);
      const std::string extra = space == std::string::npos ? "" : variant.substr(space);
      // Through env(1), so that each run has its own OpenBLAS thread count.
      const CliRun run =
          px::testing::run_cli("/usr/bin/env", environment + " '" + std::string(PARALLAX_CLI_PATH) +
                                                   "' plan --model llama-mini --mesh 2x2 --batch 8 --seq 16 --solver " +
                                                   solver + " --time-limit 60 --out '" + path + "'" + extra);
      ASSERT_EQ(run.status, 0) << run.err;
      files.push_back(slurp(path));
      std::remove(path.c_str());
    }
    EXPECT_NE(files[0].find("\"format\""), std::string::npos);
    EXPECT_EQ(files[0], files[1]) << solver << ": one against two OpenBLAS threads, with against without the baselines";
    EXPECT_EQ(files[0], files[2]) << solver << ": a second run";
  }
}

TEST(CliPlan, ParameterMemoryShardsEveryParameter) {
  // An MLP on 8 devices with each parameter's share at most 1/8: FSDP-like, every parameter sharded.
  const CliRun run = parallax("plan --model mlp --mesh 8 --parameter-memory 0,0.125 --no-baselines --parameters 0");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* name : {"mlp.fc1.weight", "mlp.fc2.weight"}) {
    const size_t row = run.out.find(std::string("\n  ") + name);
    ASSERT_NE(row, std::string::npos) << name << "\n" << run.out;
    const std::string line = run.out.substr(row + 1, run.out.find('\n', row + 1) - row - 1);
    EXPECT_NE(line.find("[S("), std::string::npos) << line;
  }
  EXPECT_EQ(run.out.find("solver against"), std::string::npos);
}

TEST(CliPlan, ModelConfigFile) {
  const std::string config = testing::temp_path("model.json");
  spit(config, R"({"base": "llama-mini", "n_layers": 3, "dim": 64, "ffn_hidden": 128})");
  const CliRun run = parallax("plan --model '" + config + "' --mesh 4 --seq 16 --no-baselines");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("LLaMA, 3 layers, dim 64"), std::string::npos) << run.out;
  spit(config, R"({"kind": "llama", "n_layer": 3})");
  const CliRun typo = parallax("plan --model '" + config + "' --mesh 4");
  EXPECT_EQ(typo.status, 2);
  EXPECT_NE(typo.err.find("ParseError at 1:30: " + config + ": n_layer: unknown field"), std::string::npos) << typo.err;
  std::remove(config.c_str());
}

TEST(CliPlan, ErrorsAndUsage) {
  const CliRun unknown = parallax("plan --model gpt5 --mesh 2");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("'gpt5' is neither a zoo model (mlp, gpt-mini"), std::string::npos) << unknown.err;
  const CliRun budget = parallax("plan --model gpt2-124m --mesh 2 --memory-budget 0.5 --no-baselines");
  EXPECT_EQ(budget.status, 2);
  EXPECT_NE(budget.err.find("InfeasiblePlan: memory budget 500 MB"), std::string::npos) << budget.err;
  const CliRun seq = parallax("plan --model gpt-mini --mesh 2 --seq 17");
  EXPECT_EQ(seq.status, 2);
  EXPECT_NE(seq.err.find("seq must be in [1, 16]"), std::string::npos) << seq.err;
  EXPECT_EQ(parallax("plan --model mlp --mesh 2x").status, 1);
  EXPECT_EQ(parallax("plan --model mlp --mesh 0").status, 1);
  EXPECT_EQ(parallax("plan --mesh 2").status, 1);
  EXPECT_EQ(parallax("plan --model mlp --memory-budget 1 --no-memory-limit").status, 1);
  const CliRun help = parallax("plan --help");
  EXPECT_EQ(help.status, 0);
  for (const char* option : {"--model", "--mesh", "--batch", "--seq", "--device", "--memory-budget",
                             "--parameter-memory", "--out", "--export-problem", "--explain", "llama3-70b"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  }
}

}  // namespace
}  // namespace px::plan
