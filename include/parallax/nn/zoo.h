#pragma once
// Named models for the tools (`parallax plan`, benchmarks): a model-zoo name or a JSON config
// file gives a ModelSpec, and the training loss modules wrap a zoo model into the module a
// training step captures: loss = cross_entropy(model(x), y) for the MLP classifier and
// lm_loss(model(tokens), targets) for the language models.
//
// Zoo names: mlp, gpt-mini, gpt2-124m, llama-mini, llama3-8b, llama3-70b. The big ones are for
// planning on meta tensors; the models construct them without allocating.
//
// A config file is a JSON object {"kind": "mlp" | "gpt" | "llama", ...fields}: "in", "hidden",
// "out" for mlp; vocab, max_seq, dim, n_layers, n_heads (and for llama n_kv_heads, ffn_hidden,
// norm_eps, rope_theta) for the others; "dtype" ("float32", "float64", "bfloat16", or f32, f64,
// bf16) for all.
// Missing fields take the -mini model's values; "base": "<zoo name>" starts from that model instead.
//
// A directory holding a Hugging Face config.json gives the model it describes (hf_architectures()
// lists those Parallax builds); its weights, if any, are loaded separately (io/hf_weights.h).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/nn/models.h"

namespace px::nn {

struct MlpConfig {
  int64_t in = 16;
  int64_t hidden = 64;
  int64_t out = 8;
  DType dtype = DType::Float32;
};

struct ModelSpec {
  enum class Kind : uint8_t { Mlp, Gpt, Llama };
  Kind kind = Kind::Mlp;
  std::string name;  // the zoo name or the config file's path
  MlpConfig mlp;     // the field of `kind` is the one that counts
  GPTConfig gpt;
  LlamaConfig llama;
  // The Hugging Face architecture it was read as ("LlamaForCausalLM", ...); empty for the zoo's
  // models and Parallax's own configs.
  std::string architecture;
  // Settings of the config that Parallax accepts but does not follow, one sentence each (dropout
  // probabilities, a float16 dtype run as float32): the tools print them.
  std::vector<std::string> notes;

  // "llama3-8b: LLaMA, 32 layers, dim 4096, 32 heads (8 KV), FFN 14336, vocab 128256, float32"
  std::string describe() const;
  // The longest sequence the model takes (max_seq); 0 for the MLP, which has none.
  int64_t max_seq() const;
};

std::string kind_name(ModelSpec::Kind kind);  // "mlp", "gpt", "llama"
std::vector<std::string> zoo_names();
// ValueError listing the zoo's names for an unknown one.
ModelSpec zoo_model(std::string_view name);
// A config object (see above); for a malformed one, a ParseError naming `where`, the field and its
// line and column ("ParseError at 1:23: cfg.json: dim: must be a positive integer, got -4").
ModelSpec model_from_json(const std::string& json_text, const std::string& where = "model config");
// The Hugging Face architectures model_from_hf_config reads.
std::vector<std::string> hf_architectures();
// A Hugging Face config.json's text -> its model. ParseError naming `where`, the field's JSON path
// and its line and column for an unknown architecture, an unknown field, or a field set to a value
// that would build a different model than the config says.
ModelSpec model_from_hf_config(const std::string& json_text, const std::string& where = "config.json");
// A zoo name, the path of a JSON config file, or a directory with a Hugging Face config.json.
// ValueError when it is none of these.
ModelSpec load_model(const std::string& name_or_path);

// loss = cross_entropy(mlp(x), y): x [batch, in] float, y int64 [batch]. The model is
// registered as "mlp" (parameters "mlp.fc1.weight", ...).
class MlpLoss : public ModuleBase<MlpLoss> {
 public:
  explicit MlpLoss(const MlpConfig& config);
  Tensor forward(const Tensor& x, const Tensor& y);

 private:
  std::shared_ptr<MLPModel> mlp_;
};

// loss = lm_loss(model(tokens), targets): tokens and targets int64 [batch, seq]. The model is
// registered as "model" (parameters "model.layers.0.attention.wq.weight", ...).
template <class Model>
class LmLoss : public ModuleBase<LmLoss<Model>> {
 public:
  template <class Config>
  explicit LmLoss(const Config& config) {
    model_ = this->register_module("model", std::make_shared<Model>(config));
  }
  Tensor forward(const Tensor& tokens, const Tensor& targets) { return lm_loss((*model_)(tokens), targets); }
  Model& model() const { return *model_; }

 private:
  std::shared_ptr<Model> model_;
};

}  // namespace px::nn
