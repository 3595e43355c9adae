// Sample calls of the NN family's ops. Inputs are float64 and kept away from
// kinks and ties so that central finite differences are accurate to ~1e-9.

#include "parallax/ops/nn.h"
#include "support/op_samples.h"
#include "support/test_util.h"

namespace px::testing {

namespace {

constexpr DType kF64 = DType::Float64;

Tensor rand64(const Shape& shape, uint64_t seed) { return random_tensor(shape, kF64, seed, -1.0, 1.0); }

Tensor targets(std::initializer_list<double> values) {
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())}, DType::Int64);
}

std::vector<OpSample> softmax_samples() {
  std::vector<OpSample> out;
  for (std::string op : {"softmax", "log_softmax"}) {
    out.push_back({op, {rand64({3, 5}, 1)}, {}, true, "last_dim"});
    out.push_back({op, {rand64({2, 3, 4}, 2)}, {{"dim", int64_t{1}}}, true, "middle_dim"});
    out.push_back({op, {non_contiguous(rand64({4, 6}, 3))}, {{"dim", int64_t{0}}}, true, "non_contiguous"});
  }
  // The backward ops (the forwards' VJPs as one op each; not differentiable themselves), y a forward's output.
  Tensor x = rand64({2, 3, 4}, 4);
  out.push_back({"softmax_backward", {rand64({3, 5}, 5), softmax(rand64({3, 5}, 6), -1)}, {}, false, "last_dim"});
  out.push_back({"softmax_backward",
                 {non_contiguous(rand64({4, 6}, 7)), non_contiguous(softmax(rand64({4, 6}, 8), 0))},
                 {{"dim", int64_t{0}}},
                 false,
                 "non_contiguous"});
  out.push_back({"softmax_backward",
                 {random_tensor({3, 8}, DType::BFloat16, 9), softmax(random_tensor({3, 8}, DType::BFloat16, 10), -1)},
                 {},
                 false,
                 "bf16"});
  out.push_back(
      {"log_softmax_backward", {rand64({2, 3, 4}, 11), log_softmax(x, 1)}, {{"dim", int64_t{1}}}, false, "middle_dim"});
  out.push_back(
      {"log_softmax_backward", {rand64({3, 5}, 12), log_softmax(rand64({3, 5}, 13), -1)}, {}, false, "last_dim"});
  return out;
}

std::vector<OpSample> norm_samples() {
  return {
      {"layer_norm", {rand64({4, 6}, 10), rand64({6}, 11), rand64({6}, 12)}, {}, true, "affine"},
      {"layer_norm",
       {rand64({2, 3, 4}, 13), rand64({3, 4}, 14), rand64({3, 4}, 15)},
       {{"ndims", int64_t{2}}},
       true,
       "two_dims"},
      {"layer_norm", {non_contiguous(rand64({5, 3}, 16))}, {{"eps", 1e-3}}, true, "no_affine_non_contiguous"},
      {"layer_norm", {rand64({3, 4}, 17), rand64({4}, 18)}, {}, true, "weight_only"},
      {"rms_norm", {rand64({4, 6}, 20), rand64({6}, 21)}, {}, true, "weight"},
      {"rms_norm", {non_contiguous(rand64({2, 3, 4}, 22))}, {{"ndims", int64_t{2}}}, true, "two_dims_non_contiguous"},
      // The backward ops (the forward's VJPs as one op each; not differentiable themselves).
      {"layer_norm_backward", {rand64({4, 6}, 23), rand64({4, 6}, 24), rand64({6}, 25)}, {}, false, "weight"},
      {"layer_norm_backward",
       {rand64({2, 3, 4}, 26), non_contiguous(rand64({2, 3, 4}, 27))},
       {{"ndims", int64_t{2}}, {"eps", 1e-3}},
       false,
       "two_dims_non_contiguous"},
      {"rms_norm_backward", {rand64({4, 6}, 28), rand64({4, 6}, 29), rand64({6}, 19)}, {}, false, "weight"},
      {"rms_norm_backward",
       {random_tensor({3, 8}, DType::BFloat16, 9), random_tensor({3, 8}, DType::BFloat16, 8)},
       {},
       false,
       "bf16"},
  };
}

std::vector<OpSample> index_samples() {
  Tensor indices = Tensor::from_vector({0, 3, 3, 6, 1, 0}, {2, 3}, DType::Int64);
  return {
      {"embedding", {rand64({7, 4}, 30), indices}, {}, true, "repeated_rows"},
      {"embedding", {non_contiguous(rand64({5, 3}, 31)), targets({4, 0, 2})}, {}, true, "non_contiguous"},
      {"embedding_backward", {rand64({2, 3, 4}, 32), indices}, {{"num_weights", int64_t{7}}}, true, "scatter_add"},
      {"one_hot", {indices}, {{"num_classes", int64_t{8}}}, true, "f32"},
      {"one_hot", {targets({2, 0})}, {{"num_classes", int64_t{3}}, {"dtype", DType::Int64}}, true, "i64"},
  };
}

