#pragma once
// The standard layers, built on meta tensors (construction allocates nothing;
// Module::materialize draws the values). Each keeps pointers to its slots and
// reads them at every forward, so a trace or an optimizer can swap the tensors.
// Call a layer as `layer(x)` (not `layer.forward(x)`) so its ops carry the
// layer's module path.
//
// Parameter names follow the checkpoints people know: Linear/Embedding/norms use
// `weight` and `bias`; the gelu MLP is GPT-2's `c_fc`, `c_proj`; the SwiGLU MLP is
// LLaMA's `w1`, `w2`, `w3`; attention has `wq`, `wk`, `wv`, `wo`. A TransformerBlock
// with LayerNorm uses GPT-2's names (`ln_1`, `attn`, `ln_2`, `mlp`), one with RMSNorm
// LLaMA's (`attention_norm`, `attention`, `ffn_norm`, `feed_forward`).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallax/nn/module.h"
#include "parallax/ops/nn.h"

namespace px::nn {

// y = x·weightᵀ + bias; weight [out, in] ~ N(0, 0.02), bias [out] zeros.
class Linear : public ModuleBase<Linear> {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x);

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  const Tensor& weight() const { return *weight_; }
  Tensor& weight_slot() { return *weight_; }
  bool has_bias() const { return bias_ != nullptr; }
  // The bias, or an undefined tensor for a Linear built without one.
  Tensor bias() const { return bias_ ? *bias_ : Tensor(); }
  // ValueError when the layer has no bias.
  Tensor& bias_slot();

 private:
  int64_t in_features_;
  int64_t out_features_;
  Tensor* weight_;
  Tensor* bias_ = nullptr;
};

// Rows of weight [num, dim] ~ N(0, 0.02) picked by int64 indices [...] -> [..., dim].
class Embedding : public ModuleBase<Embedding> {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, DType dtype = DType::Float32);
  Tensor forward(const Tensor& indices);

  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t embedding_dim() const { return dim_; }
  const Tensor& weight() const { return *weight_; }
  Tensor& weight_slot() { return *weight_; }

 private:
  int64_t num_embeddings_;
  int64_t dim_;
  Tensor* weight_;
};

// Normalizes the last dim; weight ones, bias zeros.
class LayerNorm : public ModuleBase<LayerNorm> {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x);

  double eps() const { return eps_; }
  const Tensor& weight() const { return *weight_; }
  const Tensor& bias() const { return *bias_; }
  Tensor& weight_slot() { return *weight_; }
  Tensor& bias_slot() { return *bias_; }

 private:
  double eps_;
  Tensor* weight_;
  Tensor* bias_;
};

// x / sqrt(mean(x²) + eps) * weight over the last dim; weight ones.
class RMSNorm : public ModuleBase<RMSNorm> {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x);

  double eps() const { return eps_; }
  const Tensor& weight() const { return *weight_; }
  Tensor& weight_slot() { return *weight_; }

 private:
  double eps_;
  Tensor* weight_;
};

enum class Activation : uint8_t {
  Gelu,    // c_proj(gelu_tanh(c_fc(x))): GPT-2
  SwiGLU,  // w2(silu(w1(x)) * w3(x)): LLaMA
};

// The position-wise feed-forward network of a transformer block. `bias` applies to
// every Linear of either kind (GPT-2 uses biases, LLaMA does not).
class MLP : public ModuleBase<MLP> {
 public:
  MLP(int64_t dim, int64_t hidden, Activation activation = Activation::Gelu, bool bias = true,
      DType dtype = DType::Float32);
  Tensor forward(const Tensor& x);

  Activation activation() const { return activation_; }
  // Gelu: c_fc, c_proj (w1..w3 are null). SwiGLU: w1, w2, w3 (c_fc, c_proj are null).
  const std::shared_ptr<Linear>& c_fc() const { return c_fc_; }
  const std::shared_ptr<Linear>& c_proj() const { return c_proj_; }
  const std::shared_ptr<Linear>& w1() const { return w1_; }
  const std::shared_ptr<Linear>& w2() const { return w2_; }
  const std::shared_ptr<Linear>& w3() const { return w3_; }

 private:
  Activation activation_;
  std::shared_ptr<Linear> c_fc_, c_proj_;
  std::shared_ptr<Linear> w1_, w2_, w3_;
};

