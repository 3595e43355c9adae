// Hugging Face names and layouts <-> Parallax's: the map both ways, and the oracle that matters: a
// forward pass written the way transformers computes it (Conv1D, fused c_attn, rotate_half rope
// with transformers' frequency formula) on the Hugging Face tensors gives the logits of Parallax's
// model on the mapped ones.

#include "parallax/io/hf_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <numbers>
#include <set>

#include "parallax/core/error.h"
#include "parallax/io/hf_model.h"
#include "parallax/io/safetensors.h"
#include "parallax/nn/zoo.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/shape.h"
#include "support/test_util.h"

namespace px::io {
namespace {

using HfDict = std::map<std::string, Tensor>;

nn::ModelSpec tiny(const std::string& architecture) {
  nn::ModelSpec spec;
  spec.name = "tiny " + architecture;
  spec.architecture = architecture;
  if (architecture == "GPT2LMHeadModel") {
    spec.kind = nn::ModelSpec::Kind::Gpt;
    spec.gpt = {.vocab = 40,
                .max_seq = 12,
                .dim = 16,
                .n_layers = 2,
                .n_heads = 4,
                .ffn_hidden = 24,
                .norm_eps = 1e-5,
                .tie_embeddings = true,
                .dtype = DType::Float64};
    return spec;
  }
  spec.kind = nn::ModelSpec::Kind::Llama;
  spec.llama = {.vocab = 40,
                .max_seq = 12,
                .dim = 32,
                .n_layers = 2,
                .n_heads = 4,
                .n_kv_heads = 2,
                .ffn_hidden = 48,
                .norm_eps = 1e-6,
                .rope_theta = 10000.0,
                .dtype = DType::Float64};
  if (architecture == "LlamaForCausalLM") {
    // Llama 3.1's scaling at a context of 8, so that the blend covers some of the 4 pairs a head has.
    spec.llama.rope_scaling = {.factor = 4.0, .low_freq_factor = 1.0, .high_freq_factor = 4.0, .original_max_seq = 8};
    spec.llama.attention_bias = true;
    spec.llama.mlp_bias = true;
  }
  if (architecture == "Qwen2ForCausalLM") {
    spec.llama.qkv_bias = true;
    spec.llama.tie_embeddings = true;
  }
  return spec;
}

// The model's parameters (seeded), by the model's own names.
template <class Model>
std::map<std::string, Tensor> parameters_of(Model& model) {
  model.materialize(7);
  std::map<std::string, Tensor> out;
  for (auto& [name, tensor] : model.named_parameters()) out[name] = tensor;
  return out;
}

HfDict hf_dict(const nn::ModelSpec& spec, const std::map<std::string, Tensor>& ours) {
  HfDict dict;
  for (auto& [name, tensor] : to_hf(spec, [&](const std::string& n) { return ours.at(n); })) {
    EXPECT_FALSE(dict.contains(name)) << name;
    dict[name] = tensor;
  }
  return dict;
}

// --- transformers' forward pass, written from its modeling code's structure ---

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias) { return matmul(x, weight) + bias; }

Tensor hf_linear(const Tensor& x, const HfDict& d, const std::string& name, bool bias) {
  return linear(x, d.at(name + ".weight"), bias ? d.at(name + ".bias") : Tensor());
}

// [B, T, heads * hd] -> [B, heads, T, hd]
Tensor heads_of(const Tensor& x, int64_t heads) {
  return x.reshape({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

Tensor merge_heads(const Tensor& x) { return x.transpose(1, 2).reshape({x.size(0), x.size(2), x.size(1) * x.size(3)}); }

Tensor gpt2_logits(const nn::GPTConfig& c, const HfDict& d, const Tensor& tokens) {
  const int64_t T = tokens.size(1);
  Tensor h = embedding(d.at("transformer.wte.weight"), tokens) +
             embedding(d.at("transformer.wpe.weight"), arange(static_cast<double>(T)));
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    Tensor a = layer_norm(h, d.at(p + "ln_1.weight"), d.at(p + "ln_1.bias"), c.norm_eps);
    Tensor qkv = conv1d(a, d.at(p + "attn.c_attn.weight"), d.at(p + "attn.c_attn.bias"));
    Tensor q = heads_of(qkv.narrow(2, 0, c.dim), c.n_heads);
    Tensor k = heads_of(qkv.narrow(2, c.dim, c.dim), c.n_heads);
    Tensor v = heads_of(qkv.narrow(2, 2 * c.dim, c.dim), c.n_heads);
    Tensor o = merge_heads(scaled_dot_product_attention(q, k, v, true));
    h = h + conv1d(o, d.at(p + "attn.c_proj.weight"), d.at(p + "attn.c_proj.bias"));
    Tensor m = layer_norm(h, d.at(p + "ln_2.weight"), d.at(p + "ln_2.bias"), c.norm_eps);
    m = gelu(conv1d(m, d.at(p + "mlp.c_fc.weight"), d.at(p + "mlp.c_fc.bias")), "tanh");
    h = h + conv1d(m, d.at(p + "mlp.c_proj.weight"), d.at(p + "mlp.c_proj.bias"));
  }
  h = layer_norm(h, d.at("transformer.ln_f.weight"), d.at("transformer.ln_f.bias"), c.norm_eps);
  return matmul(h, d.at("transformer.wte.weight").transpose(0, 1));
}

// transformers' inverse frequencies, Llama 3's rescaling included (its _compute_llama3_parameters).
std::vector<double> hf_inv_freq(const nn::LlamaConfig& c, int64_t head_dim) {
  std::vector<double> inv_freq;
  for (int64_t j = 0; j < head_dim; j += 2) {
    inv_freq.push_back(1.0 / std::pow(c.rope_theta, static_cast<double>(j) / static_cast<double>(head_dim)));
  }
  if (!c.rope_scaling.scales()) return inv_freq;
  const RopeScaling& s = c.rope_scaling;
  const double old_context = static_cast<double>(s.original_max_seq);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  for (double& f : inv_freq) {
    const double wavelen = 2 * std::numbers::pi / f;
    const double llama = wavelen > low_freq_wavelen ? f / s.factor : f;
    const double smooth = (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    f = medium ? (1 - smooth) * llama / s.factor + smooth * llama : llama;
  }
  return inv_freq;
}

// x * cos + rotate_half(x) * sin, cos and sin over cat(freqs, freqs) (transformers' apply_rotary_pos_emb).
Tensor hf_rope(const Tensor& x, const std::vector<double>& inv_freq) {
  const int64_t T = x.size(2), hd = x.size(3), half = hd / 2;
  std::vector<double> cos_values, sin_values;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < hd; ++j) {
      const double angle = static_cast<double>(t) * inv_freq[static_cast<size_t>(j % half)];
      cos_values.push_back(std::cos(angle));
      sin_values.push_back(std::sin(angle));
    }
  }
  Tensor cos = Tensor::from_vector(cos_values, {T, hd}, DType::Float64);
  Tensor sin = Tensor::from_vector(sin_values, {T, hd}, DType::Float64);
  Tensor rotated = cat({neg(x.narrow(3, half, half)), x.narrow(3, 0, half)}, 3);
  return x * cos + rotated * sin;
}

Tensor llama_logits(const nn::LlamaConfig& c, const HfDict& d, const Tensor& tokens) {
  const int64_t B = tokens.size(0), T = tokens.size(1), hd = c.dim / c.n_heads;
  const std::vector<double> inv_freq = hf_inv_freq(c, hd);
  const bool qkv_bias = c.attention_bias || c.qkv_bias;
  Tensor h = embedding(d.at("model.embed_tokens.weight"), tokens);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Tensor a = rms_norm(h, d.at(p + "input_layernorm.weight"), c.norm_eps);
    Tensor q = hf_rope(heads_of(hf_linear(a, d, p + "self_attn.q_proj", qkv_bias), c.n_heads), inv_freq);
    Tensor k = hf_rope(heads_of(hf_linear(a, d, p + "self_attn.k_proj", qkv_bias), c.n_kv_heads), inv_freq);
    Tensor v = heads_of(hf_linear(a, d, p + "self_attn.v_proj", qkv_bias), c.n_kv_heads);
    const Shape grouped{B, c.n_kv_heads, c.n_heads / c.n_kv_heads, T, hd}, expanded{B, c.n_heads, T, hd};
    k = k.unsqueeze(2).expand(grouped).reshape(expanded);  // transformers' repeat_kv
    v = v.unsqueeze(2).expand(grouped).reshape(expanded);
    Tensor o = merge_heads(scaled_dot_product_attention(q, k, v, true));
    h = h + hf_linear(o, d, p + "self_attn.o_proj", c.attention_bias);
    Tensor m = rms_norm(h, d.at(p + "post_attention_layernorm.weight"), c.norm_eps);
    Tensor gated =
        silu(hf_linear(m, d, p + "mlp.gate_proj", c.mlp_bias)) * hf_linear(m, d, p + "mlp.up_proj", c.mlp_bias);
    h = h + hf_linear(gated, d, p + "mlp.down_proj", c.mlp_bias);
  }
  h = rms_norm(h, d.at("model.norm.weight"), c.norm_eps);
  return linear(h, d.at(c.tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight"));
}

// --- tests ---

TEST(HfWeights, Gpt2LayoutIsTransformersAndMapsBackBitForBit) {
  const nn::ModelSpec spec = tiny("GPT2LMHeadModel");
  nn::GPT model(spec.gpt);
  const auto ours = parameters_of(model);
  const HfDict hf = hf_dict(spec, ours);
  // transformers' GPT2LMHeadModel state dict, lm_head tied (not stored): 4 + 12 per layer.
  EXPECT_EQ(hf.size(), 4u + 12u * 2u);
  EXPECT_EQ(hf.at("transformer.h.1.attn.c_attn.weight").shape(), (Shape{16, 48}));
  EXPECT_EQ(hf.at("transformer.h.1.attn.c_attn.bias").shape(), (Shape{48}));
  EXPECT_EQ(hf.at("transformer.h.0.mlp.c_fc.weight").shape(), (Shape{16, 24}));
  EXPECT_EQ(hf.at("transformer.h.0.mlp.c_proj.weight").shape(), (Shape{24, 16}));
  EXPECT_FALSE(hf.contains("lm_head.weight"));
  for (const HfParameter& entry : hf_parameter_map(spec)) {
    EXPECT_TRUE(testing::all_close(to_parallax(entry.source, hf.at(entry.source.hf_name)), ours.at(entry.name), 0, 0))
        << entry.name;
  }
  const Tensor tokens = testing::random_ints({2, 9}, 0, 40, 3);
  EXPECT_TRUE(testing::all_close(model(tokens), gpt2_logits(spec.gpt, hf, tokens), 1e-10, 1e-10));
}

TEST(HfWeights, LlamaFamilyLogitsMatchTransformersRotateHalfForward) {
  for (const std::string architecture : {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"}) {
    SCOPED_TRACE(architecture);
    const nn::ModelSpec spec = tiny(architecture);
    nn::Llama model(spec.llama);
    const auto ours = parameters_of(model);
    const HfDict hf = hf_dict(spec, ours);
    EXPECT_EQ(hf.contains("lm_head.weight"), !spec.llama.tie_embeddings);
    EXPECT_EQ(hf.contains("model.layers.0.self_attn.q_proj.bias"), architecture != "MistralForCausalLM");
    EXPECT_EQ(hf.contains("model.layers.0.self_attn.o_proj.bias"), architecture == "LlamaForCausalLM");
    EXPECT_EQ(hf.at("model.layers.1.self_attn.k_proj.weight").shape(), (Shape{16, 32}));
    EXPECT_EQ(hf.at("model.layers.1.mlp.gate_proj.weight").shape(), (Shape{48, 32}));
    // The q rows really move: transformers' layout is not Parallax's.
    EXPECT_FALSE(testing::all_close(hf.at("model.layers.0.self_attn.q_proj.weight"),
                                    ours.at("layers.0.attention.wq.weight"), 0, 0));
    for (const HfParameter& entry : hf_parameter_map(spec)) {
      EXPECT_TRUE(testing::all_close(to_parallax(entry.source, hf.at(entry.source.hf_name)), ours.at(entry.name), 0, 0))
          << entry.name;
    }
    const Tensor tokens = testing::random_ints({2, 11}, 0, 40, 4);
    EXPECT_TRUE(testing::all_close(model(tokens), llama_logits(spec.llama, hf, tokens), 1e-10, 1e-10));
  }
}

TEST(HfWeights, NamesWithoutTheTransformerPrefixAndBuffersAreRecognised) {
  const auto in = [](std::set<std::string> names) {
    return [names = std::move(names)](const std::string& name) { return names.contains(name); };
  };
  EXPECT_EQ(resolve_hf_name("transformer.wte.weight", in({"wte.weight"})), "wte.weight");
  EXPECT_EQ(resolve_hf_name("transformer.wte.weight", in({"transformer.wte.weight", "wte.weight"})),
            "transformer.wte.weight");
  EXPECT_EQ(resolve_hf_name("model.norm.weight", in({})), "model.norm.weight");
  EXPECT_TRUE(is_hf_buffer("transformer.h.3.attn.bias"));
  EXPECT_TRUE(is_hf_buffer("h.0.attn.masked_bias"));
  EXPECT_TRUE(is_hf_buffer("model.layers.0.self_attn.rotary_emb.inv_freq"));
  EXPECT_FALSE(is_hf_buffer("transformer.h.3.attn.c_attn.bias"));
}

TEST(HfWeights, ModelsNotReadFromAHuggingFaceConfigHaveNoMap) {
  const std::string message = testing::error_message([] { hf_parameter_map(nn::zoo_model("llama-mini")); });
  EXPECT_NE(message.find("llama-mini is not a Hugging Face architecture"), std::string::npos) << message;
}

}  // namespace
}  // namespace px::io

namespace px::io {
namespace {

// A model exported as a Hugging Face directory and imported into a fresh (meta) model of the
// config written with it: the same parameters, bit for bit, and the tie kept.
TEST(HfModel, ExportThenImportGivesTheSameModel) {
  const std::string dir = testing::temp_path("hf");
  std::filesystem::remove_all(dir);
  nn::ModelSpec spec = tiny("Qwen2ForCausalLM");  // tied, with q/k/v biases
  nn::LmLoss<nn::Llama> source(spec.llama);
  source.materialize(11);
  save_hf_model(dir, spec, [&](const std::string& name) { return source.slot("model." + name); });
  EXPECT_TRUE(has_hf_weights(dir));
  const nn::ModelSpec read = nn::load_model(dir);
  EXPECT_EQ(read.describe().substr(read.describe().find(':')), spec.describe().substr(spec.describe().find(':')));
  nn::LmLoss<nn::Llama> imported(read.llama);
  load_hf_weights(imported, read, dir, "model.");
  EXPECT_FALSE(imported.is_meta());
  for (const auto& [name, tensor] : source.named_parameters()) {
    EXPECT_TRUE(testing::all_close(imported.slot(name), tensor, 0, 0)) << name;
  }
  EXPECT_TRUE(imported.slot("model.output.weight").shares_storage_with(imported.slot("model.tok_embeddings.weight")));
  std::filesystem::remove_all(dir);
}

TEST(HfModel, WeightsThatDoNotFitTheConfigAreRefusedByName) {
  const std::string dir = testing::temp_path("hf");
  std::filesystem::remove_all(dir);
  const nn::ModelSpec spec = tiny("MistralForCausalLM");
  nn::Llama model(spec.llama);
  model.materialize(2);
  auto parameter = [&](const std::string& name) { return model.slot(name); };
  auto import_error = [&] {
    nn::Llama fresh(spec.llama);
    return testing::error_message([&] { load_hf_weights(fresh, spec, dir); });
  };
  // A tensor the model has no place for.
  std::vector<std::pair<std::string, Tensor>> tensors = to_hf(spec, parameter);
  tensors.emplace_back("model.layers.0.self_attn.q_norm.weight", testing::random_tensor({8}));
  write_sharded_safetensors(dir, tensors, int64_t{1} << 30);
  EXPECT_NE(import_error().find("tensor 'model.layers.0.self_attn.q_norm.weight' has no place in MistralForCausalLM"),
            std::string::npos)
      << import_error();
  // A missing one.
  tensors = to_hf(spec, parameter);
  tensors.erase(tensors.begin() + 3);
  write_sharded_safetensors(dir, tensors, int64_t{1} << 30);
  EXPECT_NE(import_error().find("no tensor '"), std::string::npos) << import_error();
  // Another shape.
  tensors = to_hf(spec, parameter);
  tensors[0].second = testing::random_tensor({41, 32});
  write_sharded_safetensors(dir, tensors, int64_t{1} << 30);
  EXPECT_NE(import_error().find("'model.embed_tokens.weight' gives tok_embeddings.weight the shape [41,32], but the "
                                "config makes it [40,32]"),
            std::string::npos)
      << import_error();
  // Stored in bfloat16 (as most published checkpoints are): read into the float64 model exactly.
  tensors = to_hf(spec, parameter);
  for (auto& [name, tensor] : tensors) tensor = tensor.to(DType::BFloat16);
  write_sharded_safetensors(dir, tensors, 4096);  // several shards and an index
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  nn::Llama fresh(spec.llama);
  load_hf_weights(fresh, spec, dir);
  EXPECT_EQ(fresh.slot("norm.weight").dtype(), DType::Float64);
  EXPECT_TRUE(testing::all_close(fresh.slot("norm.weight"), model.slot("norm.weight").to(DType::BFloat16), 0, 0));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace px::io
