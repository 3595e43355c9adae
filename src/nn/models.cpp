#include "parallax/nn/models.h"

#include "nn/size_checks.h"
#include "parallax/core/error.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/nn.h"

namespace px::nn {

namespace {

void check_tokens(const char* model, const Tensor& tokens, int64_t max_seq) {
  if (tokens.dim() != 2) {
    throw ShapeError(std::string(model) + ": expects int64 tokens [B, T], got " + tokens.meta_info().str());
  }
  if (tokens.dtype() != DType::Int64) {
    throw DTypeError(std::string(model) + ": tokens must be int64, got " + tokens.meta_info().str());
  }
  if (tokens.size(1) > max_seq) {
    throw ValueError(std::string(model) + ": sequence length " + std::to_string(tokens.size(1)) + " exceeds max_seq " +
                     std::to_string(max_seq));
  }
}

using detail::require_positive;

}  // namespace

// --- GPT ---

GPTConfig gpt_mini() { return {.vocab = 64, .max_seq = 16, .dim = 32, .n_layers = 2, .n_heads = 4}; }

GPTConfig gpt2_124m() { return {.vocab = 50257, .max_seq = 1024, .dim = 768, .n_layers = 12, .n_heads = 12}; }

GPT::GPT(const GPTConfig& config) : config_(config) {
  require_positive("GPT", "n_layers", config.n_layers);
  DType dtype = config.dtype;
  wte_ = register_module("wte", std::make_shared<Embedding>(config.vocab, config.dim, dtype));
  wpe_ = register_module("wpe", std::make_shared<Embedding>(config.max_seq, config.dim, dtype));
  BlockConfig block{.attention = {.dim = config.dim, .n_heads = config.n_heads, .bias = true},
                    .norm = NormKind::LayerNorm,
                    .mlp = Activation::Gelu,
                    .hidden = config.ffn_hidden > 0 ? config.ffn_hidden : 4 * config.dim,
                    .eps = config.norm_eps,
                    .mlp_bias = true};
  h_ = register_module("h", std::make_shared<ModuleList<TransformerBlock>>());
  for (int64_t i = 0; i < config.n_layers; ++i) h_->push_back(std::make_shared<TransformerBlock>(block, dtype));
  ln_f_ = register_module("ln_f", std::make_shared<LayerNorm>(config.dim, config.norm_eps, dtype));
  lm_head_ = register_module("lm_head", std::make_shared<Linear>(config.dim, config.vocab, false, dtype));
  if (config.tie_embeddings) lm_head_->weight_slot() = wte_->weight();  // one tensor in two slots
}

Tensor GPT::forward(const Tensor& tokens) {
  check_tokens("GPT", tokens, config_.max_seq);
  Tensor positions = px::arange(static_cast<double>(tokens.size(1)));
  Tensor x = (*wte_)(tokens) + (*wpe_)(positions);
  x = (*h_)(x);
  return (*lm_head_)((*ln_f_)(x));
}

// --- Llama ---

LlamaConfig llama_mini() { return {}; }

LlamaConfig llama3_8b() {
  return {.vocab = 128256,
          .max_seq = 8192,
          .dim = 4096,
          .n_layers = 32,
          .n_heads = 32,
          .n_kv_heads = 8,
          .ffn_hidden = 14336,
          .norm_eps = 1e-5,
          .rope_theta = 500000.0};
}

LlamaConfig llama3_70b() {
  return {.vocab = 128256,
          .max_seq = 8192,
          .dim = 8192,
          .n_layers = 80,
          .n_heads = 64,
          .n_kv_heads = 8,
          .ffn_hidden = 28672,
          .norm_eps = 1e-5,
          .rope_theta = 500000.0};
}

Llama::Llama(const LlamaConfig& config) : config_(config) {
  require_positive("Llama", "n_layers", config.n_layers);
  DType dtype = config.dtype;
  tok_embeddings_ = register_module("tok_embeddings", std::make_shared<Embedding>(config.vocab, config.dim, dtype));
  BlockConfig block{.attention = {.dim = config.dim,
                                  .n_heads = config.n_heads,
                                  .n_kv_heads = config.n_kv_heads,
                                  .bias = config.attention_bias,
                                  .qkv_bias = config.qkv_bias,
                                  .rope = true,
                                  .rope_theta = config.rope_theta,
                                  .rope_scaling = config.rope_scaling},
                    .norm = NormKind::RMSNorm,
                    .mlp = Activation::SwiGLU,
                    .hidden = config.ffn_hidden,
                    .eps = config.norm_eps,
                    .mlp_bias = config.mlp_bias};
  layers_ = register_module("layers", std::make_shared<ModuleList<TransformerBlock>>());
  for (int64_t i = 0; i < config.n_layers; ++i) {
    layers_->push_back(std::make_shared<TransformerBlock>(block, dtype));
  }
  norm_ = register_module("norm", std::make_shared<RMSNorm>(config.dim, config.norm_eps, dtype));
  output_ = register_module("output", std::make_shared<Linear>(config.dim, config.vocab, false, dtype));
  if (config.tie_embeddings) output_->weight_slot() = tok_embeddings_->weight();  // one tensor in two slots
}

Tensor Llama::forward(const Tensor& tokens) {
  check_tokens("Llama", tokens, config_.max_seq);
  if (config_.sliding_window > 0 && tokens.size(1) > config_.sliding_window) {
    // Up to the window, windowed attention is plain causal attention; beyond it, it is not.
    throw ValueError("Llama: sequence length " + std::to_string(tokens.size(1)) + " exceeds the sliding_window " +
                     std::to_string(config_.sliding_window) +
                     "; attention within a sliding window is not implemented (it equals causal attention up to the "
                     "window)");
  }
  Tensor x = (*tok_embeddings_)(tokens);
  x = (*layers_)(x);
  return (*output_)((*norm_)(x));
}

// --- MLPModel ---

MLPModel::MLPModel(int64_t in_features, int64_t hidden, int64_t out_features, DType dtype) {
  fc1_ = register_module("fc1", std::make_shared<Linear>(in_features, hidden, true, dtype));
  fc2_ = register_module("fc2", std::make_shared<Linear>(hidden, out_features, true, dtype));
}

Tensor MLPModel::forward(const Tensor& x) { return (*fc2_)(px::gelu((*fc1_)(x), "tanh")); }

// --- loss ---

Tensor lm_loss(const Tensor& logits, const Tensor& targets) {
  if (logits.dim() != 3 || targets.dim() != 2 || logits.size(0) != targets.size(0) ||
      logits.size(1) != targets.size(1)) {
    throw ShapeError("lm_loss: expects logits [B, T, V] and targets [B, T], got " + logits.meta_info().str() + " and " +
                     targets.meta_info().str());
  }
  int64_t rows = logits.size(0) * logits.size(1);
  return px::cross_entropy(logits.reshape({rows, logits.size(2)}), targets.reshape({rows}));
}

}  // namespace px::nn
