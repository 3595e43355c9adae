// embedding, embedding_backward and one_hot: against naive references, on
// strided inputs, with repeated indices; VJPs; out-of-range indices and bad
// shapes raise named errors; meta inputs.

#include <gtest/gtest.h>

#include "ops/nn_test_helpers.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/nn.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::all_close;
using testing::check_vjp;
using testing::mentions;
using testing::non_contiguous;
using testing::random_tensor;
using testing::thrown_message;

std::vector<double> gather_reference(const Tensor& weight, const Tensor& indices) {
  std::vector<double> w = weight.to_vector<double>();
  int64_t dim = weight.size(1);
  std::vector<double> out;
  for (int64_t index : indices.to_vector<int64_t>()) {
    for (int64_t d = 0; d < dim; ++d) out.push_back(w[index * dim + d]);
  }
  return out;
}

std::vector<double> scatter_reference(const Tensor& grad, const Tensor& indices, int64_t vocab) {
  std::vector<double> g = grad.to_vector<double>();
  int64_t dim = grad.shape().back();
  std::vector<double> out(vocab * dim, 0.0);
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  for (size_t i = 0; i < idx.size(); ++i) {
    for (int64_t d = 0; d < dim; ++d) out[idx[i] * dim + d] += g[i * dim + d];
  }
  return out;
}

TEST(NnEmbedding, GathersRows) {
  Tensor weight = random_tensor({10, 4}, DType::Float64, 1);
  Tensor indices = Tensor::from_vector({3, 0, 9, 3, 3, 1}, {2, 3}, DType::Int64);
  Tensor out = embedding(weight, indices);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4}));
  EXPECT_TRUE(all_close(out, gather_reference(weight, indices)));
}

TEST(NnEmbedding, StridedWeightAndIndicesAndOtherDTypes) {
  Tensor weight = non_contiguous(random_tensor({6, 5}, DType::Float32, 2));
  Tensor indices = non_contiguous(Tensor::from_vector({5, 0, 2, 2}, {4}, DType::Int64));
  ASSERT_FALSE(weight.is_contiguous());
  ASSERT_FALSE(indices.is_contiguous());
  EXPECT_TRUE(all_close(embedding(weight, indices), gather_reference(weight, indices)));
  Tensor ints = Tensor::from_vector({1, 2, 3, 4}, {2, 2}, DType::Int64);
  Tensor picked = embedding(ints, Tensor::from_vector({1}, {1}, DType::Int64));
  EXPECT_EQ(picked.dtype(), DType::Int64);
  EXPECT_EQ(picked.to_vector<int64_t>(), (std::vector<int64_t>{3, 4}));
}

TEST(NnEmbedding, ScalarIndexGivesOneRow) {
  Tensor weight = random_tensor({3, 2}, DType::Float64, 3);
  Tensor out = embedding(weight, Tensor::scalar(2, DType::Int64));
  EXPECT_EQ(out.shape(), (Shape{2}));
  EXPECT_TRUE(all_close(out, gather_reference(weight, Tensor::scalar(2, DType::Int64))));
}

TEST(NnEmbedding, OutOfRangeIndexRaisesValueError) {
  Tensor weight = random_tensor({10, 4}, DType::Float32, 4);
  std::string message = thrown_message<ValueError>([&] {
    embedding(weight, Tensor::from_vector({1, 10}, {2}, DType::Int64));
  });
  EXPECT_TRUE(mentions(message, {"embedding", "index 10", "position 1", "vocabulary size 10"}));
  message = thrown_message<ValueError>([&] { embedding(weight, Tensor::from_vector({-1}, {1}, DType::Int64)); });
  EXPECT_TRUE(mentions(message, {"embedding", "index -1"}));
}

TEST(NnEmbedding, BadShapesAndDTypes) {
  EXPECT_TRUE(
      mentions(thrown_message<ShapeError>([] { embedding(Tensor::meta({10}), Tensor::meta({2}, DType::Int64)); }),
               {"embedding", "weight f32[10]"}));
  EXPECT_TRUE(mentions(thrown_message<DTypeError>([] {
                         embedding(Tensor::meta({10, 2}), Tensor::meta({2}));
                       }),
                       {"embedding", "indices", "f32[2]"}));
  std::string message = thrown_message<ShapeError>([] {
    embedding_backward(Tensor::meta({3, 4}), Tensor::meta({2}, DType::Int64), 10);
  });
  EXPECT_TRUE(mentions(message, {"embedding_backward", "grad f32[3,4]", "indices i64[2]"}));
  EXPECT_TRUE(mentions(thrown_message<ValueError>([] {
                         embedding_backward(Tensor::meta({2, 4}), Tensor::meta({2}, DType::Int64), -1);
                       }),
                       {"embedding_backward", "num_weights", "-1"}));
}

