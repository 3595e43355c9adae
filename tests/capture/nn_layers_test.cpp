#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "parallax/nn/layers.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/shape.h"
#include "support/test_util.h"

namespace px::nn {
namespace {

using px::testing::all_close;
using px::testing::random_ints;
using px::testing::random_tensor;

constexpr DType f64 = DType::Float64;

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : named) out.push_back(name);
  return out;
}

// Row-major [rows, out] = x [rows, in] · wᵀ + b, by loops.
std::vector<double> linear_loops(const std::vector<double>& x, const Tensor& weight, const Tensor& bias) {
  int64_t out_features = weight.size(0), in_features = weight.size(1);
  int64_t rows = static_cast<int64_t>(x.size()) / in_features;
  std::vector<double> w = weight.to_vector<double>();
  std::vector<double> b = bias.defined() ? bias.to_vector<double>() : std::vector<double>(out_features, 0.0);
  std::vector<double> y(static_cast<size_t>(rows * out_features));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out_features; ++o) {
      double acc = b[o];
      for (int64_t i = 0; i < in_features; ++i) acc += x[r * in_features + i] * w[o * in_features + i];
      y[r * out_features + o] = acc;
    }
  }
  return y;
}

// Replaces every parameter of `module` with random float64 values (biases and norm weights too).
void randomize(Module& module, uint64_t seed) {
  for (SlotRef& ref : module.slots()) *ref.tensor = random_tensor(ref.tensor->shape(), f64, seed++, -0.5, 0.5);
}

TEST(NnLayers, LinearMatchesLoops) {
  Linear linear(5, 3, true, f64);
  EXPECT_EQ(names(linear.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(linear.weight().shape(), (Shape{3, 5}));
  EXPECT_TRUE(linear.weight().is_meta());
  randomize(linear, 1);
  Tensor x = random_tensor({2, 4, 5}, f64, 9);
  Tensor y = linear(x);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 3}));
  EXPECT_TRUE(all_close(y, linear_loops(x.to_vector<double>(), linear.weight(), linear.bias())));

  Linear no_bias(5, 3, false, f64);
  EXPECT_FALSE(no_bias.has_bias());
  EXPECT_FALSE(no_bias.bias().defined());
  EXPECT_THROW(no_bias.bias_slot(), ValueError);
  no_bias.materialize(0);
  EXPECT_TRUE(all_close(no_bias(x), px::matmul(x, no_bias.weight().transpose(0, 1))));
  EXPECT_THROW(Linear(0, 3), ValueError);
}

TEST(NnLayers, LinearOnMetaStaysMeta) {
  Linear linear(4096, 14336, false);
  Tensor y = linear(Tensor::meta({2, 8, 4096}));
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.shape(), (Shape{2, 8, 14336}));
}

TEST(NnLayers, EmbeddingPicksRows) {
  Embedding embedding(10, 4, f64);
  embedding.materialize(7);
  Tensor indices = random_ints({2, 3}, 0, 10, 4);
  Tensor rows = embedding(indices);
  ASSERT_EQ(rows.shape(), (Shape{2, 3, 4}));
  std::vector<int64_t> ids = indices.to_vector<int64_t>();
  std::vector<double> weight = embedding.weight().to_vector<double>();
  std::vector<double> expected;
  for (int64_t id : ids) {
    for (int64_t d = 0; d < 4; ++d) expected.push_back(weight[id * 4 + d]);
  }
  EXPECT_TRUE(all_close(rows, expected));
}

