#include "parallax/nn/layers.h"

#include "nn/size_checks.h"
#include "parallax/core/error.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"

namespace px::nn {

namespace {

// GPT-2's and LLaMA's reference initialization of projection and embedding weights.
constexpr double kWeightStddev = 0.02;

using detail::require_positive;

}  // namespace

// --- Linear ---

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, DType dtype)
    : in_features_(in_features), out_features_(out_features) {
  require_positive("Linear", "in_features", in_features);
  require_positive("Linear", "out_features", out_features);
  weight_ = &register_parameter("weight", {out_features, in_features}, Init::normal(0.0, kWeightStddev), dtype);
  if (bias) bias_ = &register_parameter("bias", {out_features}, Init::zeros(), dtype);
}

Tensor& Linear::bias_slot() {
  if (!bias_) throw ValueError("Linear '" + name() + "' was built without a bias; there is no bias slot");
  return *bias_;
}

Tensor Linear::forward(const Tensor& x) { return px::linear(x, *weight_, bias()); }

// --- Embedding ---

Embedding::Embedding(int64_t num_embeddings, int64_t dim, DType dtype) : num_embeddings_(num_embeddings), dim_(dim) {
  require_positive("Embedding", "num_embeddings", num_embeddings);
  require_positive("Embedding", "dim", dim);
  weight_ = &register_parameter("weight", {num_embeddings, dim}, Init::normal(0.0, kWeightStddev), dtype);
}

Tensor Embedding::forward(const Tensor& indices) { return px::embedding(*weight_, indices); }

// --- norms ---

LayerNorm::LayerNorm(int64_t dim, double eps, DType dtype) : eps_(eps) {
  require_positive("LayerNorm", "dim", dim);
  weight_ = &register_parameter("weight", {dim}, Init::ones(), dtype);
  bias_ = &register_parameter("bias", {dim}, Init::zeros(), dtype);
}

Tensor LayerNorm::forward(const Tensor& x) { return px::layer_norm(x, *weight_, *bias_, eps_); }

RMSNorm::RMSNorm(int64_t dim, double eps, DType dtype) : eps_(eps) {
  require_positive("RMSNorm", "dim", dim);
  weight_ = &register_parameter("weight", {dim}, Init::ones(), dtype);
}

Tensor RMSNorm::forward(const Tensor& x) { return px::rms_norm(x, *weight_, eps_); }

// --- MLP ---

MLP::MLP(int64_t dim, int64_t hidden, Activation activation, bool bias, DType dtype) : activation_(activation) {
  require_positive("MLP", "dim", dim);
  require_positive("MLP", "hidden", hidden);
  switch (activation) {
    case Activation::Gelu:
      c_fc_ = register_module("c_fc", std::make_shared<Linear>(dim, hidden, bias, dtype));
      c_proj_ = register_module("c_proj", std::make_shared<Linear>(hidden, dim, bias, dtype));
      return;
    case Activation::SwiGLU:
      w1_ = register_module("w1", std::make_shared<Linear>(dim, hidden, bias, dtype));
      w2_ = register_module("w2", std::make_shared<Linear>(hidden, dim, bias, dtype));
      w3_ = register_module("w3", std::make_shared<Linear>(dim, hidden, bias, dtype));
      return;
  }
}

Tensor MLP::forward(const Tensor& x) {
  switch (activation_) {
    case Activation::Gelu:
      return (*c_proj_)(px::gelu((*c_fc_)(x), "tanh"));
    case Activation::SwiGLU:
      return (*w2_)(px::silu((*w1_)(x)) * (*w3_)(x));
  }
  throw ValueError("MLP: unknown activation");
}

// --- attention ---

