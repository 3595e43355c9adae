// nll_loss and cross_entropy: against naive references for every reduction,
// ignore_index handling (including no counted rows), strided logits, agreement of
// the fused cross_entropy with nll_loss(log_softmax(x)), VJPs, errors, meta.

#include <gtest/gtest.h>

#include <cmath>

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

Tensor targets(std::vector<double> values) {
  auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector(values, {n}, DType::Int64);
}

// Per-row losses (0 on ignored rows) and the reduced value, computed naively.
std::vector<double> loss_reference(const Tensor& scores, const Tensor& target, const std::string& reduction,
                                   int64_t ignore_index, bool from_logits) {
  std::vector<double> s = scores.to_vector<double>();
  std::vector<int64_t> t = target.to_vector<int64_t>();
  int64_t classes = scores.size(1);
  std::vector<double> rows;
  double total = 0;
  int64_t counted = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    if (t[r] == ignore_index) {
      rows.push_back(0.0);
      continue;
    }
    double lse = 0;
    for (int64_t c = 0; c < classes; ++c) lse += std::exp(s[r * classes + c]);
    double loss = (from_logits ? std::log(lse) : 0.0) - s[r * classes + t[r]];
    rows.push_back(loss);
    total += loss;
    ++counted;
  }
  if (reduction == "none") return rows;
  return {reduction == "sum" ? total : total / static_cast<double>(counted)};
}

TEST(NnLoss, MatchReferenceForEveryReduction) {
  Tensor scores = random_tensor({5, 4}, DType::Float64, 1, -3, 3);
  Tensor target = targets({3, -100, 0, 1, 3});
  for (const char* reduction : {"mean", "sum", "none"}) {
    EXPECT_TRUE(all_close(cross_entropy(scores, target, reduction),
                          loss_reference(scores, target, reduction, -100, true), 1e-12, 1e-12))
        << reduction;
    EXPECT_TRUE(all_close(nll_loss(scores, target, reduction), loss_reference(scores, target, reduction, -100, false),
                          1e-12, 1e-12))
        << reduction;
  }
  EXPECT_EQ(cross_entropy(scores, target).shape(), Shape{});
  EXPECT_EQ(cross_entropy(scores, target, "none").shape(), (Shape{5}));
}

TEST(NnLoss, CustomIgnoreIndexAndStridedInputs) {
  Tensor logits = non_contiguous(random_tensor({4, 6}, DType::Float64, 2, -2, 2));
  Tensor target = non_contiguous(targets({5, 2, 2, 0}));
  ASSERT_FALSE(logits.is_contiguous());
  EXPECT_TRUE(all_close(cross_entropy(logits, target, "mean", 2), loss_reference(logits, target, "mean", 2, true),
                        1e-12, 1e-12));
  EXPECT_TRUE(all_close(nll_loss(logits, target, "none", 2), loss_reference(logits, target, "none", 2, false)));
}

TEST(NnLoss, FusedCrossEntropyEqualsNllOfLogSoftmax) {
  Tensor logits = random_tensor({7, 33}, DType::Float32, 3, -8, 8);
  Tensor target = targets({0, 32, 5, -100, 7, 7, 1});
  for (const char* reduction : {"mean", "sum", "none"}) {
    EXPECT_TRUE(all_close(cross_entropy(logits, target, reduction), nll_loss(log_softmax(logits), target, reduction),
                          1e-5, 1e-5));
  }
}

TEST(NnLoss, LargeFloat32LogitsStayFinite) {
  Tensor logits = Tensor::from_vector({1000, 0, -1000, 500}, {2, 2}, DType::Float32);
  Tensor loss = cross_entropy(logits, targets({1, 0}), "none");
  EXPECT_TRUE(all_close(loss, {1000.0, 1500.0}, 1e-6, 0));
}