TEST(NnLayers, LayerNormMatchesLoops) {
  LayerNorm norm(6, 1e-5, f64);
  norm.materialize(0);
  EXPECT_EQ(norm.weight().to_vector<double>(), std::vector<double>(6, 1.0));
  EXPECT_EQ(norm.bias().to_vector<double>(), std::vector<double>(6, 0.0));
  randomize(norm, 3);
  Tensor x = random_tensor({3, 6}, f64, 5);
  std::vector<double> xs = x.to_vector<double>(), w = norm.weight().to_vector<double>(),
                      b = norm.bias().to_vector<double>(), expected;
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < 6; ++i) mean += xs[r * 6 + i] / 6.0;
    for (int64_t i = 0; i < 6; ++i) var += (xs[r * 6 + i] - mean) * (xs[r * 6 + i] - mean) / 6.0;
    for (int64_t i = 0; i < 6; ++i) expected.push_back((xs[r * 6 + i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i]);
  }
  EXPECT_TRUE(all_close(norm(x), expected, 1e-10, 1e-12));
}

TEST(NnLayers, RMSNormMatchesLoops) {
  RMSNorm norm(4, 1e-6, f64);
  EXPECT_EQ(names(norm.named_parameters()), (std::vector<std::string>{"weight"}));
  randomize(norm, 8);
  Tensor x = random_tensor({2, 3, 4}, f64, 6);
  std::vector<double> xs = x.to_vector<double>(), w = norm.weight().to_vector<double>(), expected;
  for (int64_t r = 0; r < 6; ++r) {
    double ms = 0.0;
    for (int64_t i = 0; i < 4; ++i) ms += xs[r * 4 + i] * xs[r * 4 + i] / 4.0;
    for (int64_t i = 0; i < 4; ++i) expected.push_back(xs[r * 4 + i] / std::sqrt(ms + 1e-6) * w[i]);
  }
  EXPECT_TRUE(all_close(norm(x), expected, 1e-10, 1e-12));
}

double gelu_tanh(double v) {
  return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
}
double silu(double v) { return v / (1.0 + std::exp(-v)); }

TEST(NnLayers, GeluMLPMatchesLoops) {
  MLP mlp(4, 8, Activation::Gelu, true, f64);
  EXPECT_EQ(names(mlp.named_parameters()),
            (std::vector<std::string>{"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"}));
  EXPECT_EQ(mlp.w1(), nullptr);
  randomize(mlp, 20);
  Tensor x = random_tensor({3, 4}, f64, 2);
  std::vector<double> hidden = linear_loops(x.to_vector<double>(), mlp.c_fc()->weight(), mlp.c_fc()->bias());
  for (double& v : hidden) v = gelu_tanh(v);
  std::vector<double> expected = linear_loops(hidden, mlp.c_proj()->weight(), mlp.c_proj()->bias());
  EXPECT_TRUE(all_close(mlp(x), expected, 1e-10, 1e-12));
}

TEST(NnLayers, SwiGLUMLPMatchesLoops) {
  MLP mlp(4, 6, Activation::SwiGLU, false, f64);
  EXPECT_EQ(names(mlp.named_parameters()), (std::vector<std::string>{"w1.weight", "w2.weight", "w3.weight"}));
  EXPECT_EQ(mlp.c_fc(), nullptr);
  randomize(mlp, 30);
  Tensor x = random_tensor({2, 2, 4}, f64, 3);
  std::vector<double> xs = x.to_vector<double>();
  std::vector<double> gate = linear_loops(xs, mlp.w1()->weight(), Tensor());
  std::vector<double> up = linear_loops(xs, mlp.w3()->weight(), Tensor());
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = silu(gate[i]) * up[i];
  EXPECT_TRUE(all_close(mlp(x), linear_loops(gate, mlp.w2()->weight(), Tensor()), 1e-10, 1e-12));
}

