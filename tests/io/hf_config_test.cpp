// Hugging Face config.json -> the model it describes, for the architectures Parallax builds, and
// clear errors for what it does not build.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "parallax/core/error.h"
#include "parallax/io/hf_weights.h"
#include "parallax/nn/zoo.h"
#include "support/test_util.h"

namespace px::nn {
namespace {

using nlohmann::json;
using testing::error_message;

// Llama 3.1 8B's config.json as published (transformers 4.43).
json llama31_8b() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072,
    "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
}

json gpt2_small() {
  return json::parse(R"({
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
    "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
    "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
    "summary_use_proj": true, "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
    "vocab_size": 50257})");
}

json qwen2_05b() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 131072, "max_window_layers": 24,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": true,
    "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})");
}

json mistral_7b() {
  return json::parse(R"({
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
    "sliding_window": 4096, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000})");
}

ModelSpec parse(const json& config) { return model_from_hf_config(config.dump(), "config.json"); }

// The error a config with `field` set to `value` raises.
std::string error_with(json config, const std::string& field, const json& value) {
  config[field] = value;
  return error_message([&] { parse(config); });
}

TEST(HfConfig, Llama31ReadsEveryFieldThatShapesTheModel) {
  const ModelSpec spec = parse(llama31_8b());
  EXPECT_EQ(spec.kind, ModelSpec::Kind::Llama);
  EXPECT_EQ(spec.architecture, "LlamaForCausalLM");
  const LlamaConfig& l = spec.llama;
  EXPECT_EQ(l.vocab, 128256);
  EXPECT_EQ(l.dim, 4096);
  EXPECT_EQ(l.ffn_hidden, 14336);
  EXPECT_EQ(l.n_layers, 32);
  EXPECT_EQ(l.n_heads, 32);
  EXPECT_EQ(l.n_kv_heads, 8);
  EXPECT_EQ(l.max_seq, 131072);
  EXPECT_EQ(l.norm_eps, 1e-5);
  EXPECT_EQ(l.rope_theta, 500000.0);
  EXPECT_EQ(l.rope_scaling,
            (RopeScaling{.factor = 8.0, .low_freq_factor = 1.0, .high_freq_factor = 4.0, .original_max_seq = 8192}));
  EXPECT_FALSE(l.tie_embeddings);
  EXPECT_FALSE(l.attention_bias || l.qkv_bias || l.mlp_bias);
  EXPECT_EQ(l.dtype, DType::BFloat16);
  EXPECT_TRUE(spec.notes.empty());
  // The same parameter count as Meta's 8B (the zoo's llama3-8b; rope scaling adds none).
  LmLoss<Llama> model(l);
  EXPECT_EQ(model.num_parameters(), 8030261248);
}

