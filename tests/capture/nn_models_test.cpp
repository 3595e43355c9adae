#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "parallax/ir/tracer.h"
#include "parallax/nn/models.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "support/test_util.h"

namespace px::nn {
namespace {

using px::testing::all_close;
using px::testing::random_ints;
using px::testing::random_tensor;

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : named) out.push_back(name);
  return out;
}

TEST(NnModels, GptMiniNamesAndTying) {
  GPT gpt(gpt_mini());
  std::vector<std::string> expected{"wte.weight", "wpe.weight"};
  for (std::string block : {"h.0.", "h.1."}) {
    for (const char* name :
         {"ln_1.weight", "ln_1.bias", "attn.wq.weight", "attn.wq.bias", "attn.wk.weight", "attn.wk.bias",
          "attn.wv.weight", "attn.wv.bias", "attn.wo.weight", "attn.wo.bias", "ln_2.weight", "ln_2.bias",
          "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"}) {
      expected.push_back(block + name);
    }
  }
  for (const char* name : {"ln_f.weight", "ln_f.bias", "lm_head.weight"}) expected.emplace_back(name);
  EXPECT_EQ(names(gpt.named_parameters()), expected);
  EXPECT_TRUE(gpt.named_buffers().empty());

  // lm_head.weight is wte.weight: listed under both names, counted and grouped once.
  EXPECT_TRUE(gpt.lm_head().weight().same(gpt.wte().weight()));
  std::vector<ParameterGroup> groups = gpt.parameter_groups();
  EXPECT_EQ(groups.size(), expected.size() - 1);
  EXPECT_EQ(groups.front().fqns, (std::vector<std::string>{"wte.weight", "lm_head.weight"}));
  int64_t v = 64, s = 16, d = 32;
  int64_t block = 2 * 2 * d + 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d);
  EXPECT_EQ(gpt.num_parameters(), v * d + s * d + 2 * block + 2 * d);

  gpt.materialize(1);
  EXPECT_FALSE(gpt.is_meta());
  EXPECT_TRUE(gpt.lm_head().weight().same(gpt.wte().weight()));
  EXPECT_TRUE(gpt.lm_head().weight().is_dense());
}

TEST(NnModels, Gpt2SmallHasTheReferenceParameterCount) {
  GPT gpt(gpt2_124m());
  EXPECT_TRUE(gpt.is_meta());
  EXPECT_EQ(gpt.num_parameters(), 124439808);
  Tensor logits = gpt(Tensor::meta({2, 1024}, DType::Int64));
  EXPECT_TRUE(logits.is_meta());
  EXPECT_EQ(logits.shape(), (Shape{2, 1024, 50257}));
}

TEST(NnModels, Llama3_8bConstructsOnMeta) {
  LlamaConfig c = llama3_8b();
  Llama llama(c);
  int64_t head_dim = c.dim / c.n_heads;
  int64_t attention = 2 * c.dim * c.dim + 2 * c.dim * c.n_kv_heads * head_dim;
  int64_t ffn = 3 * c.dim * c.ffn_hidden;
  int64_t layer = attention + ffn + 2 * c.dim;
  int64_t expected = c.vocab * c.dim + c.n_layers * layer + c.dim + c.dim * c.vocab;
  EXPECT_EQ(expected, 8030261248);
  EXPECT_EQ(llama.num_parameters(), expected);
  for (const auto& [fqn, tensor] : llama.named_parameters()) EXPECT_TRUE(tensor.is_meta()) << fqn;
  for (const SlotRef& ref : llama.slots()) EXPECT_EQ(ref.tensor->storage(), nullptr) << ref.fqn;
  EXPECT_EQ(llama.slot("layers.31.attention.wk.weight").shape(), (Shape{1024, 4096}));
  EXPECT_EQ(llama.slot("layers.3.feed_forward.w1.weight").shape(), (Shape{14336, 4096}));
  EXPECT_EQ(llama.named_parameters().size(), 1u + 32u * 9u + 2u);

  Tensor logits = llama(Tensor::meta({1, 8}, DType::Int64));
  EXPECT_TRUE(logits.is_meta());
  EXPECT_EQ(logits.shape(), (Shape{1, 8, 128256}));
}