TEST(NnLoss, NoCountedRows) {
  Tensor logits = random_tensor({2, 3}, DType::Float64, 4);
  Tensor ignored = targets({-100, -100});
  EXPECT_TRUE(std::isnan(cross_entropy(logits, ignored).item<double>()));  // mean over nothing, as PyTorch
  EXPECT_TRUE(std::isnan(nll_loss(logits, ignored).item<double>()));
  EXPECT_EQ(cross_entropy(logits, ignored, "sum").item<double>(), 0.0);
  // The gradient of that mean is zero, not NaN.
  const OpDef& def = builtin_registry().get("cross_entropy");
  std::vector<Tensor> inputs{logits, ignored};
  std::vector<Tensor> outputs = call(def, inputs);
  std::vector<Tensor> grads{Tensor::scalar(1.0, DType::Float64)};
  Attrs attrs = check_call(def, inputs, {});
  std::vector<Tensor> dx = def.vjp(VjpContext{inputs, outputs, grads, attrs});
  EXPECT_TRUE(all_close(dx[0], std::vector<double>(6, 0.0)));
  EXPECT_FALSE(dx[1].defined());
}

TEST(NnLoss, VjpsMatchFiniteDifferences) {
  Tensor scores = random_tensor({4, 3}, DType::Float64, 5);
  Tensor target = targets({2, 0, -100, 2});
  for (const char* op : {"nll_loss", "cross_entropy"}) {
    for (const char* reduction : {"mean", "sum", "none"}) {
      EXPECT_TRUE(check_vjp(op, {scores, target}, {{"reduction", std::string(reduction)}})) << op << reduction;
    }
    EXPECT_TRUE(check_vjp(op, {non_contiguous(scores), targets({1, 1, 0, 2})}, {{"ignore_index", int64_t{1}}}));
  }
}

TEST(NnLoss, BadTargetsAndShapesRaiseNamedErrors) {
  Tensor logits = random_tensor({3, 5}, DType::Float32, 6);
  std::string message = thrown_message<ValueError>([&] { cross_entropy(logits, targets({1, 5, 0})); });
  EXPECT_TRUE(mentions(message, {"cross_entropy", "target 5", "row 1", "5 classes"}));
  message = thrown_message<ValueError>([&] { nll_loss(logits, targets({-3, 0, 0})); });
  EXPECT_TRUE(mentions(message, {"nll_loss", "target -3", "row 0"}));
  message = thrown_message<ShapeError>([] { cross_entropy(Tensor::meta({3, 5}), Tensor::meta({4}, DType::Int64)); });
  EXPECT_TRUE(mentions(message, {"cross_entropy", "logits f32[3,5]", "target i64[4]"}));
  message = thrown_message<ShapeError>([] { nll_loss(Tensor::meta({2, 3, 5}), Tensor::meta({2}, DType::Int64)); });
  EXPECT_TRUE(mentions(message, {"nll_loss", "logp f32[2,3,5]"}));
  EXPECT_TRUE(mentions(thrown_message<DTypeError>([] {
                         cross_entropy(Tensor::meta({3, 5}), Tensor::meta({3}));
                       }),
                       {"cross_entropy", "target", "f32[3]"}));
  EXPECT_TRUE(mentions(thrown_message<ValueError>([&] {
                         cross_entropy(logits, targets({0, 0, 0}), "avg");
                       }),
                       {"cross_entropy", "reduction", "\"avg\""}));
}

TEST(NnLoss, InferredMetaMatchesKernelAndMetaAllocatesNothing) {
  Tensor logits = random_tensor({3, 5}, DType::Float32, 7);
  Tensor target = targets({0, 4, 2});
  for (const char* op : {"nll_loss", "cross_entropy"}) {
    const OpDef& def = builtin_registry().get(op);
    for (const char* reduction : {"mean", "none"}) {
      Attrs attrs{{"reduction", std::string(reduction)}};
      EXPECT_EQ(infer_metas(def, {logits.meta_info(), target.meta_info()}, attrs)[0],
                call(def, {logits, target}, attrs)[0].meta_info());
    }
  }
  Tensor loss = cross_entropy(Tensor::meta({1 << 20, 128256}, DType::BFloat16), Tensor::meta({1 << 20}, DType::Int64));
  EXPECT_EQ(loss.meta_info(), (TensorMeta{{}, DType::BFloat16}));
  EXPECT_TRUE(loss.is_meta());
}

}  // namespace
}  // namespace px