TEST(HfConfig, TransformersFiveRopeParametersCarryThetaAndScaling) {
  json config = llama31_8b();
  config.erase("rope_theta");
  config.erase("rope_scaling");
  config["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 500000.0},
                               {"factor", 32.0},          {"low_freq_factor", 1.0},
                               {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  const ModelSpec spec = parse(config);
  EXPECT_EQ(spec.llama.rope_theta, 500000.0);
  EXPECT_EQ(spec.llama.rope_scaling.factor, 32.0);
  config["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  EXPECT_EQ(parse(config).llama.rope_theta, 1e6);
  EXPECT_FALSE(parse(config).llama.rope_scaling.scales());
}

TEST(HfConfig, Gpt2SmallIsTheZoosGpt2WithItsDropoutsNoted) {
  const ModelSpec spec = parse(gpt2_small());
  EXPECT_EQ(spec.kind, ModelSpec::Kind::Gpt);
  const GPTConfig& g = spec.gpt;
  const GPTConfig zoo = gpt2_124m();
  EXPECT_EQ(std::tie(g.vocab, g.max_seq, g.dim, g.n_layers, g.n_heads),
            std::tie(zoo.vocab, zoo.max_seq, zoo.dim, zoo.n_layers, zoo.n_heads));
  EXPECT_EQ(g.ffn_hidden, 3072);
  EXPECT_TRUE(g.tie_embeddings);
  ASSERT_EQ(spec.notes.size(), 1u);
  EXPECT_NE(spec.notes[0].find("resid_pdrop 0.1, embd_pdrop 0.1, attn_pdrop 0.1 ignored"), std::string::npos)
      << spec.notes[0];
  LmLoss<GPT> model(g);
  EXPECT_EQ(model.num_parameters(), 124439808);
}

TEST(HfConfig, Qwen2HasQkvBiasesAndTiedEmbeddings) {
  const ModelSpec spec = parse(qwen2_05b());
  EXPECT_TRUE(spec.llama.qkv_bias);
  EXPECT_FALSE(spec.llama.attention_bias);
  EXPECT_TRUE(spec.llama.tie_embeddings);
  EXPECT_EQ(spec.llama.sliding_window, 0);  // use_sliding_window is false: the field does not apply
  Llama model(spec.llama);
  // Embedding 151936 x 896 (tied), and per layer: q 896 x 896 + 896, k and v 896 x 128 + 128 each,
  // o 896 x 896, the MLP 3 x 896 x 4864, two norms of 896; then the final norm.
  EXPECT_EQ(model.num_parameters(), 151936 * 896 + 24 * (803712 + 2 * 114816 + 802816 + 13074432 + 1792) + 896);
  // Tied: the output projection is the embedding, one tensor under two names.
  bool tied = false;
  for (const ParameterGroup& group : model.parameter_groups()) {
    tied = tied || group.fqns == std::vector<std::string>{"tok_embeddings.weight", "output.weight"};
  }
  EXPECT_TRUE(tied);
}

TEST(HfConfig, MistralKeepsItsWindowAndRefusesLongerSequences) {
  json config = mistral_7b();
  config["sliding_window"] = 8;
  config["hidden_size"] = 32;
  config["intermediate_size"] = 64;
  config["num_hidden_layers"] = 1;
  config["num_attention_heads"] = 4;
  config["num_key_value_heads"] = 2;
  config["vocab_size"] = 50;
  config["torch_dtype"] = "float32";
  const ModelSpec spec = parse(config);
  EXPECT_EQ(spec.llama.sliding_window, 8);
  Llama model(spec.llama);
  model.materialize(1);
  EXPECT_EQ(model(Tensor::zeros({1, 8}, DType::Int64)).shape(), (Shape{1, 8, 50}));
  const std::string message = error_message([&] { model(Tensor::zeros({1, 9}, DType::Int64)); });
  EXPECT_NE(message.find("sequence length 9 exceeds the sliding_window 8"), std::string::npos) << message;
}

TEST(HfConfig, FieldsThatWouldChangeTheModelAreRefusedByName) {
  const struct {
    json config;
    std::string field;
    json value;
    std::string expected;
  } cases[] = {
      {llama31_8b(), "hidden_act", "gelu", "hidden_act: is \"gelu\"; Parallax builds only \"silu\""},
      {llama31_8b(), "head_dim", 64, "head_dim: is 64; Parallax builds head_dim = hidden_size"},
      {llama31_8b(), "rope_scaling", json{{"rope_type", "yarn"}, {"factor", 4.0}},
       "rope_scaling.rope_type: is \"yarn\""},
      {llama31_8b(), "some_new_field", 1, "some_new_field: unknown field for LlamaForCausalLM"},
      {llama31_8b(), "quantization_config", json::object(), "quantization_config: unknown field"},
      {llama31_8b(), "torch_dtype", "int8", "torch_dtype: is \"int8\""},
      {llama31_8b(), "num_key_value_heads", 5, "num_attention_heads: 32 must divide hidden_size"},
      {llama31_8b(), "vocab_size", 0, "vocab_size: must be a positive integer, got 0"},
      {llama31_8b(), "architectures", json::array({"LlamaForSequenceClassification"}),
       "architectures: is \"LlamaForSequenceClassification\"; Parallax builds GPT2LMHeadModel, "
       "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"},
      {qwen2_05b(), "use_sliding_window", true, "use_sliding_window: is true; Parallax builds only false"},
      {qwen2_05b(), "attention_bias", true, "attention_bias: unknown field for Qwen2ForCausalLM"},
      {gpt2_small(), "activation_function", "relu", "activation_function: is \"relu\""},
      {gpt2_small(), "scale_attn_by_inverse_layer_idx", true,
       "scale_attn_by_inverse_layer_idx: is true; Parallax builds only false"},
      {gpt2_small(), "add_cross_attention", true, "add_cross_attention: is true"},
      {gpt2_small(), "n_ctx", 2048, "n_ctx: is 2048 but n_positions is 1024"},
  };
  for (const auto& c : cases) {
    const std::string message = error_with(c.config, c.field, c.value);
    EXPECT_EQ(message.rfind("ParseError at ", 0), 0u) << message;
    EXPECT_NE(message.find(": config.json: "), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.field << ": " << message;
  }
  json missing = llama31_8b();
  missing.erase("hidden_size");
  EXPECT_NE(error_message([&] { parse(missing); }).find("config.json: missing \"hidden_size\", a positive integer"),
            std::string::npos);
  json no_architecture = gpt2_small();
  no_architecture.erase("architectures");
  EXPECT_EQ(parse(no_architecture).architecture, "GPT2LMHeadModel");  // from model_type
  no_architecture["model_type"] = "bert";
  EXPECT_NE(error_message([&] { parse(no_architecture); }).find("\"bert\", which Parallax does not build"),
            std::string::npos);
  EXPECT_NE(error_message([] { model_from_hf_config("{not json", "c.json"); }).find("c.json: invalid JSON"),
            std::string::npos);
}

TEST(HfConfig, Float16RunsAsFloat32WithANote) {
  json config = llama31_8b();
  config["torch_dtype"] = "float16";
  const ModelSpec spec = parse(config);
  EXPECT_EQ(spec.llama.dtype, DType::Float32);
  ASSERT_EQ(spec.notes.size(), 1u);
  EXPECT_NE(spec.notes[0].find("float16 runs as float32"), std::string::npos);
}

TEST(HfConfig, LoadModelTakesADirectoryWithAConfig) {
  const std::filesystem::path dir = testing::temp_path("model");
  std::filesystem::create_directories(dir);
  testing::spit((dir / "config.json").string(), qwen2_05b().dump());
  const ModelSpec spec = load_model(dir.string());
  EXPECT_EQ(spec.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(spec.name, (dir / "config.json").string());
  EXPECT_NE(spec.describe().find("Qwen2ForCausalLM, 24 layers"), std::string::npos) << spec.describe();
  std::filesystem::remove(dir / "config.json");
  EXPECT_NE(error_message([&] { load_model(dir.string()); }).find("is a directory without a Hugging Face config.json"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(HfConfig, ConfigWrittenForAModelReadsBackToIt) {
  for (const json& config : {llama31_8b(), gpt2_small(), qwen2_05b(), mistral_7b()}) {
    const ModelSpec spec = parse(config);
    const ModelSpec again = model_from_hf_config(io::hf_config_json(spec), "config.json");
    EXPECT_EQ(again.architecture, spec.architecture);
    EXPECT_EQ(again.describe(), spec.describe());
  }
}

}  // namespace
}  // namespace px::nn