TEST(NnModels, Llama3_70bHasTheReferenceParameterCount) {
  Llama llama(llama3_70b());
  EXPECT_TRUE(llama.is_meta());
  EXPECT_EQ(llama.num_parameters(), 70553706496);
  EXPECT_EQ(llama.slot("layers.79.feed_forward.w2.weight").shape(), (Shape{8192, 28672}));
}

TEST(NnModels, LlamaMiniNames) {
  Llama llama(llama_mini());
  std::vector<std::string> expected{"tok_embeddings.weight"};
  for (std::string layer : {"layers.0.", "layers.1."}) {
    for (const char* name : {"attention_norm.weight", "attention.wq.weight", "attention.wk.weight",
                             "attention.wv.weight", "attention.wo.weight", "ffn_norm.weight", "feed_forward.w1.weight",
                             "feed_forward.w2.weight", "feed_forward.w3.weight"}) {
      expected.push_back(layer + name);
    }
  }
  expected.emplace_back("norm.weight");
  expected.emplace_back("output.weight");
  EXPECT_EQ(names(llama.named_parameters()), expected);
  EXPECT_EQ(llama.slot("layers.1.attention.wk.weight").shape(), (Shape{16, 32}));  // 2 KV heads of 8
  EXPECT_EQ(llama.parameter_groups().size(), expected.size());                     // nothing tied
}

TEST(NnModels, GptForwardMatchesItsComposition) {
  GPTConfig config = gpt_mini();
  config.dtype = DType::Float64;
  GPT gpt(config);
  gpt.materialize(3);
  Tensor tokens = random_ints({2, 8}, 0, config.vocab, 5);
  Tensor logits = gpt(tokens);
  ASSERT_EQ(logits.shape(), (Shape{2, 8, 64}));
  ASSERT_TRUE(logits.is_dense());

  Tensor x = px::embedding(gpt.wte().weight(), tokens) + px::embedding(gpt.wpe().weight(), px::arange(8));
  for (int64_t i = 0; i < gpt.h().size(); ++i) x = gpt.h()[i](x);
  x = px::layer_norm(x, gpt.ln_f().weight(), gpt.ln_f().bias(), 1e-5);
  EXPECT_TRUE(all_close(logits, px::matmul(x, gpt.wte().weight().transpose(0, 1)), 1e-10, 1e-12));

  EXPECT_THROW(gpt(random_ints({1, 17}, 0, 64)), ValueError);
  EXPECT_THROW(gpt(random_tensor({1, 4})), DTypeError);
  EXPECT_THROW(gpt(random_ints({8}, 0, 64)), ShapeError);
}

TEST(NnModels, LlamaForwardMatchesItsComposition) {
  LlamaConfig config = llama_mini();
  config.dtype = DType::Float64;
  Llama llama(config);
  llama.materialize(4);
  Tensor tokens = random_ints({2, 6}, 0, config.vocab, 6);
  Tensor logits = llama(tokens);
  ASSERT_EQ(logits.shape(), (Shape{2, 6, 64}));

  Tensor x = px::embedding(llama.tok_embeddings().weight(), tokens);
  for (const auto& layer : llama.layers()) x = (*layer)(x);
  x = px::rms_norm(x, llama.norm().weight(), config.norm_eps);
  EXPECT_TRUE(all_close(logits, px::linear(x, llama.output().weight()), 1e-10, 1e-12));

  Llama on_meta(llama_mini());
  Tensor meta_logits = on_meta(Tensor::meta({3, 16}, DType::Int64));
  EXPECT_TRUE(meta_logits.is_meta());
  EXPECT_EQ(meta_logits.shape(), (Shape{3, 16, 64}));
}