struct AttentionConfig {
  int64_t dim = 0;
  int64_t n_heads = 1;
  int64_t n_kv_heads = 0;  // 0: as many as n_heads (plain multi-head attention)
  bool bias = false;       // on all four projections
  bool qkv_bias = false;   // on q, k and v only (Qwen2)
  bool rope = false;       // rotary embedding on q and k
  double rope_theta = 10000.0;
  RopeScaling rope_scaling{};  // Llama 3's frequency scaling; none by default
};

// Causal multi-head self-attention with grouped KV heads: x [B, T, D] ->
// q [B, H, T, hd], k and v [B, KV, T, hd], each KV head serving H / KV query heads
// (query head h reads KV head h / (H / KV)).
class CausalSelfAttention : public ModuleBase<CausalSelfAttention> {
 public:
  // ValueError unless dim % n_heads == 0 and n_heads % n_kv_heads == 0 (and, with rope,
  // the head dim is even).
  explicit CausalSelfAttention(const AttentionConfig& config, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x);

  const AttentionConfig& config() const { return config_; }
  int64_t head_dim() const { return head_dim_; }
  const std::shared_ptr<Linear>& wq() const { return wq_; }
  const std::shared_ptr<Linear>& wk() const { return wk_; }
  const std::shared_ptr<Linear>& wv() const { return wv_; }
  const std::shared_ptr<Linear>& wo() const { return wo_; }

 private:
  // [B, T, heads * hd] -> [B, heads, T, hd]
  Tensor split_heads(const Tensor& x, int64_t heads) const;

  AttentionConfig config_;
  int64_t head_dim_;
  std::shared_ptr<Linear> wq_, wk_, wv_, wo_;
};

enum class NormKind : uint8_t { LayerNorm, RMSNorm };

struct BlockConfig {
  AttentionConfig attention;
  NormKind norm = NormKind::LayerNorm;
  Activation mlp = Activation::Gelu;
  int64_t hidden = 0;  // MLP hidden size; 0: 4 * dim
  double eps = 1e-5;   // of both norms
  bool mlp_bias = true;
};

// Pre-norm residual block: x + attn(norm1(x)), then + mlp(norm2(.)). Children are
// `ln_1`, `attn`, `ln_2`, `mlp` with LayerNorm (GPT-2) and `attention_norm`,
// `attention`, `ffn_norm`, `feed_forward` with RMSNorm (LLaMA).
class TransformerBlock : public ModuleBase<TransformerBlock> {
 public:
  explicit TransformerBlock(const BlockConfig& config, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x);

  const BlockConfig& config() const { return config_; }
  const std::shared_ptr<CausalSelfAttention>& attention() const { return attention_; }
  const std::shared_ptr<MLP>& mlp() const { return mlp_; }
  // The norms of the block's kind; the others are null.
  const std::shared_ptr<LayerNorm>& layer_norm1() const { return ln1_; }
  const std::shared_ptr<LayerNorm>& layer_norm2() const { return ln2_; }
  const std::shared_ptr<RMSNorm>& rms_norm1() const { return rms1_; }
  const std::shared_ptr<RMSNorm>& rms_norm2() const { return rms2_; }

 private:
  Tensor norm1(const Tensor& x);
  Tensor norm2(const Tensor& x);

  BlockConfig config_;
  std::shared_ptr<LayerNorm> ln1_, ln2_;
  std::shared_ptr<RMSNorm> rms1_, rms2_;
  std::shared_ptr<CausalSelfAttention> attention_;
  std::shared_ptr<MLP> mlp_;
};

// Modules of one type as children named "0", "1", ...; forward(x) chains them in
// order inside the list's own scope, so the nodes of block 3 of a list `h` carry
// module path `h.3...`.
template <class M>
class ModuleList : public ModuleBase<ModuleList<M>> {
 public:
  ModuleList() = default;

  // Adopts `module` under the next index; returns it.
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    auto adopted = this->register_module(std::to_string(items_.size()), std::move(module));
    items_.push_back(adopted);
    return adopted;
  }
  int64_t size() const { return static_cast<int64_t>(items_.size()); }
  // ValueError naming the index and the size when out of range.
  M& operator[](int64_t index) const {
    if (index < 0 || index >= size()) {
      throw ValueError("ModuleList: index " + std::to_string(index) + " out of range for a list of " +
                       std::to_string(size()));
    }
    return *items_[static_cast<size_t>(index)];
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  template <class X>
  X forward(X x) {
    for (const auto& item : items_) x = (*item)(x);
    return x;
  }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace px::nn