// Causal attention by loops: per batch, query head h reads KV head h / (H / KV).
std::vector<double> attention_loops(const CausalSelfAttention& attention, const Tensor& x) {
  const AttentionConfig& cfg = attention.config();
  int64_t batch = x.size(0), seq = x.size(1), heads = cfg.n_heads, kv_heads = cfg.n_kv_heads;
  int64_t hd = attention.head_dim();
  std::vector<double> xs = x.to_vector<double>();
  std::vector<double> q = linear_loops(xs, attention.wq()->weight(), attention.wq()->bias());
  std::vector<double> k = linear_loops(xs, attention.wk()->weight(), attention.wk()->bias());
  std::vector<double> v = linear_loops(xs, attention.wv()->weight(), attention.wv()->bias());
  auto rotate = [&](std::vector<double>& t, int64_t n_heads) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t pos = 0; pos < seq; ++pos) {
        for (int64_t h = 0; h < n_heads; ++h) {
          double* head = &t[((b * seq + pos) * n_heads + h) * hd];
          for (int64_t i = 0; i < hd / 2; ++i) {
            double angle = static_cast<double>(pos) * std::pow(cfg.rope_theta, -2.0 * i / static_cast<double>(hd));
            double even = head[2 * i], odd = head[2 * i + 1];
            head[2 * i] = even * std::cos(angle) - odd * std::sin(angle);
            head[2 * i + 1] = even * std::sin(angle) + odd * std::cos(angle);
          }
        }
      }
    }
  };
  if (cfg.rope) {
    rotate(q, heads);
    rotate(k, kv_heads);
  }
  std::vector<double> merged(static_cast<size_t>(batch * seq * heads * hd));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      int64_t g = h / (heads / kv_heads);
      for (int64_t i = 0; i < seq; ++i) {
        const double* qi = &q[((b * seq + i) * heads + h) * hd];
        std::vector<double> scores;
        double top = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          const double* kj = &k[((b * seq + j) * kv_heads + g) * hd];
          double s = 0.0;
          for (int64_t d = 0; d < hd; ++d) s += qi[d] * kj[d];
          scores.push_back(s / std::sqrt(static_cast<double>(hd)));
          top = std::max(top, scores.back());
        }
        double total = 0.0;
        for (double& s : scores) total += (s = std::exp(s - top));
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j <= i; ++j) acc += scores[j] / total * v[((b * seq + j) * kv_heads + g) * hd + d];
          merged[((b * seq + i) * heads + h) * hd + d] = acc;
        }
      }
    }
  }
  return linear_loops(merged, attention.wo()->weight(), attention.wo()->bias());
}

TEST(NnLayers, GroupedQueryAttentionWithRopeMatchesPerHeadLoops) {
  AttentionConfig cfg{.dim = 8, .n_heads = 4, .n_kv_heads = 2, .bias = true, .rope = true, .rope_theta = 100.0};
  CausalSelfAttention attention(cfg, f64);
  EXPECT_EQ(attention.head_dim(), 2);
  EXPECT_EQ(attention.wk()->weight().shape(), (Shape{4, 8}));
  EXPECT_EQ(attention.wo()->weight().shape(), (Shape{8, 8}));
  randomize(attention, 40);
  Tensor x = random_tensor({2, 5, 8}, f64, 11);
  Tensor y = attention(x);
  ASSERT_EQ(y.shape(), (Shape{2, 5, 8}));
  EXPECT_TRUE(all_close(y, attention_loops(attention, x), 1e-10, 1e-12));
}

TEST(NnLayers, MultiHeadAttentionWithoutRopeMatchesLoops) {
  CausalSelfAttention attention({.dim = 12, .n_heads = 3}, f64);
  EXPECT_EQ(attention.config().n_kv_heads, 3);
  EXPECT_FALSE(attention.wq()->has_bias());
  randomize(attention, 50);
  Tensor x = random_tensor({1, 4, 12}, f64, 12);
  EXPECT_TRUE(all_close(attention(x), attention_loops(attention, x), 1e-10, 1e-12));
  EXPECT_THROW(attention(random_tensor({4, 12}, f64)), ShapeError);
}

TEST(NnLayers, AttentionRejectsBadHeadCounts) {
  EXPECT_THROW(CausalSelfAttention({.dim = 8, .n_heads = 4, .n_kv_heads = 3}), ValueError);
  EXPECT_THROW(CausalSelfAttention({.dim = 10, .n_heads = 4}), ValueError);
  EXPECT_THROW(CausalSelfAttention({.dim = 12, .n_heads = 4, .rope = true}), ValueError);  // head dim 3
}

