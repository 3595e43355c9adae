// `parallax bench-collectives`, run as a process: a tiny sweep on thread ranks prints a row per
// collective and size, --help lists the options, and bad input fails with a clear message.

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.h"

namespace px {
namespace {

testing::CliRun parallax(const std::string& arguments) { return testing::run_cli(PARALLAX_CLI_PATH, arguments); }

// The size column of the table rows under "# <collective>, <n> ranks", checking the other columns.
std::vector<long long> sizes_of(const std::string& out, const std::string& collective, int n,
                                const std::string& dtype = "f32", const std::string& op = "sum") {
  const std::string title = "# " + collective + ", " + std::to_string(n) + " ranks\n";
  const size_t at = out.find(title);
  if (at == std::string::npos) return {};
  std::istringstream lines(out.substr(at + title.size()));
  std::string line;
  std::getline(lines, line);  // the column header
  std::vector<long long> sizes;
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    std::istringstream row(line);
    long long bytes = 0, count = 0;
    std::string type, redop;
    double us = 0, algbw = 0, busbw = 0;
    if (!(row >> bytes >> count >> type >> redop >> us >> algbw >> busbw)) break;
    EXPECT_EQ(type, dtype) << line;
    EXPECT_EQ(redop, collective == "all_reduce" || collective == "reduce_scatter" ? op : "none") << line;
    EXPECT_EQ(bytes, count * (dtype == "f64" ? 8 : 4)) << line;
    EXPECT_GT(us, 0) << line;
    EXPECT_GE(busbw, 0) << line;
    sizes.push_back(bytes);
  }
  return sizes;
}

TEST(CliBenchCollectives, TinySweepPrintsARowPerCollectiveAndSize) {
  const testing::CliRun run =
      parallax("bench-collectives --world-size 2 --min-bytes 8 --max-bytes 1K --iters 2 --warmup 1");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* text : {"# parallax bench-collectives: world size 2, backend threads, dtype f32, 2 iterations "
                           "after 1 warm-up",
                           "# memcpy 16 MiB, 1 thread: ", "memcpy reference: ", "all_reduce busbw at 16 MiB = "}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  const std::vector<long long> all_sizes = {8, 16, 32, 64, 128, 256, 512, 1024};
  for (const char* collective : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}) {
    // 8 bytes are two float32 elements: one per rank where the collective divides the buffer.
    EXPECT_EQ(sizes_of(run.out, collective, 2), all_sizes) << collective << "\n" << run.out;
  }
}

TEST(CliBenchCollectives, OneCollectiveOtherDtypeAndFactor) {
  const testing::CliRun run = parallax(
      "bench-collectives --world-size 2 --min-bytes 1K --max-bytes 64K --factor 4 --iters 1 --warmup 0 "
      "--collective reduce_scatter --dtype float64 --op max --backend threads");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("# reduce_scatter, 2 ranks"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("# all_reduce, 2 ranks"), std::string::npos) << run.out;
  EXPECT_EQ(sizes_of(run.out, "reduce_scatter", 2, "f64", "max"), (std::vector<long long>{1024, 4096, 16384, 65536}))
      << run.out;
}

TEST(CliBenchCollectives, HelpListsTheOptions) {
  const testing::CliRun help = parallax("bench-collectives --help");
  EXPECT_EQ(help.status, 0);
  for (const char* option : {"--world-size", "--min-bytes", "--max-bytes", "--factor", "--iters", "--warmup",
                             "--collective", "--dtype", "--op", "--backend"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option << "\n" << help.out;
  }
  EXPECT_NE(parallax("--help").out.find("bench-collectives"), std::string::npos);
}

TEST(CliBenchCollectives, BadInputIsAUsageError) {
  struct Case {
    std::string arguments, message;
  };
  for (const Case& bad : std::vector<Case>{
           {"--max-bytes 12Q", "bad size '12Q'"},
           {"--min-bytes -8", "bad size '-8'"},
           {"--world-size 0", "--world-size"},
           {"--collective foo", "--collective"},
           {"--dtype float16", "bad dtype 'float16'"},
           {"--op prod", "--op"},
           {"--backend nccl", "--backend"},
           {"--factor 1", "--factor"},
           {"--iters 0", "--iters"},
           {"--min-bytes 2K --max-bytes 1K", "need 1 <= --min-bytes (2K) <= --max-bytes (1K)"},
           {"--min-bytes 0", "need 1 <= --min-bytes (0)"},
       }) {
    const testing::CliRun run = parallax("bench-collectives " + bad.arguments);
    EXPECT_EQ(run.status, 1) << bad.arguments << "\n" << run.out << run.err;
    EXPECT_NE(run.err.find(bad.message), std::string::npos) << bad.arguments << "\n" << run.err;
    EXPECT_EQ(run.out.find("# parallax bench-collectives"), std::string::npos) << bad.arguments;
  }
}

}  // namespace
}  // namespace px
