// layer_norm / rms_norm: against naive float64 references (with and without the
// affine part, over one or two trailing dims, on strided inputs), stability for
// rows with a large mean, VJPs, errors and meta inputs.

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

// Normalizes rows of length n (the trailing dims) naively; weight/bias may be undefined.
std::vector<double> norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t n, double eps,
                                   bool rms) {
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> w = weight.defined() ? weight.to_vector<double>() : std::vector<double>(n, 1.0);
  std::vector<double> b = bias.defined() ? bias.to_vector<double>() : std::vector<double>(n, 0.0);
  std::vector<double> out(v.size());
  for (size_t row = 0; row < v.size() / n; ++row) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += v[row * n + i] / n;
    if (rms) mean = 0;
    for (int64_t i = 0; i < n; ++i) var += (v[row * n + i] - mean) * (v[row * n + i] - mean) / n;
    for (int64_t i = 0; i < n; ++i) out[row * n + i] = (v[row * n + i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  }
  return out;
}

TEST(NnLayerNorm, MatchesReferenceWithEveryAffineCombination) {
  Tensor x = random_tensor({4, 6}, DType::Float64, 1, -2, 3);
  Tensor w = random_tensor({6}, DType::Float64, 2);
  Tensor b = random_tensor({6}, DType::Float64, 3);
  Tensor none;
  EXPECT_TRUE(all_close(layer_norm(x, w, b), norm_reference(x, w, b, 6, 1e-5, false), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(layer_norm(x), norm_reference(x, none, none, 6, 1e-5, false), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(layer_norm(x, w), norm_reference(x, w, none, 6, 1e-5, false), 1e-12, 1e-12));
  // A bias alone gets a weight of ones.
  EXPECT_TRUE(all_close(layer_norm(x, none, b, 0.1), norm_reference(x, none, b, 6, 0.1, false), 1e-12, 1e-12));
}

TEST(NnLayerNorm, TwoTrailingDimsAndStridedInputs) {
  Tensor x = non_contiguous(random_tensor({2, 3, 4}, DType::Float64, 4));
  Tensor w = non_contiguous(random_tensor({3, 4}, DType::Float64, 5));
  Tensor b = random_tensor({3, 4}, DType::Float64, 6);
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(all_close(layer_norm(x, w, b, 1e-5, 2), norm_reference(x, w, b, 12, 1e-5, false), 1e-12, 1e-12));
}

TEST(NnLayerNorm, Float32RowsWithALargeMean) {
  // A one-pass E[x^2] - E[x]^2 would cancel catastrophically here; the two-pass kernel does not.
  Tensor noise = random_tensor({3, 64}, DType::Float64, 7);
  std::vector<double> values = noise.to_vector<double>();
  for (double& value : values) value += 1e4;
  Tensor x = Tensor::from_vector(values, {3, 64}, DType::Float32);
  EXPECT_TRUE(all_close(layer_norm(x), norm_reference(x, {}, {}, 64, 1e-5, false), 1e-3, 1e-3));
}

TEST(NnLayerNorm, BFloat16) {
  Tensor x = random_tensor({5, 8}, DType::BFloat16, 8);
  Tensor w = random_tensor({8}, DType::BFloat16, 9);
  Tensor b = random_tensor({8}, DType::BFloat16, 10);
  Tensor y = layer_norm(x, w, b);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_TRUE(all_close(y, norm_reference(x, w, b, 8, 1e-5, false), 2e-2, 2e-2));
}

TEST(NnRmsNorm, MatchesReference) {
  Tensor x = random_tensor({4, 6}, DType::Float64, 11);
  Tensor w = random_tensor({6}, DType::Float64, 12);
  EXPECT_TRUE(all_close(rms_norm(x, w), norm_reference(x, w, {}, 6, 1e-6, true), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(rms_norm(x), norm_reference(x, {}, {}, 6, 1e-6, true), 1e-12, 1e-12));
  Tensor strided = non_contiguous(random_tensor({2, 3, 4}, DType::Float64, 13));
  EXPECT_TRUE(all_close(rms_norm(strided, {}, 1e-3, 2), norm_reference(strided, {}, {}, 12, 1e-3, true), 1e-12, 1e-12));
  Tensor f32 = random_tensor({3, 50}, DType::Float32, 14);
  EXPECT_TRUE(all_close(rms_norm(f32), norm_reference(f32, {}, {}, 50, 1e-6, true), 1e-5, 1e-5));
}

TEST(NnNorm, InferredMetaMatchesKernel) {
  Tensor x = random_tensor({2, 3, 4}, DType::Float32, 15);
  Tensor w = random_tensor({3, 4}, DType::Float32, 16);
  Attrs attrs{{"ndims", int64_t{2}}};
  for (const char* op : {"layer_norm", "rms_norm"}) {
    const OpDef& def = builtin_registry().get(op);
    EXPECT_EQ(infer_metas(def, {x.meta_info(), w.meta_info()}, attrs)[0], call(def, {x, w}, attrs)[0].meta_info());
  }
}

TEST(NnNorm, VjpMatchesFiniteDifferences) {
  Tensor x = random_tensor({3, 5}, DType::Float64, 17);
  Tensor w = random_tensor({5}, DType::Float64, 18);
  Tensor b = random_tensor({5}, DType::Float64, 19);
  EXPECT_TRUE(check_vjp("layer_norm", {x, w, b}));
  EXPECT_TRUE(check_vjp("layer_norm", {x, w}));
  EXPECT_TRUE(check_vjp("layer_norm", {x}));
  EXPECT_TRUE(check_vjp("rms_norm", {x, w}));
  EXPECT_TRUE(check_vjp("rms_norm", {x}));
  Tensor x3 = non_contiguous(random_tensor({2, 3, 2}, DType::Float64, 20));
  Tensor w2 = random_tensor({3, 2}, DType::Float64, 21);
  Attrs two{{"ndims", int64_t{2}}, {"eps", 1e-2}};
  EXPECT_TRUE(check_vjp("layer_norm", {x3, w2, w2}, two));
  EXPECT_TRUE(check_vjp("rms_norm", {x3, w2}, two));
}

// The backward ops in float32 and bfloat16 (statistics and sums in float32) against float64, rows
// with a large mean included; float64 itself is checked against finite differences above (the
// forward's VJP is the backward op).
TEST(NnNorm, BackwardOpsInLowerPrecisionMatchFloat64) {
  Tensor x = random_tensor({16, 96}, DType::Float64, 30, 49.0, 51.0);
  Tensor g = random_tensor({16, 96}, DType::Float64, 31);
  Tensor w = random_tensor({96}, DType::Float64, 32);
  for (const char* op : {"layer_norm_backward", "rms_norm_backward"}) {
    for (auto [dtype, tolerance] : {std::pair{DType::Float32, 2e-3}, std::pair{DType::BFloat16, 0.05}}) {
      // Against float64 on the same (rounded) inputs: what is left is the kernel's own arithmetic.
      auto rounded = [&](const Tensor& t) { return t.to(dtype).to(DType::Float64); };
      std::vector<Tensor> exact = call(op, {rounded(g), rounded(x), rounded(w)});
      ASSERT_EQ(exact.size(), 2u);
      std::vector<Tensor> low = call(op, {g.to(dtype), x.to(dtype), w.to(dtype)});
      ASSERT_EQ(low.size(), 2u);
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(low[i].dtype(), dtype);
        EXPECT_TRUE(all_close(low[i].to(DType::Float64), exact[i], tolerance, tolerance))
            << op << " " << dtype_name(dtype) << " output " << i;
      }
    }
    EXPECT_EQ(call(op, {g, x}).size(), 1u);  // no weight: dx only
    EXPECT_FALSE(builtin_registry().get(op).vjp);
  }
  const std::string message = thrown_message<ShapeError>([&] { call("layer_norm_backward", {g.narrow(0, 0, 4), x}); });
  EXPECT_TRUE(mentions(message, {"layer_norm_backward", "grad f64[4,96]", "x f64[16,96]"})) << message;
}

TEST(NnNorm, BadShapesAndDTypesRaiseNamedErrors) {
  Tensor x = Tensor::meta({4, 8});
  std::string message = thrown_message<ShapeError>([&] { layer_norm(x, Tensor::meta({7})); });
  EXPECT_TRUE(mentions(message, {"layer_norm", "weight f32[7]", "[8]", "x f32[4,8]"}));
  message = thrown_message<ShapeError>([&] { layer_norm(x, Tensor::meta({8}), Tensor::meta({4})); });
  EXPECT_TRUE(mentions(message, {"layer_norm", "bias f32[4]"}));
  message = thrown_message<ShapeError>([&] { rms_norm(x, Tensor::meta({4, 8})); });
  EXPECT_TRUE(mentions(message, {"rms_norm", "weight f32[4,8]"}));
  EXPECT_TRUE(mentions(thrown_message<ValueError>([&] { layer_norm(x, {}, {}, 1e-5, 3); }), {"layer_norm", "ndims 3"}));
  EXPECT_TRUE(mentions(thrown_message<ValueError>([&] { rms_norm(x, {}, 1e-5, 0); }), {"rms_norm", "ndims 0"}));
  EXPECT_TRUE(mentions(thrown_message<DTypeError>([&] { layer_norm(x, Tensor::meta({8}, DType::Float64)); }),
                       {"layer_norm", "f64[8]"}));
  EXPECT_TRUE(
      mentions(thrown_message<DTypeError>([&] { rms_norm(Tensor::meta({2}, DType::Int64)); }), {"rms_norm", "i64[2]"}));
}

TEST(NnNorm, MetaInputsAllocateNothing) {
  Tensor x = Tensor::meta({1 << 20, 8192, 4096}, DType::BFloat16);
  Tensor w = Tensor::meta({4096}, DType::BFloat16);
  EXPECT_TRUE(layer_norm(x, w, w).is_meta());
  EXPECT_TRUE(layer_norm(x, {}, w).is_meta());  // the ones() weight follows the bias onto meta
  EXPECT_EQ(rms_norm(x, w).meta_info(), x.meta_info());
}

}  // namespace
}  // namespace px
