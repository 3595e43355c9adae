#include "parallax/io/hf_weights.h"

#include <map>
#include <nlohmann/json.hpp>

#include "parallax/core/error.h"
#include "parallax/ops/shape.h"

namespace px::io {

namespace {

void add(std::vector<HfParameter>& map, std::string name, std::string hf_name, HfSource transform = {}) {
  transform.hf_name = std::move(hf_name);
  map.push_back({std::move(name), std::move(transform)});
}

std::vector<HfParameter> gpt2_map(const nn::GPTConfig& gpt) {
  std::vector<HfParameter> map;
  const int64_t dim = gpt.dim;
  add(map, "wte.weight", "transformer.wte.weight");
  add(map, "wpe.weight", "transformer.wpe.weight");
  for (int64_t i = 0; i < gpt.n_layers; ++i) {
    const std::string ours = "h." + std::to_string(i) + ".";
    const std::string hf = "transformer.h." + std::to_string(i) + ".";
    for (const char* norm : {"ln_1", "ln_2"}) {
      add(map, ours + norm + ".weight", hf + norm + ".weight");
      add(map, ours + norm + ".bias", hf + norm + ".bias");
    }
    const char* projections[] = {"wq", "wk", "wv"};
    for (int64_t p = 0; p < 3; ++p) {
      const std::pair<int64_t, int64_t> columns{p * dim, (p + 1) * dim};
      add(map, ours + "attn." + projections[p] + ".weight", hf + "attn.c_attn.weight",
          {.columns = columns, .transpose = true});
      add(map, ours + "attn." + projections[p] + ".bias", hf + "attn.c_attn.bias", {.columns = columns});
    }
    add(map, ours + "attn.wo.weight", hf + "attn.c_proj.weight", {.transpose = true});
    add(map, ours + "attn.wo.bias", hf + "attn.c_proj.bias");
    for (const char* linear : {"c_fc", "c_proj"}) {
      add(map, ours + "mlp." + linear + ".weight", hf + "mlp." + linear + ".weight", {.transpose = true});
      add(map, ours + "mlp." + linear + ".bias", hf + "mlp." + linear + ".bias");
    }
  }
  add(map, "ln_f.weight", "transformer.ln_f.weight");
  add(map, "ln_f.bias", "transformer.ln_f.bias");
  if (!gpt.tie_embeddings) add(map, "lm_head.weight", "lm_head.weight");
  return map;
}

std::vector<HfParameter> llama_map(const nn::LlamaConfig& llama) {
  std::vector<HfParameter> map;
  add(map, "tok_embeddings.weight", "model.embed_tokens.weight");
  const bool qkv_bias = llama.attention_bias || llama.qkv_bias;
  for (int64_t i = 0; i < llama.n_layers; ++i) {
    const std::string ours = "layers." + std::to_string(i) + ".";
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    add(map, ours + "attention_norm.weight", hf + "input_layernorm.weight");
    const struct {
      const char* ours;
      const char* hf;
      int64_t rope_heads;
      bool bias;
    } projections[] = {{"wq", "q_proj", llama.n_heads, qkv_bias},
                       {"wk", "k_proj", llama.n_kv_heads, qkv_bias},
                       {"wv", "v_proj", 0, qkv_bias},
                       {"wo", "o_proj", 0, llama.attention_bias}};
    for (const auto& p : projections) {
      const std::string from = hf + "self_attn." + p.hf;
      add(map, ours + "attention." + p.ours + ".weight", from + ".weight", {.rope_heads = p.rope_heads});
      if (p.bias) add(map, ours + "attention." + p.ours + ".bias", from + ".bias", {.rope_heads = p.rope_heads});
    }
    add(map, ours + "ffn_norm.weight", hf + "post_attention_layernorm.weight");
    const std::pair<const char*, const char*> mlp[] = {{"w1", "gate_proj"}, {"w2", "down_proj"}, {"w3", "up_proj"}};
    for (const auto& [w, proj] : mlp) {
      add(map, ours + "feed_forward." + w + ".weight", hf + "mlp." + proj + ".weight");
      if (llama.mlp_bias) add(map, ours + "feed_forward." + w + ".bias", hf + "mlp." + proj + ".bias");
    }
  }
  add(map, "norm.weight", "model.norm.weight");
  if (!llama.tie_embeddings) add(map, "output.weight", "lm_head.weight");
  return map;
}

// Rows of dim 0 as [heads, 2, hd/2] (rotate_half: each head's first halves, then its second halves)
// <-> [heads, hd/2, 2] (interleaved pairs): the same permutation of 1 <-> 2 both ways.
Tensor swap_rope_halves(const Tensor& x, int64_t heads, bool to_interleaved) {
  const int64_t rows = x.size(0);
  if (heads <= 0 || rows % heads != 0 || (rows / heads) % 2 != 0) {
    throw ShapeError("hf weights: " + x.meta_info().str() + " does not split into " + std::to_string(heads) +
                     " heads of an even head dim");
  }
  const int64_t half = rows / heads / 2;
  Shape split{heads, to_interleaved ? 2 : half, to_interleaved ? half : 2};
  std::vector<int64_t> order{0, 2, 1};
  for (int64_t d = 1; d < x.dim(); ++d) {
    split.push_back(x.size(d));
    order.push_back(d + 2);
  }
  return x.reshape(split).permute(order).contiguous().reshape(x.shape());
}

}  // namespace

std::vector<HfParameter> hf_parameter_map(const nn::ModelSpec& spec) {
  if (spec.architecture == "GPT2LMHeadModel") return gpt2_map(spec.gpt);
  if (spec.architecture == "LlamaForCausalLM" || spec.architecture == "MistralForCausalLM" ||
      spec.architecture == "Qwen2ForCausalLM") {
    return llama_map(spec.llama);
  }
  throw ValueError("hf weights: " + spec.name + " is not a Hugging Face architecture Parallax builds (" +
                   (spec.architecture.empty() ? "it was not read from a config.json" : spec.architecture) + ")");
}

bool is_hf_buffer(const std::string& hf_name) {
  auto ends_with = [&](std::string_view suffix) {
    return hf_name.size() >= suffix.size() &&
           hf_name.compare(hf_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".attn.bias") || ends_with(".attn.masked_bias") || ends_with(".rotary_emb.inv_freq");
}

Tensor to_parallax(const HfSource& source, const Tensor& hf_tensor) {
  Tensor x = hf_tensor;
  if (source.columns) {
    const auto [begin, end] = *source.columns;
    if (x.dim() < 1 || end > x.size(-1)) {
      throw ShapeError("hf weights: " + source.hf_name + " " + x.meta_info().str() + " has no columns [" +
                       std::to_string(begin) + ", " + std::to_string(end) + ")");
    }
    x = x.narrow(x.dim() - 1, begin, end - begin);
  }
  if (source.transpose) x = x.transpose(0, 1);
  if (source.rope_heads > 0) x = swap_rope_halves(x, source.rope_heads, /*to_interleaved=*/true);
  return x.contiguous().clone();
}

std::vector<std::pair<std::string, Tensor>> to_hf(const nn::ModelSpec& spec,
                                                  const std::function<Tensor(const std::string&)>& parameter) {
  std::vector<std::pair<std::string, Tensor>> out;
  std::map<std::string, std::vector<Tensor>> column_parts;  // c_attn's q, k, v in column order
  for (const HfParameter& entry : hf_parameter_map(spec)) {
    Tensor x = parameter(entry.name);
    if (entry.source.rope_heads > 0) x = swap_rope_halves(x, entry.source.rope_heads, /*to_interleaved=*/false);
    if (entry.source.transpose) x = x.transpose(0, 1);
    if (!entry.source.columns) {
      out.emplace_back(entry.source.hf_name, x.contiguous());
      continue;
    }
    std::vector<Tensor>& parts = column_parts[entry.source.hf_name];
    if (parts.empty()) out.emplace_back(entry.source.hf_name, Tensor());  // its place in the order
    parts.push_back(x.contiguous());
  }
  for (auto& [name, tensor] : out) {
    if (!tensor.defined()) {
      const std::vector<Tensor>& parts = column_parts.at(name);
      tensor = px::cat(parts, parts.front().dim() - 1);
    }
  }
  return out;
}

std::string resolve_hf_name(const std::string& hf_name, const std::function<bool(const std::string&)>& available) {
  if (available(hf_name)) return hf_name;
  const std::string prefix = "transformer.";
  if (hf_name.rfind(prefix, 0) == 0 && available(hf_name.substr(prefix.size()))) {
    return hf_name.substr(prefix.size());
  }
  return hf_name;
}

std::string hf_config_json(const nn::ModelSpec& spec) {
  nlohmann::ordered_json config;
  config["architectures"] = {spec.architecture};
  auto dtype_of = [](DType dtype) {
    return dtype == DType::BFloat16 ? "bfloat16" : dtype == DType::Float64 ? "float64" : "float32";
  };
  if (spec.architecture == "GPT2LMHeadModel") {
    const nn::GPTConfig& gpt = spec.gpt;
    config["model_type"] = "gpt2";
    config["vocab_size"] = gpt.vocab;
    config["n_positions"] = gpt.max_seq;
    config["n_embd"] = gpt.dim;
    config["n_layer"] = gpt.n_layers;
    config["n_head"] = gpt.n_heads;
    config["n_inner"] = gpt.ffn_hidden > 0 ? gpt.ffn_hidden : 4 * gpt.dim;
    config["activation_function"] = "gelu_new";
    config["layer_norm_epsilon"] = gpt.norm_eps;
    config["resid_pdrop"] = config["embd_pdrop"] = config["attn_pdrop"] = 0.0;
    config["tie_word_embeddings"] = gpt.tie_embeddings;
    config["torch_dtype"] = dtype_of(gpt.dtype);
    return config.dump(2) + "\n";
  }
  hf_parameter_map(spec);  // ValueError for anything but the LLaMA family from here
  const nn::LlamaConfig& llama = spec.llama;
  config["model_type"] = spec.architecture == "MistralForCausalLM" ? "mistral"
                         : spec.architecture == "Qwen2ForCausalLM" ? "qwen2"
                                                                   : "llama";
  config["vocab_size"] = llama.vocab;
  config["hidden_size"] = llama.dim;
  config["intermediate_size"] = llama.ffn_hidden;
  config["num_hidden_layers"] = llama.n_layers;
  config["num_attention_heads"] = llama.n_heads;
  config["num_key_value_heads"] = llama.n_kv_heads;
  config["max_position_embeddings"] = llama.max_seq;
  config["rms_norm_eps"] = llama.norm_eps;
  config["rope_theta"] = llama.rope_theta;
  if (llama.rope_scaling.scales()) {
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", llama.rope_scaling.factor},
                              {"low_freq_factor", llama.rope_scaling.low_freq_factor},
                              {"high_freq_factor", llama.rope_scaling.high_freq_factor},
                              {"original_max_position_embeddings", llama.rope_scaling.original_max_seq}};
  }
  config["hidden_act"] = "silu";
  config["tie_word_embeddings"] = llama.tie_embeddings;
  if (spec.architecture == "LlamaForCausalLM") {
    config["attention_bias"] = llama.attention_bias;
    config["mlp_bias"] = llama.mlp_bias;
  }
  if (spec.architecture == "MistralForCausalLM") {
    config["sliding_window"] = llama.sliding_window > 0 ? nlohmann::ordered_json(llama.sliding_window) : nullptr;
  }
  if (spec.architecture == "Qwen2ForCausalLM") config["use_sliding_window"] = false;
  config["torch_dtype"] = dtype_of(llama.dtype);
  return config.dump(2) + "\n";
}

}  // namespace px::io