TEST(NnEmbeddingBackward, ScatterAddsRepeatedRows) {
  Tensor grad = random_tensor({2, 3, 4}, DType::Float64, 5);
  Tensor indices = Tensor::from_vector({3, 0, 3, 3, 6, 0}, {2, 3}, DType::Int64);
  Tensor out = embedding_backward(grad, indices, 8);
  EXPECT_EQ(out.shape(), (Shape{8, 4}));
  EXPECT_TRUE(all_close(out, scatter_reference(grad, indices, 8), 1e-14, 1e-14));
  Tensor strided = non_contiguous(random_tensor({6, 4}, DType::Float32, 6));
  Tensor flat = Tensor::from_vector({1, 1, 1, 0, 2, 1}, {6}, DType::Int64);
  EXPECT_TRUE(all_close(embedding_backward(strided, flat, 3), scatter_reference(strided, flat, 3), 1e-6, 1e-6));
  Tensor bf16 = random_tensor({6, 4}, DType::BFloat16, 7);
  EXPECT_TRUE(all_close(embedding_backward(bf16, flat, 3), scatter_reference(bf16, flat, 3), 1e-2, 1e-2));
}

TEST(NnEmbeddingBackward, OutOfRangeIndexRaisesValueError) {
  std::string message = thrown_message<ValueError>([] {
    embedding_backward(Tensor::zeros({2, 3}), Tensor::from_vector({0, 5}, {2}, DType::Int64), 5);
  });
  EXPECT_TRUE(mentions(message, {"embedding_backward", "index 5", "num_weights 5"}));
}

TEST(NnEmbedding, VjpsMatchFiniteDifferences) {
  Tensor indices = Tensor::from_vector({2, 0, 2, 4}, {2, 2}, DType::Int64);
  EXPECT_TRUE(check_vjp("embedding", {random_tensor({5, 3}, DType::Float64, 8), indices}));
  EXPECT_TRUE(check_vjp("embedding_backward", {random_tensor({2, 2, 3}, DType::Float64, 9), indices},
                        {{"num_weights", int64_t{6}}}));
}

TEST(NnOneHot, EncodesIndicesInAnyDType) {
  Tensor indices = Tensor::from_vector({2, 0, 3, 2}, {2, 2}, DType::Int64);
  Tensor out = one_hot(indices, 4);
  EXPECT_EQ(out.meta_info(), (TensorMeta{{2, 2, 4}, DType::Float32}));
  std::vector<double> expected(16, 0.0);
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  for (size_t i = 0; i < idx.size(); ++i) expected[i * 4 + idx[i]] = 1.0;
  EXPECT_TRUE(all_close(out, expected));
  for (DType dtype : {DType::Float64, DType::BFloat16, DType::Int64, DType::Bool}) {
    Tensor typed = one_hot(non_contiguous(indices), 4, dtype);
    EXPECT_EQ(typed.dtype(), dtype);
    EXPECT_TRUE(all_close(typed, expected));
  }
}

TEST(NnOneHot, ErrorsNameTheProblem) {
  std::string message = thrown_message<ValueError>([] { one_hot(Tensor::from_vector({1, 3}, {2}, DType::Int64), 3); });
  EXPECT_TRUE(mentions(message, {"one_hot", "index 3", "num_classes 3"}));
  EXPECT_TRUE(mentions(thrown_message<ValueError>([] { one_hot(Tensor::meta({2}, DType::Int64), -1); }),
                       {"one_hot", "num_classes", "-1"}));
  EXPECT_TRUE(mentions(thrown_message<DTypeError>([] { one_hot(Tensor::meta({2}), 3); }), {"one_hot", "f32[2]"}));
}

TEST(NnEmbedding, InferredMetasMatchKernelsAndMetaAllocatesNothing) {
  Tensor weight = random_tensor({5, 3}, DType::Float32, 10);
  Tensor indices = Tensor::from_vector({1, 4}, {2}, DType::Int64);
  const OpDef& def = builtin_registry().get("embedding");
  EXPECT_EQ(infer_metas(def, {weight.meta_info(), indices.meta_info()}, {})[0],
            call(def, {weight, indices})[0].meta_info());
  Tensor big = embedding(Tensor::meta({128256, 16384}, DType::BFloat16), Tensor::meta({64, 8192}, DType::Int64));
  EXPECT_TRUE(big.is_meta());
  EXPECT_EQ(big.shape(), (Shape{64, 8192, 16384}));
  Tensor grad = embedding_backward(big, Tensor::meta({64, 8192}, DType::Int64), 128256);
  EXPECT_EQ(grad.meta_info(), (TensorMeta{{128256, 16384}, DType::BFloat16}));
  EXPECT_EQ(one_hot(Tensor::meta({1 << 20}, DType::Int64), 50000).shape(), (Shape{1 << 20, 50000}));
}

}  // namespace
}  // namespace px