TEST(NnLayers, TransformerBlockNamesPerNormKind) {
  BlockConfig gpt{.attention = {.dim = 8, .n_heads = 2, .bias = true}};
  TransformerBlock gpt_block(gpt);
  EXPECT_EQ(names(gpt_block.named_parameters()),
            (std::vector<std::string>{"ln_1.weight", "ln_1.bias", "attn.wq.weight", "attn.wq.bias", "attn.wk.weight",
                                      "attn.wk.bias", "attn.wv.weight", "attn.wv.bias", "attn.wo.weight",
                                      "attn.wo.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                                      "mlp.c_proj.weight", "mlp.c_proj.bias"}));
  EXPECT_EQ(gpt_block.mlp()->c_fc()->weight().shape(), (Shape{32, 8}));  // hidden 0 means 4 * dim

  BlockConfig llama{.attention = {.dim = 8, .n_heads = 4, .n_kv_heads = 2, .rope = true},
                    .norm = NormKind::RMSNorm,
                    .mlp = Activation::SwiGLU,
                    .hidden = 12,
                    .mlp_bias = false};
  TransformerBlock llama_block(llama);
  EXPECT_EQ(names(llama_block.named_parameters()),
            (std::vector<std::string>{"attention_norm.weight", "attention.wq.weight", "attention.wk.weight",
                                      "attention.wv.weight", "attention.wo.weight", "ffn_norm.weight",
                                      "feed_forward.w1.weight", "feed_forward.w2.weight", "feed_forward.w3.weight"}));
}

TEST(NnLayers, TransformerBlockIsPreNormResidual) {
  for (NormKind norm : {NormKind::LayerNorm, NormKind::RMSNorm}) {
    BlockConfig cfg{.attention = {.dim = 8, .n_heads = 4, .n_kv_heads = 2, .rope = norm == NormKind::RMSNorm},
                    .norm = norm,
                    .mlp = norm == NormKind::RMSNorm ? Activation::SwiGLU : Activation::Gelu,
                    .hidden = 16};
    TransformerBlock block(cfg, f64);
    randomize(block, 60);
    Tensor x = random_tensor({2, 3, 8}, f64, 13);
    Tensor n1 = norm == NormKind::LayerNorm
                    ? px::layer_norm(x, block.layer_norm1()->weight(), block.layer_norm1()->bias(), cfg.eps)
                    : px::rms_norm(x, block.rms_norm1()->weight(), cfg.eps);
    std::vector<double> attn = attention_loops(*block.attention(), n1);
    Tensor h = x + Tensor::from_vector(attn, x.shape(), f64);
    Tensor n2 = norm == NormKind::LayerNorm
                    ? px::layer_norm(h, block.layer_norm2()->weight(), block.layer_norm2()->bias(), cfg.eps)
                    : px::rms_norm(h, block.rms_norm2()->weight(), cfg.eps);
    Tensor expected = h + (*block.mlp())(n2);
    EXPECT_TRUE(all_close(block(x), expected, 1e-10, 1e-12));
  }
}

TEST(NnLayers, ModuleListNamesItemsByIndex) {
  ModuleList<Linear> list;
  list.push_back(std::make_shared<Linear>(2, 3));
  list.push_back(std::make_shared<Linear>(3, 2, false));
  EXPECT_EQ(list.size(), 2);
  EXPECT_EQ(names(list.named_parameters()), (std::vector<std::string>{"0.weight", "0.bias", "1.weight"}));
  EXPECT_EQ(list[1].name(), "1");
  EXPECT_THROW(list[2], ValueError);
  EXPECT_THROW(list[-1], ValueError);
  Tensor y = list(Tensor::meta({5, 2}));
  EXPECT_EQ(y.shape(), (Shape{5, 2}));
}

}  // namespace
}  // namespace px::nn