namespace {

AttentionConfig checked(AttentionConfig config) {
  require_positive("CausalSelfAttention", "dim", config.dim);
  require_positive("CausalSelfAttention", "n_heads", config.n_heads);
  if (config.n_kv_heads == 0) config.n_kv_heads = config.n_heads;
  require_positive("CausalSelfAttention", "n_kv_heads", config.n_kv_heads);
  if (config.dim % config.n_heads != 0) {
    throw ValueError("CausalSelfAttention: dim " + std::to_string(config.dim) + " is not divisible by n_heads " +
                     std::to_string(config.n_heads));
  }
  if (config.n_heads % config.n_kv_heads != 0) {
    throw ValueError("CausalSelfAttention: n_heads " + std::to_string(config.n_heads) +
                     " is not a multiple of n_kv_heads " + std::to_string(config.n_kv_heads) +
                     " (each KV head serves the same number of query heads)");
  }
  if (config.rope && (config.dim / config.n_heads) % 2 != 0) {
    throw ValueError("CausalSelfAttention: rope rotates pairs, so the head dim must be even, got " +
                     std::to_string(config.dim / config.n_heads));
  }
  return config;
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(const AttentionConfig& config, DType dtype)
    : config_(checked(config)), head_dim_(config_.dim / config_.n_heads) {
  int64_t dim = config_.dim, q_dim = config_.n_heads * head_dim_, kv_dim = config_.n_kv_heads * head_dim_;
  const bool qkv_bias = config_.bias || config_.qkv_bias;
  wq_ = register_module("wq", std::make_shared<Linear>(dim, q_dim, qkv_bias, dtype));
  wk_ = register_module("wk", std::make_shared<Linear>(dim, kv_dim, qkv_bias, dtype));
  wv_ = register_module("wv", std::make_shared<Linear>(dim, kv_dim, qkv_bias, dtype));
  wo_ = register_module("wo", std::make_shared<Linear>(q_dim, dim, config_.bias, dtype));
}

Tensor CausalSelfAttention::split_heads(const Tensor& x, int64_t heads) const {
  return x.reshape({x.size(0), x.size(1), heads, head_dim_}).transpose(1, 2);
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  if (x.dim() != 3 || x.size(2) != config_.dim) {
    throw ShapeError("CausalSelfAttention '" + name() + "': expects x [B, T, " + std::to_string(config_.dim) +
                     "], got " + x.meta_info().str());
  }
  int64_t batch = x.size(0), seq = x.size(1), heads = config_.n_heads, kv_heads = config_.n_kv_heads;
  Tensor q = split_heads((*wq_)(x), heads);
  Tensor k = split_heads((*wk_)(x), kv_heads);
  Tensor v = split_heads((*wv_)(x), kv_heads);
  if (config_.rope) {
    q = px::rope(q, config_.rope_theta, false, config_.rope_scaling);
    k = px::rope(k, config_.rope_theta, false, config_.rope_scaling);
  }
  if (kv_heads != heads) {
    // [B, KV, T, hd] -> [B, KV, H/KV, T, hd] -> [B, H, T, hd]: head h reads KV head h / (H/KV).
    Shape grouped{batch, kv_heads, heads / kv_heads, seq, head_dim_};
    Shape expanded{batch, heads, seq, head_dim_};
    k = k.unsqueeze(2).expand(grouped).reshape(expanded);
    v = v.unsqueeze(2).expand(grouped).reshape(expanded);
  }
  Tensor out = px::scaled_dot_product_attention(q, k, v, /*causal=*/true);
  return (*wo_)(out.transpose(1, 2).reshape({batch, seq, heads * head_dim_}));
}

// --- transformer block ---

TransformerBlock::TransformerBlock(const BlockConfig& config, DType dtype) : config_(config) {
  int64_t dim = config.attention.dim;
  int64_t hidden = config.hidden == 0 ? 4 * dim : config.hidden;
  config_.hidden = hidden;
  switch (config.norm) {
    case NormKind::LayerNorm:
      ln1_ = register_module("ln_1", std::make_shared<LayerNorm>(dim, config.eps, dtype));
      attention_ = register_module("attn", std::make_shared<CausalSelfAttention>(config.attention, dtype));
      ln2_ = register_module("ln_2", std::make_shared<LayerNorm>(dim, config.eps, dtype));
      mlp_ = register_module("mlp", std::make_shared<MLP>(dim, hidden, config.mlp, config.mlp_bias, dtype));
      return;
    case NormKind::RMSNorm:
      rms1_ = register_module("attention_norm", std::make_shared<RMSNorm>(dim, config.eps, dtype));
      attention_ = register_module("attention", std::make_shared<CausalSelfAttention>(config.attention, dtype));
      rms2_ = register_module("ffn_norm", std::make_shared<RMSNorm>(dim, config.eps, dtype));
      mlp_ = register_module("feed_forward", std::make_shared<MLP>(dim, hidden, config.mlp, config.mlp_bias, dtype));
      return;
  }
}

Tensor TransformerBlock::norm1(const Tensor& x) { return ln1_ ? (*ln1_)(x) : (*rms1_)(x); }
Tensor TransformerBlock::norm2(const Tensor& x) { return ln2_ ? (*ln2_)(x) : (*rms2_)(x); }

Tensor TransformerBlock::forward(const Tensor& x) {
  Tensor h = x + (*attention_)(norm1(x));
  return h + (*mlp_)(norm2(h));
}

}  // namespace px::nn
