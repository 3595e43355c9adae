// softmax / log_softmax: against a naive float64 reference along every dim, on
// contiguous, non-contiguous and low-precision inputs; stability; VJPs; errors; meta.
// Their backward ops (softmax_backward, log_softmax_backward): float32 and bfloat16 against
// float64, row ranges of the kernels, errors.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "ops/nn_test_helpers.h"
#include "parallax/kernels/softmax.h"
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

// The backward ops in float32 and bfloat16 (row sums in float32) against float64 on the same
// (rounded) inputs, down a middle dim (columns, 41 of them: vectors plus a tail) and along the last
// dim (rows of 41); float64 itself is checked against finite differences above (the forward's VJP
// is the backward op).
TEST(NnSoftmax, BackwardOpsInLowerPrecisionMatchFloat64) {
  Tensor x = random_tensor({3, 37, 41}, DType::Float64, 20, -4, 4);
  Tensor g = random_tensor({3, 37, 41}, DType::Float64, 21);
  for (int64_t dim : {1, -1}) {
    for (bool log : {false, true}) {
      const std::string op = log ? "log_softmax_backward" : "softmax_backward";
      const Attrs attrs{{"dim", dim}};
      Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
      for (auto [dtype, tolerance] : {std::pair{DType::Float32, 1e-5}, std::pair{DType::BFloat16, 1e-2}}) {
        auto rounded = [&](const Tensor& t) { return t.to(dtype).to(DType::Float64); };
        Tensor exact = call1(op, {rounded(g), rounded(y)}, attrs);
        Tensor low = call1(op, {g.to(dtype), y.to(dtype)}, attrs);
        EXPECT_EQ(low.dtype(), dtype);
        EXPECT_TRUE(all_close(low.to(DType::Float64), exact, tolerance, tolerance * 0.1))
            << op << " " << dtype_name(dtype) << " dim " << dim;
      }
    }
  }
  for (const char* op : {"softmax_backward", "log_softmax_backward"}) {
    EXPECT_FALSE(builtin_registry().get(op).vjp) << op;  // no second derivatives
  }
}

// The kernels' rows are independent: any split of [0, outer * inner) into ranges, inside an outer
// slice's columns too, gives the whole call's bits, and writes only its own rows.
TEST(NnSoftmax, BackwardKernelRowRangesGiveTheWholeResult) {
  const int64_t outer = 3, n = 19;
  for (int64_t inner : {1, 7}) {
    const int64_t count = outer * n * inner, rows = outer * inner;
    std::vector<float> g = random_tensor({count}, DType::Float32, 22).to_vector<float>();
    std::vector<float> y = softmax(random_tensor({count}, DType::Float32, 23, -3, 3)).to_vector<float>();
    for (bool log : {false, true}) {
      auto whole_fn = log ? kernels::log_softmax_backward<float> : kernels::softmax_backward<float>;
      auto rows_fn = log ? kernels::log_softmax_backward_rows<float> : kernels::softmax_backward_rows<float>;
      std::vector<float> whole(count), split(count, std::numeric_limits<float>::quiet_NaN());
      whole_fn(g.data(), y.data(), whole.data(), outer, n, inner);
      const int64_t cuts[] = {0, 1, rows / 2 + 1, rows - 1, rows};
      for (size_t c = 0; c + 1 < std::size(cuts); ++c) {
        rows_fn(g.data(), y.data(), split.data(), outer, n, inner, cuts[c], cuts[c + 1]);
      }
      EXPECT_EQ(std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)), 0)
          << "inner " << inner << " log " << log;
      // A range leaves the other rows alone.
      std::vector<float> one(count, -7.0f);
      rows_fn(g.data(), y.data(), one.data(), outer, n, inner, 1, 2);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t row = (i / (n * inner)) * inner + i % inner;
        if (row == 1) {
          EXPECT_EQ(one[i], whole[i]) << i;
        } else {
          EXPECT_EQ(one[i], -7.0f) << i;
        }
      }
    }
  }
}

TEST(NnSoftmax, BackwardOpsRaiseNamedErrors) {
  Tensor y = Tensor::meta({4, 6}, DType::Float32);
  std::string message = thrown_message<ShapeError>([&] {
    call("softmax_backward", {Tensor::meta({4, 5}, DType::Float32), y});
  });
  EXPECT_TRUE(mentions(message, {"softmax_backward", "grad f32[4,5]", "y f32[4,6]"})) << message;
  message = thrown_message<DTypeError>([&] {
    call("log_softmax_backward", {Tensor::meta({4, 6}, DType::Float64), y}, {{"dim", int64_t{0}}});
  });
  EXPECT_TRUE(mentions(message, {"log_softmax_backward", "f64[4,6]", "f32[4,6]"})) << message;
  message = thrown_message<ValueError>([&] { call("softmax_backward", {y, y}, {{"dim", int64_t{2}}}); });
  EXPECT_TRUE(mentions(message, {"softmax_backward", "f32[4,6]", "dim 2"})) << message;
  // Meta inputs take the inference alone, bfloat16 included.
  Tensor big = Tensor::meta({1 << 20, 1 << 16}, DType::BFloat16);
  EXPECT_EQ(call1("log_softmax_backward", {big, big}, {{"dim", int64_t{0}}}).meta_info(), big.meta_info());
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
