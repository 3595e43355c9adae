// `parallax run`, run as a process: training on thread ranks with --check against one device,
// graph dumps, baseline plans, and the failures users meet.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/cli_runner.h"
#include "support/test_util.h"

namespace px {
namespace {

testing::CliRun parallax(const std::string& arguments) { return testing::run_cli(PARALLAX_CLI_PATH, arguments); }

TEST(CliRun, TrainsOnFourThreadRanksAndMatchesOneDevice) {
  const std::string graphs = testing::temp_path("graphs"), json = testing::temp_path("run.json");
  const testing::CliRun run = parallax("run --model gpt-mini --mesh 2x2 --steps 4 --dtype f64 --check --dump-graphs '" +
                                       graphs + "' --json '" + json + "'");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json result = nlohmann::json::parse(testing::slurp(json));
  EXPECT_EQ(result["backend"], "threads");
  EXPECT_EQ(result["check"], "ok");
  ASSERT_EQ(result["losses"].size(), 4u);
  EXPECT_LT(result["losses"][3].get<double>(), result["losses"][0].get<double>());  // it learns
  EXPECT_GT(result["pool_bytes"].get<double>(), 0);  // the executor's buffers come from its pool
  for (int rank = 0; rank < 4; ++rank) {
    const std::string text = testing::slurp(graphs + "/rank" + std::to_string(rank) + ".txt");
    EXPECT_NE(text.find("# rank " + std::to_string(rank) + " at ["), std::string::npos) << rank;
  }
  std::filesystem::remove_all(graphs);
  std::filesystem::remove(json);
}

TEST(CliRun, PrintsThePlanTheBaselinesAndTheLoss) {
  const testing::CliRun run = parallax("run --model llama-mini --mesh 4 --plan FSDP --steps 3 --dtype f64 --check");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* text : {"model   llama-mini: LLaMA", "DeviceMesh(dp=4), threads backend", "plan 'FSDP'",
                           "predicted step time against the hand-written plans", "step    3  loss ", "tokens/s",
                           "peak memory per rank", "check: the mesh run matches the single-device run"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  // More thread ranks than cores: the output says why the prediction is low.
  const bool oversubscribed = std::thread::hardware_concurrency() < 4;
  EXPECT_EQ(run.out.find("4 thread ranks share this machine's") != std::string::npos, oversubscribed) << run.out;
}

TEST(CliRun, CheckFailsLoudly) {
  // Tensor parallelism adds partial sums in another order than one device does: equal to 1e-10,
  // never bit for bit, so a zero tolerance must fail.
  const testing::CliRun run = parallax(
      "run --model mlp --mesh 2 --plan TP --steps 2 --dtype f64 --check "
      "--check-tolerance 0 --no-baselines");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.out.find("check FAILED (float64, relative 0)"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("parallax run: check failed: "), std::string::npos) << run.err;
}

TEST(CliRun, ChecksATwoDimensionalBaselineAgainstOneDevice) {
  // FSDP+TP exists only on 2-D meshes: the one-device reference run must not ask for it.
  const testing::CliRun run =
      parallax("run --model llama-mini --mesh 2x2 --plan FSDP+TP --steps 2 --dtype f64 --check --no-baselines");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("plan 'FSDP+TP'"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("check: the mesh run matches"), std::string::npos) << run.out;
}

TEST(CliRun, MixedPrecisionPolicyTrainsInBf16WithFloat32Masters) {
  const testing::CliRun run = parallax(
      "run --model llama-mini --mesh 2x2 --steps 4 --check --no-baselines --param-dtype bf16 --reduce-dtype f32 "
      "--output-dtype f32");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* text : {"dtypes  param bf16, reduce f32, output f32", "f32[32,32]",
                           "check: the mesh run matches the single-device run (float32 with bf16 compute, relative "
                           "0.1)"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  const testing::CliRun bad = parallax("run --model mlp --param-dtype i64");
  EXPECT_EQ(bad.status, 1);  // a usage error
  const testing::CliRun plan =
      parallax("plan --model gpt-mini --mesh 2 --param-dtype bf16 --reduce-dtype f64 --no-baselines");
  EXPECT_EQ(plan.status, 2);
  EXPECT_NE(plan.err.find("reduce_dtype f64 must be one of the two"), std::string::npos) << plan.err;
}

TEST(CliRun, ErrorsAndUsage) {
  const testing::CliRun plan = parallax("run --model mlp --mesh 2 --plan ZeRO-7");
  EXPECT_EQ(plan.status, 2);
  EXPECT_NE(plan.err.find("--plan: 'ZeRO-7' is neither solver, a baseline"), std::string::npos) << plan.err;
  EXPECT_EQ(parallax("run --model mlp --mesh 2x").status, 1);
  EXPECT_EQ(parallax("run --model mlp --dtype f16").status, 1);
  EXPECT_EQ(parallax("run --model mlp --steps 0").status, 1);
  EXPECT_EQ(parallax("run --mesh 2").status, 1);
  const testing::CliRun help = parallax("run --help");
  EXPECT_EQ(help.status, 0);
  for (const char* option : {"--model", "--mesh", "--steps", "--plan", "--check", "--dump-graphs", "--backend"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  }
  const testing::CliRun top = parallax("--help");
  for (const char* command : {"plan", "run", "solve"}) EXPECT_NE(top.out.find(command), std::string::npos);
}

}  // namespace
}  // namespace px

namespace px {
namespace {

// The "step N  loss X" lines of a run's output.
std::vector<std::string> loss_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("step ", 0) == 0) lines.push_back(line.substr(0, line.find("  ", line.find("loss"))));
  }
  return lines;
}

TEST(CliRun, SavedRunResumesOnAnotherMeshWithTheUninterruptedLosses) {
  const std::string checkpoint = testing::temp_path("checkpoint");
  std::filesystem::remove_all(checkpoint);
  const std::string common = "run --model llama-mini --dtype f64 --no-baselines ";
  const testing::CliRun whole = parallax(common + "--mesh 2x2 --plan FSDP+TP --steps 6");
  const testing::CliRun first = parallax(common + "--mesh 2x2 --plan FSDP+TP --steps 3 --save '" + checkpoint + "'");
  const testing::CliRun second = parallax(common + "--mesh 4 --plan FSDP --steps 3 --load '" + checkpoint + "'");
  ASSERT_EQ(whole.status, 0) << whole.err;
  ASSERT_EQ(first.status, 0) << first.err;
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_NE(first.out.find("saved   " + checkpoint + " at step 3"), std::string::npos) << first.out;
  EXPECT_NE(second.out.find("loaded  " + checkpoint + " at step 3"), std::string::npos) << second.out;
  std::vector<std::string> resumed = loss_lines(first.out);
  for (const std::string& line : loss_lines(second.out)) resumed.push_back(line);
  ASSERT_EQ(resumed.size(), 6u) << first.out << second.out;
  EXPECT_EQ(resumed, loss_lines(whole.out));  // steps 4 to 6 numbered and valued as one run's
  std::filesystem::remove_all(checkpoint);
  const testing::CliRun missing = parallax(common + "--mesh 2 --steps 1 --load '" + checkpoint + "'");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("no checkpoint.json"), std::string::npos) << missing.err;
}

TEST(CliRun, HuggingFaceDirectoryTrainsExportsAndImports) {
  const std::string model = testing::temp_path("hf-config"), exported = testing::temp_path("hf-export");
  std::filesystem::remove_all(exported);
  std::filesystem::create_directories(model);
  testing::spit(model + "/config.json", R"({"architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu",
    "hidden_size": 32, "intermediate_size": 48, "max_position_embeddings": 32, "num_attention_heads": 4,
    "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "tie_word_embeddings": true, "use_sliding_window": false, "vocab_size": 64, "torch_dtype": "float32"})");
  const testing::CliRun trained =
      parallax("run --model '" + model + "' --mesh 2 --plan FSDP --steps 2 --dtype f64 --no-baselines --export-hf '" +
               exported + "'");
  ASSERT_EQ(trained.status, 0) << trained.err;
  EXPECT_NE(trained.out.find("Qwen2ForCausalLM, 2 layers, dim 32"), std::string::npos) << trained.out;
  EXPECT_NE(trained.out.find("exported " + exported + " (Hugging Face Qwen2ForCausalLM)"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(exported + "/model.safetensors"));
  // Imported on one rank, training starts from the trained weights: on the same first batch, its
  // loss is below the untrained model's.
  const testing::CliRun imported =
      parallax("run --model '" + exported + "' --mesh 1 --steps 1 --dtype f64 --no-baselines");
  ASSERT_EQ(imported.status, 0) << imported.err;
  EXPECT_NE(imported.out.find("weights " + exported + " (Hugging Face safetensors)"), std::string::npos)
      << imported.out;
  const std::vector<std::string> before = loss_lines(trained.out), after = loss_lines(imported.out);
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(after.size(), 1u);
  auto loss = [](const std::string& line) { return std::stod(line.substr(line.find("loss") + 5)); };
  EXPECT_LT(loss(after[0]), loss(before[0]));
  // A model that has no Hugging Face layout cannot be exported.
  const testing::CliRun zoo = parallax("run --model gpt-mini --mesh 1 --steps 1 --export-hf '" + exported + "'");
  EXPECT_EQ(zoo.status, 2);
  EXPECT_NE(zoo.err.find("--export-hf: gpt-mini was not read from a Hugging Face config"), std::string::npos)
      << zoo.err;
  std::filesystem::remove_all(model);
  std::filesystem::remove_all(exported);
}

}  // namespace
}  // namespace px
