// `parallax calibrate` and the calibrated profile in `parallax run --op-profile` and
// `parallax plan`, run as processes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_util.h"

namespace px {
namespace {

testing::CliRun parallax(const std::string& arguments) { return testing::run_cli(PARALLAX_CLI_PATH, arguments); }

TEST(CliCalibrate, WritesAProfileThatPlanAndRunUse) {
  const std::string profile = testing::temp_path("cpu.json"), json = testing::temp_path("run.json");
  const testing::CliRun calibrate =
      parallax("calibrate --model gpt-mini --model llama-mini --ranks 2 --steps 3 --out '" + profile + "'");
  ASSERT_EQ(calibrate.status, 0) << calibrate.err;
  for (const char* text :
       {"measuring gpt-mini", "on 2 ranks", "measuring llama-mini", "op timings", "calibrated ms", "wrote"}) {
    EXPECT_NE(calibrate.out.find(text), std::string::npos) << text << "\n" << calibrate.out;
  }
  const nlohmann::json saved = nlohmann::json::parse(testing::slurp(profile));
  EXPECT_EQ(saved["format"], "parallax-device-profile");
  EXPECT_EQ(saved["name"], "reference-cpu (calibrated)");
  ASSERT_TRUE(saved["op_timings"].contains("matmul:f32")) << saved.dump();
  EXPECT_GE(saved["op_timings"]["matmul:f32"]["samples"].get<int64_t>(), 3);
  EXPECT_GT(saved["op_overhead_s"].get<double>(), 0);

  const testing::CliRun plan = parallax("plan --model gpt-mini --mesh 2 --device '" + profile + "'");
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_NE(plan.out.find("reference-cpu (calibrated)"), std::string::npos) << plan.out;

  const testing::CliRun run =
      parallax("run --model gpt-mini --mesh 2 --steps 3 --no-baselines --op-profile --device '" + profile +
               "' --json '" + json + "'");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json result = nlohmann::json::parse(testing::slurp(json));
  EXPECT_GT(result["predicted_step_s"].get<double>(), 0);
  EXPECT_GT(result["executor_step_s"].get<double>(), 0);
  ASSERT_GE(result["op_profile"].size(), 2u);
  const nlohmann::json& total = result["op_profile"].back();
  EXPECT_EQ(total["op"], "total");
  EXPECT_GT(total["measured_s"].get<double>(), 0);
  EXPECT_GT(total["predicted_s"].get<double>(), 0);
  std::filesystem::remove(profile);
  std::filesystem::remove(json);
}

TEST(CliCalibrate, OnOneRankByDefault) {
  const std::string profile = testing::temp_path("mlp.json");
  const testing::CliRun calibrate = parallax("calibrate --model mlp --steps 2 --out '" + profile + "'");
  ASSERT_EQ(calibrate.status, 0) << calibrate.err;
  EXPECT_NE(calibrate.out.find("on 1 rank ..."), std::string::npos) << calibrate.out;
  const nlohmann::json saved = nlohmann::json::parse(testing::slurp(profile));
  EXPECT_TRUE(saved["op_timings"].contains("matmul:f32")) << saved.dump();
  std::filesystem::remove(profile);
}

TEST(CliCalibrate, RunPrintsTheOpProfile) {
  const testing::CliRun run = parallax("run --model mlp --mesh 2 --steps 2 --no-baselines --op-profile");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* text :
       {"rank 0's graph run: median", "measured ms", "predicted ms", "linear:f32", "total", "collectives: "}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
}

TEST(CliCalibrate, ErrorsAndUsage) {
  const std::string profile = testing::temp_path("never.json");
  const testing::CliRun unknown = parallax("calibrate --model gpt-nano --out '" + profile + "'");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("gpt-nano"), std::string::npos) << unknown.err;
  EXPECT_FALSE(std::filesystem::exists(profile));
  EXPECT_EQ(parallax("calibrate --model mlp").status, 1);  // --out is required
  EXPECT_EQ(parallax("calibrate --model mlp --steps 1 --out x.json").status, 1);
  const testing::CliRun missing = parallax("run --model mlp --mesh 2 --steps 1 --device '" + profile + "'");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
  const testing::CliRun help = parallax("calibrate --help");
  EXPECT_EQ(help.status, 0);
  for (const char* option : {"--model", "--batch", "--steps", "--ranks", "--base", "--out"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  }
  EXPECT_NE(parallax("--help").out.find("calibrate"), std::string::npos);
}

}  // namespace
}  // namespace px