TEST(NnModels, MLPModelClassifies) {
  MLPModel model(4, 16, 3, DType::Float64);
  EXPECT_EQ(names(model.named_parameters()),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  model.materialize(0);
  Tensor x = random_tensor({5, 4});
  Tensor expected = px::linear(px::gelu(px::linear(x, model.fc1().weight(), model.fc1().bias()), "tanh"),
                               model.fc2().weight(), model.fc2().bias());
  EXPECT_TRUE(all_close(model(x), expected));
}

TEST(NnModels, LmLossIsMeanCrossEntropyOverTokens) {
  Tensor logits = random_tensor({2, 3, 5}, DType::Float64, 1, -2.0, 2.0);
  Tensor targets = random_ints({2, 3}, 0, 5, 2);
  std::vector<double> l = logits.to_vector<double>();
  std::vector<int64_t> t = targets.to_vector<int64_t>();
  double total = 0.0;
  for (int64_t row = 0; row < 6; ++row) {
    double sum = 0.0;
    for (int64_t c = 0; c < 5; ++c) sum += std::exp(l[row * 5 + c]);
    total += std::log(sum) - l[row * 5 + t[row]];
  }
  EXPECT_NEAR(lm_loss(logits, targets).item<double>(), total / 6.0, 1e-12);
  EXPECT_THROW(lm_loss(logits, random_ints({2, 4}, 0, 5)), ShapeError);
  EXPECT_THROW(lm_loss(logits.reshape({6, 5}), targets), ShapeError);
}

// Traces `model(tokens)` with every parameter group as a graph input (proxies put into
// the slots for the duration of the trace) and returns the module paths of its nodes.
template <class M>
std::set<std::string> traced_module_paths(M& model, Shape token_shape) {
  ir::Tracer tracer("model");
  std::vector<ParameterGroup> groups = model.parameter_groups();
  for (ParameterGroup& group : groups) {
    Tensor proxy = tracer.add_input(group.fqns.front(), group.tensor.meta_info());
    for (Tensor* slot : group.slots) *slot = proxy;
  }
  Tensor tokens = tracer.add_input("tokens", {std::move(token_shape), DType::Int64});
  {
    InterceptScope scope(tracer);
    tracer.set_outputs({model(tokens)});
  }
  for (ParameterGroup& group : groups) {
    for (Tensor* slot : group.slots) *slot = group.tensor;
  }
  ir::Graph graph = tracer.finish();
  std::set<std::string> paths;
  for (const ir::Node& node : graph.nodes()) paths.insert(node.provenance.module_path);
  return paths;
}

TEST(NnModels, ForwardStampsModulePaths) {
  GPT gpt(gpt_mini());
  std::set<std::string> paths = traced_module_paths(gpt, {2, 8});
  for (const char* path : {"", "wte", "wpe", "h.0.ln_1", "h.0.attn", "h.0.attn.wq", "h.0.attn.wo", "h.1.ln_2",
                           "h.1.mlp.c_fc", "h.1.mlp.c_proj", "h.1.mlp", "ln_f", "lm_head"}) {
    EXPECT_TRUE(paths.count(path)) << path;
  }
  // The slots hold their meta tensors again, tying intact.
  EXPECT_TRUE(gpt.is_meta());
  EXPECT_TRUE(gpt.lm_head().weight().same(gpt.wte().weight()));

  Llama llama(llama_mini());
  paths = traced_module_paths(llama, {1, 4});
  for (const char* path : {"tok_embeddings", "layers.0.attention_norm", "layers.0.attention", "layers.1.attention.wq",
                           "layers.1.feed_forward.w3", "norm", "output"}) {
    EXPECT_TRUE(paths.count(path)) << path;
  }
}

}  // namespace
}  // namespace px::nn
