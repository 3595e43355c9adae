// softmax / log_softmax: against a naive float64 reference along every dim, on
// contiguous, non-contiguous and low-precision inputs; stability; VJPs; errors; meta.

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
using testing::random_tensor;
using testing::softmax_reference;
using testing::thrown_message;

TEST(NnSoftmax, MatchesReferenceAlongEveryDim) {
  Tensor x = random_tensor({3, 4, 5}, DType::Float64, 1, -3, 3);
  for (int64_t dim = 0; dim < 3; ++dim) {
    EXPECT_TRUE(all_close(softmax(x, dim), softmax_reference(x, dim, false), 1e-12, 1e-14)) << "dim " << dim;
    EXPECT_TRUE(all_close(log_softmax(x, dim), softmax_reference(x, dim, true), 1e-12, 1e-12)) << "dim " << dim;
  }
  EXPECT_TRUE(all_close(softmax(x, -1), softmax_reference(x, 2, false), 1e-12, 1e-14));
}

TEST(NnSoftmax, NonContiguousInput) {
  Tensor x = testing::non_contiguous(random_tensor({6, 7}, DType::Float64, 2, -2, 2));
  ASSERT_FALSE(x.is_contiguous());
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(all_close(softmax(x, dim), softmax_reference(x, dim, false), 1e-12, 1e-14));
    EXPECT_TRUE(all_close(log_softmax(x, dim), softmax_reference(x, dim, true), 1e-12, 1e-12));
  }
}

TEST(NnSoftmax, RowsLongerThanOneVectorBlock) {
  Tensor x = random_tensor({3, 37}, DType::Float32, 3, -5, 5);  // 37: vector blocks plus a tail
  EXPECT_TRUE(all_close(softmax(x, 1), softmax_reference(x, 1, false), 1e-5, 1e-7));
  EXPECT_TRUE(all_close(log_softmax(x, 1), softmax_reference(x, 1, true), 1e-5, 1e-5));
}

TEST(NnSoftmax, Float32AndBFloat16ComputeInFloat32) {
  Tensor x = random_tensor({4, 9, 3}, DType::Float32, 4, -4, 4);
  EXPECT_TRUE(all_close(softmax(x, 1), softmax_reference(x, 1, false), 1e-5, 1e-7));
  Tensor b = x.to(DType::BFloat16);
  Tensor y = softmax(b, 1);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_TRUE(all_close(y, softmax_reference(b, 1, false), 1e-2, 1e-3));
  EXPECT_TRUE(all_close(log_softmax(b, -1), softmax_reference(b, 2, true), 1e-2, 2e-2));
}

TEST(NnSoftmax, HugeLogitsStayFinite) {
  Tensor x = Tensor::from_vector({1000, 1001, 1002, -1000, 0, 1000}, {2, 3}, DType::Float32);
  EXPECT_TRUE(all_close(softmax(x, 1), softmax_reference(x, 1, false), 1e-5, 1e-7));
  EXPECT_TRUE(all_close(log_softmax(x, 1), softmax_reference(x, 1, true), 1e-5, 1e-4));
}

TEST(NnSoftmax, MinusInfinityGetsZeroProbability) {
  Tensor x = Tensor::from_vector({0, -INFINITY, 1}, {3}, DType::Float64);
  std::vector<double> p = softmax(x).to_vector<double>();
  EXPECT_EQ(p[1], 0.0);
  EXPECT_NEAR(p[0] + p[2], 1.0, 1e-15);
  EXPECT_EQ(log_softmax(x).to_vector<double>()[1], -INFINITY);
}

TEST(NnSoftmax, ScalarInput) {
  EXPECT_EQ(softmax(Tensor::scalar(3.5, DType::Float64), 0).item<double>(), 1.0);
  EXPECT_EQ(log_softmax(Tensor::scalar(3.5, DType::Float64), -1).item<double>(), 0.0);
}

TEST(NnSoftmax, InferredMetaMatchesKernel) {
  Tensor x = random_tensor({2, 3, 4}, DType::Float32, 5);
  for (const char* op : {"softmax", "log_softmax"}) {
    const OpDef& def = builtin_registry().get(op);
    Attrs attrs{{"dim", int64_t{1}}};
    EXPECT_EQ(infer_metas(def, {x.meta_info()}, attrs)[0], call(def, {x}, attrs)[0].meta_info());
  }
}

TEST(NnSoftmax, VjpMatchesFiniteDifferences) {
  Tensor x = random_tensor({3, 4, 2}, DType::Float64, 6);
  for (int64_t dim : {0, 1, -1}) {
    EXPECT_TRUE(check_vjp("softmax", {x}, {{"dim", dim}}));
    EXPECT_TRUE(check_vjp("log_softmax", {x}, {{"dim", dim}}));
  }
  EXPECT_TRUE(check_vjp("softmax", {testing::non_contiguous(x)}, {{"dim", int64_t{1}}}));
}

TEST(NnSoftmax, BadDimAndDTypeRaiseNamedErrors) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  std::string message = thrown_message<ValueError>([&] { softmax(x, 2); });
  EXPECT_TRUE(mentions(message, {"softmax", "f32[2,3]", "dim 2"}));
  Tensor ints = Tensor::from_vector({1, 2}, {2}, DType::Int64);
  EXPECT_TRUE(mentions(thrown_message<DTypeError>([&] { log_softmax(ints); }), {"log_softmax", "i64[2]"}));
}

TEST(NnSoftmax, MetaInputsAllocateNothing) {
  Tensor x = Tensor::meta({1 << 20, 1 << 16}, DType::BFloat16);
  Tensor y = softmax(x, 0);
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.meta_info(), x.meta_info());
}

}  // namespace
}  // namespace px
