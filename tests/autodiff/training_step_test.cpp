// The model zoo's names and config files, and the training-step joint graphs made from them.

#include "parallax/autodiff/training_step.h"

#include <gtest/gtest.h>

#include "parallax/core/error.h"
#include "parallax/nn/zoo.h"

namespace px {
namespace {

TEST(Zoo, NamesAndPresets) {
  EXPECT_EQ(nn::zoo_names(),
            (std::vector<std::string>{"mlp", "gpt-mini", "gpt2-124m", "llama-mini", "llama3-8b", "llama3-70b"}));
  for (const std::string& name : nn::zoo_names()) EXPECT_EQ(nn::zoo_model(name).name, name);
  EXPECT_EQ(nn::zoo_model("llama3-70b").llama.dim, 8192);
  EXPECT_EQ(nn::zoo_model("gpt2-124m").gpt.n_layers, 12);
  EXPECT_EQ(nn::zoo_model("llama3-8b").describe(),
            "llama3-8b: LLaMA, 32 layers, dim 4096, 32 heads (8 KV), FFN 14336, vocab 128256, max_seq 8192, f32");
  try {
    nn::zoo_model("gpt5");
    FAIL();
  } catch (const ValueError& error) {
    EXPECT_NE(std::string(error.what()).find("unknown model 'gpt5' (the zoo has mlp, gpt-mini"), std::string::npos);
  }
}

TEST(Zoo, ConfigFromJson) {
  nn::ModelSpec gpt = nn::model_from_json(R"({"kind": "gpt", "n_layers": 3, "dtype": "float64"})", "cfg");
  EXPECT_EQ(gpt.kind, nn::ModelSpec::Kind::Gpt);
  EXPECT_EQ(gpt.gpt.n_layers, 3);
  EXPECT_EQ(gpt.gpt.dim, nn::gpt_mini().dim);  // unset fields: the mini model's
  EXPECT_EQ(gpt.gpt.dtype, DType::Float64);
  nn::ModelSpec big = nn::model_from_json(R"({"base": "llama3-8b", "n_layers": 2})", "cfg");
  EXPECT_EQ(big.llama.dim, 4096);
  EXPECT_EQ(big.llama.n_layers, 2);
  nn::ModelSpec mlp = nn::model_from_json(R"({"kind": "mlp", "in": 5, "hidden": 7, "out": 3})", "cfg");
  EXPECT_EQ(mlp.mlp.hidden, 7);

  auto error_of = [](const std::string& text) {
    try {
      nn::model_from_json(text, "cfg.json");
    } catch (const ParseError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("[1]").find("ParseError at 1:1: cfg.json: expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{").find("cfg.json: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("{}").find("cfg.json: needs \"kind\""), std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "rnn"})").find("unknown kind \"rnn\""), std::string::npos);
  // The position is the offending value's: -4 starts at column 24.
  EXPECT_NE(error_of(R"({"kind": "gpt", "dim": -4})")
                .find("ParseError at 1:24: cfg.json: dim: must be a positive integer, got -4"),
            std::string::npos)
      << error_of(R"({"kind": "gpt", "dim": -4})");
  EXPECT_NE(error_of(R"({"kind": "gpt", "dims": 4})").find("dims: unknown field"), std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "llama", "n_heads": 3})").find("do not divide"), std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "mlp", "dtype": "int64"})").find("float32, float64 or bfloat16"), std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "gpt", "base": "llama-mini"})").find("does not match base"), std::string::npos);
  EXPECT_THROW(nn::load_model("/nonexistent/model.json"), ValueError);
}

TEST(TrainingStep, JointGraphsOfZooModels) {
  const JointProgram mlp = training_step_joint(nn::zoo_model("mlp"), 4, 1);
  EXPECT_EQ(mlp.graph.name(), "mlp.joint");
  EXPECT_EQ(mlp.inputs.front().str(), "Param(mlp.fc1.weight)");

  // llama3-70b on meta tensors: 80 layers of graph, nothing allocated.
  const JointProgram llama = training_step_joint(nn::zoo_model("llama3-70b"), 8, 4096);
  EXPECT_EQ(llama.graph.name(), "llama.joint");
  int64_t params = 0;
  for (const InputDescriptor& input : llama.inputs) params += input.kind == InputDescriptor::Kind::Param;
  EXPECT_EQ(params, 1 + 80 * 9 + 2);

  EXPECT_THROW(training_step_joint(nn::zoo_model("gpt-mini"), 0, 4), ValueError);
  EXPECT_THROW(training_step_joint(nn::zoo_model("gpt-mini"), 2, 17), ValueError);
}

}  // namespace
}  // namespace px