std::vector<OpSample> loss_samples() {
  std::vector<OpSample> out;
  Tensor target = targets({1, -100, 4, 0});
  for (std::string op : {"nll_loss", "cross_entropy"}) {
    for (std::string reduction : {"mean", "sum", "none"}) {
      out.push_back({op, {rand64({4, 5}, 40), target}, {{"reduction", reduction}}, true, reduction});
    }
    out.push_back({op,
                   {non_contiguous(rand64({3, 4}, 41)), targets({3, 2, 3})},
                   {{"ignore_index", int64_t{2}}},
                   true,
                   "ignore_index_non_contiguous"});
  }
  return out;
}

std::vector<OpSample> attention_samples() {
  const char* op = "scaled_dot_product_attention";
  return {
      {op, {rand64({2, 3, 4}, 50), rand64({2, 5, 4}, 51), rand64({2, 5, 6}, 52)}, {}, true, "plain"},
      {op,
       {rand64({2, 4, 4}, 53), rand64({2, 3, 4}, 54), rand64({2, 3, 2}, 55)},
       {{"causal", true}},
       true,
       "causal_tq_gt_tk"},
      {op,
       {rand64({2, 2, 3, 4}, 56), rand64({1, 2, 5, 4}, 57), rand64({2, 1, 5, 3}, 58)},
       {{"causal", true}, {"scale", 0.3}},
       true,
       "broadcast_batch_causal"},
      // Longer than the fused kernel's query block (64): several blocks, the causal limit per block.
      {op,
       {rand64({1, 70, 4}, 59), rand64({1, 70, 4}, 63), rand64({1, 70, 3}, 64)},
       {{"causal", true}},
       true,
       "blocks"},
      // A rank's block of a query-split causal call: queries 50..69 of 90 keys.
      {op,
       {rand64({2, 20, 4}, 90), rand64({2, 90, 4}, 91), rand64({2, 90, 3}, 92)},
       {{"causal", true}, {"first_query", int64_t{50}}},
       true,
       "first_query"},
  };
}

// The VJP of attention as one op; not differentiable itself (second derivatives of fused
// attention are not defined, as in PyTorch).
std::vector<OpSample> attention_backward_samples() {
  const char* op = "scaled_dot_product_attention_backward";
  return {
      {op,
       {rand64({2, 3, 4}, 65), rand64({2, 5, 4}, 66), rand64({2, 5, 6}, 67), rand64({2, 3, 6}, 68)},
       {},
       false,
       "plain"},
      {op,
       {rand64({2, 2, 3, 4}, 69), rand64({1, 2, 5, 4}, 70), rand64({2, 1, 5, 3}, 71), rand64({2, 2, 3, 3}, 72)},
       {{"causal", true}, {"scale", 0.3}},
       false,
       "broadcast_batch_causal"},
      {op,
       {random_tensor({2, 70, 8}, DType::Float32, 73), random_tensor({2, 70, 8}, DType::Float32, 74),
        random_tensor({2, 70, 8}, DType::Float32, 75), random_tensor({2, 70, 8}, DType::Float32, 76)},
       {{"causal", true}},
       false,
       "f32_blocks"},
      {op,
       {rand64({2, 20, 4}, 93), rand64({2, 90, 4}, 94), rand64({2, 90, 3}, 95), rand64({2, 20, 3}, 96)},
       {{"causal", true}, {"first_query", int64_t{50}}},
       false,
       "first_query"},
  };
}

std::vector<OpSample> rope_dropout_samples() {
  return {
      {"rope", {rand64({2, 3, 8}, 60)}, {}, true, "forward"},
      {"rope",
       {non_contiguous(rand64({5, 4}, 61))},
       {{"theta", 100.0}, {"inverse", true}},
       true,
       "inverse_non_contiguous"},
      // Llama 3's scaling at a context of 16 positions: of head dim 16's 8 pairs, the two slowest are
      // slowed by the factor, the fastest kept, and those between blended.
      {"rope",
       {rand64({2, 5, 16}, 63)},
       {{"theta", 500.0},
        {"scale_factor", 8.0},
        {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0},
        {"original_max_seq", int64_t{16}}},
       true,
       "llama3_scaling"},
      {"dropout", {rand64({4, 5}, 62)}, {{"p", 0.3}, {"seed", int64_t{7}}, {"offset", int64_t{11}}}, true, "p0_3"},
  };
}

}  // namespace

std::vector<OpSample> nn_samples() {
  std::vector<OpSample> all;
  for (auto family : {softmax_samples, norm_samples, index_samples, loss_samples, attention_samples,
                      attention_backward_samples, rope_dropout_samples}) {
    for (OpSample& sample : family()) all.push_back(std::move(sample));
  }
  return all;
}

}  // namespace px::testing
