// Numeric options out of range or of the wrong kind: a usage error (status 1) whose message names
// the option, what it must be and what it got, for every command.

#include <gtest/gtest.h>

#include "support/cli_runner.h"

namespace px {
namespace {

testing::CliRun parallax(const std::string& arguments) { return testing::run_cli(PARALLAX_CLI_PATH, arguments); }

struct BadOption {
  std::string arguments;
  std::string message;
};

TEST(CliOptionChecks, NumbersOutOfRangeSayWhatTheyMustBe) {
  const BadOption cases[] = {
      {"plan --model mlp --batch -1", "--batch: must be a positive integer, got -1"},
      {"plan --model mlp --batch 1.5", "--batch: must be a positive integer, got 1.5"},
      {"plan --model mlp --seq 0", "--seq: must be a positive integer, got 0"},
      {"plan --model mlp --batch 99999999999999999999",
       "--batch: must be a positive integer, got 99999999999999999999"},
      {"plan --model mlp --memory-budget 0", "--memory-budget: must be a positive number, got 0"},
      {"plan --model mlp --time-limit nan", "--time-limit: must be a positive number, got nan"},
      {"run --model mlp --steps 0", "--steps: must be a positive integer, got 0"},
      {"run --model mlp --lr -0.1", "--lr: must be a positive number, got -0.1"},
      {"run --model mlp --lr 1e999", "--lr: must be a positive number, got 1e999"},
      {"run --model mlp --threads-per-rank -2", "--threads-per-rank: must be an integer from 0 to 2147483647, got -2"},
      {"run --model mlp --check-tolerance -1", "--check-tolerance: must be a non-negative number, got -1"},
      {"calibrate --model mlp --steps 1 --out x.json", "--steps: must be an integer from 2 to 1000, got 1"},
      {"calibrate --model mlp --ranks 0 --out x.json", "--ranks: must be a positive integer, got 0"},
      {"bench-collectives --factor 1", "--factor: must be an integer of at least 2, got 1"},
      {"bench-collectives --warmup -1", "--warmup: must be an integer from 0 to 2147483647, got -1"},
      {"solve problem.json --time-limit -5", "--time-limit: must be a positive number, got -5"},
  };
  for (const BadOption& bad : cases) {
    const testing::CliRun run = parallax(bad.arguments);
    EXPECT_EQ(run.status, 1) << bad.arguments;
    EXPECT_NE(run.err.find(bad.message), std::string::npos) << bad.arguments << "\n" << run.err;
    EXPECT_EQ(run.err.find("not in range"), std::string::npos) << bad.arguments << "\n" << run.err;
  }
}

TEST(CliOptionChecks, ValuesInRangePass) {
  // --help after the options: the options are checked, then nothing runs.
  for (const char* arguments : {"plan --model mlp --batch +4 --seq 8 --memory-budget 0.5 --time-limit 1e1 --help",
                                "run --model mlp --threads-per-rank 0 --check-tolerance 0 --lr 3e-4 --help"}) {
    const testing::CliRun run = parallax(arguments);
    EXPECT_EQ(run.status, 0) << arguments << "\n" << run.err;
  }
}

}  // namespace
}  // namespace px
