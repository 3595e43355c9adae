#pragma once
// The model zoo: GPT-2, LLaMA and a small MLP classifier, built from the layers of
// layers.h on meta tensors. Presets give the real shapes (gpt2_124m, llama3_8b),
// which construct instantly and allocate nothing until materialize(), and tiny
// shapes for tests and demos (gpt_mini, llama_mini).
//
// Parameter names match the reference checkpoints: GPT-2's `wte`, `wpe`,
// `h.<i>.{ln_1,attn,ln_2,mlp}`, `ln_f`, `lm_head` (whose weight is wte's weight:
// tied), and LLaMA's `tok_embeddings`, `layers.<i>.{attention_norm,attention,
// ffn_norm,feed_forward}`, `norm`, `output`.

#include <cstdint>
#include <memory>

#include "parallax/nn/layers.h"

namespace px::nn {

struct GPTConfig {
  int64_t vocab = 64;
  int64_t max_seq = 16;
  int64_t dim = 32;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t ffn_hidden = 0;  // the MLP's hidden size; 0: 4 * dim
  double norm_eps = 1e-5;
  bool tie_embeddings = true;  // lm_head reads wte's weight
  DType dtype = DType::Float32;
};

// vocab 64, max_seq 16, dim 32, 2 layers, 4 heads.
GPTConfig gpt_mini();
// GPT-2 small: vocab 50257, max_seq 1024, dim 768, 12 layers, 12 heads (124,439,808 parameters).
GPTConfig gpt2_124m();

// Learned token and position embeddings, pre-LayerNorm blocks with biases and a
// gelu(tanh) MLP (of 4 * dim by default), a final LayerNorm and an LM head (tied to wte by default).
class GPT : public ModuleBase<GPT> {
 public:
  explicit GPT(const GPTConfig& config);
  // int64 tokens [B, T] with T <= max_seq -> logits [B, T, vocab].
  Tensor forward(const Tensor& tokens);

  const GPTConfig& config() const { return config_; }
  Embedding& wte() const { return *wte_; }
  Embedding& wpe() const { return *wpe_; }
  ModuleList<TransformerBlock>& h() const { return *h_; }
  LayerNorm& ln_f() const { return *ln_f_; }
  Linear& lm_head() const { return *lm_head_; }

 private:
  GPTConfig config_;
  std::shared_ptr<Embedding> wte_, wpe_;
  std::shared_ptr<ModuleList<TransformerBlock>> h_;
  std::shared_ptr<LayerNorm> ln_f_;
  std::shared_ptr<Linear> lm_head_;
};

struct LlamaConfig {
  int64_t vocab = 64;
  int64_t max_seq = 16;
  int64_t dim = 32;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;
  int64_t ffn_hidden = 64;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling{};   // Llama 3.1's; none by default
  bool tie_embeddings = false;  // output reads tok_embeddings' weight
  bool attention_bias = false;  // on q, k, v and o
  bool qkv_bias = false;        // on q, k and v only (Qwen2)
  bool mlp_bias = false;        // on w1, w2, w3
  int64_t sliding_window = 0;   // Mistral's attention window; 0: none. Longer sequences are refused.
  DType dtype = DType::Float32;
};

// vocab 64, max_seq 16, dim 32, 2 layers, 4 heads, 2 KV heads, FFN 64.
LlamaConfig llama_mini();
// LLaMA-3-8B: vocab 128256, max_seq 8192, dim 4096, 32 layers, 32 heads, 8 KV heads,
// FFN 14336, rope_theta 500000, eps 1e-5 (8,030,261,248 parameters).
LlamaConfig llama3_8b();
// LLaMA-3-70B: vocab 128256, max_seq 8192, dim 8192, 80 layers, 64 heads, 8 KV heads,
// FFN 28672, rope_theta 500000, eps 1e-5 (70,553,706,496 parameters).
LlamaConfig llama3_70b();

// Token embeddings, pre-RMSNorm blocks with rotary grouped-query attention and a
// SwiGLU MLP (no biases by default), a final RMSNorm and an output projection (untied by default).
// The family's variants (Mistral's window, Qwen2's q/k/v biases, Llama 3.1's rope scaling, tied
// embeddings) are fields of the config.
class Llama : public ModuleBase<Llama> {
 public:
  explicit Llama(const LlamaConfig& config);
  // int64 tokens [B, T] with T <= max_seq -> logits [B, T, vocab].
  Tensor forward(const Tensor& tokens);

  const LlamaConfig& config() const { return config_; }
  Embedding& tok_embeddings() const { return *tok_embeddings_; }
  ModuleList<TransformerBlock>& layers() const { return *layers_; }
  RMSNorm& norm() const { return *norm_; }
  Linear& output() const { return *output_; }

 private:
  LlamaConfig config_;
  std::shared_ptr<Embedding> tok_embeddings_;
  std::shared_ptr<ModuleList<TransformerBlock>> layers_;
  std::shared_ptr<RMSNorm> norm_;
  std::shared_ptr<Linear> output_;
};

// A small classifier for tests and demos: fc2(gelu_tanh(fc1(x))), x [..., in] -> [..., out].
class MLPModel : public ModuleBase<MLPModel> {
 public:
  MLPModel(int64_t in_features, int64_t hidden, int64_t out_features, DType dtype = DType::Float32);
  Tensor forward(const Tensor& x);

  Linear& fc1() const { return *fc1_; }
  Linear& fc2() const { return *fc2_; }

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
};

// Mean cross-entropy of logits [B, T, V] against int64 targets [B, T], over the
// flattened [B*T, V] rows.
Tensor lm_loss(const Tensor& logits, const Tensor& targets);

}  // namespace px::nn
