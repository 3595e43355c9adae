// rope and dropout: kernels against naive references (rope angles, Philox masks),
// inverse/VJP round trips, strided inputs, errors and meta inputs.

#include <gtest/gtest.h>

#include <cmath>

#include "ops/nn_test_helpers.h"
#include "parallax/core/generator.h"
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

std::vector<double> rope_reference(const Tensor& x, double theta, bool inverse) {
  std::vector<double> v = x.to_vector<double>();
  int64_t seq = x.size(-2), dim = x.size(-1);
  std::vector<double> out(v.size());
  for (size_t base = 0; base < v.size(); base += dim) {
    int64_t t = static_cast<int64_t>(base / dim) % seq;
    for (int64_t i = 0; i < dim / 2; ++i) {
      double angle = (inverse ? -1.0 : 1.0) * t * std::pow(theta, -2.0 * i / dim);
      double a = v[base + 2 * i], b = v[base + 2 * i + 1];
      out[base + 2 * i] = a * std::cos(angle) - b * std::sin(angle);
      out[base + 2 * i + 1] = a * std::sin(angle) + b * std::cos(angle);
    }
  }
  return out;
}

TEST(NnRope, MatchesReference) {
  Tensor x = random_tensor({2, 3, 5, 8}, DType::Float64, 1);
  EXPECT_TRUE(all_close(rope(x), rope_reference(x, 10000, false), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(rope(x, 50.0, true), rope_reference(x, 50, true), 1e-12, 1e-12));
  Tensor strided = non_contiguous(random_tensor({4, 6}, DType::Float64, 2));
  ASSERT_FALSE(strided.is_contiguous());
  EXPECT_TRUE(all_close(rope(strided, 100.0), rope_reference(strided, 100, false), 1e-12, 1e-12));
  Tensor f32 = random_tensor({7, 16}, DType::Float32, 3);
  EXPECT_TRUE(all_close(rope(f32), rope_reference(f32, 10000, false), 1e-5, 1e-6));
  Tensor bf16 = random_tensor({3, 4}, DType::BFloat16, 4);
  EXPECT_TRUE(all_close(rope(bf16), rope_reference(bf16, 10000, false), 1e-2, 1e-2));
}

TEST(NnRope, PositionZeroIsIdentityAndInverseUndoes) {
  Tensor x = random_tensor({3, 6, 4}, DType::Float64, 5);
  Tensor y = rope(x, 10000.0);
  EXPECT_TRUE(all_close(y.select(1, 0), x.select(1, 0)));
  EXPECT_TRUE(all_close(rope(y, 10000.0, true), x, 1e-12, 1e-12));
}

TEST(NnRope, VjpMatchesFiniteDifferences) {
  EXPECT_TRUE(check_vjp("rope", {random_tensor({2, 4, 6}, DType::Float64, 6)}));
  EXPECT_TRUE(check_vjp("rope", {random_tensor({3, 2}, DType::Float64, 7)}, {{"theta", 3.0}, {"inverse", true}}));
}

TEST(NnRope, BadInputsRaiseNamedErrors) {
  EXPECT_TRUE(mentions(thrown_message<ShapeError>([] { rope(Tensor::meta({2, 4, 7})); }), {"rope", "x f32[2,4,7]"}));
  EXPECT_TRUE(mentions(thrown_message<ShapeError>([] { rope(Tensor::meta({8})); }), {"rope", "x f32[8]"}));
  EXPECT_TRUE(mentions(thrown_message<ValueError>([] { rope(Tensor::meta({2, 4}), 0.0); }), {"rope", "theta"}));
  EXPECT_TRUE(mentions(thrown_message<DTypeError>([] { rope(Tensor::meta({2, 4}, DType::Int64)); }), {"rope", "i64"}));
}

TEST(NnRope, MetaAndInference) {
  Tensor big = Tensor::meta({64, 32, 8192, 128}, DType::BFloat16);
  EXPECT_TRUE(rope(big).is_meta());
  Tensor x = random_tensor({2, 3, 4}, DType::Float32, 8);
  EXPECT_EQ(infer_metas(builtin_registry().get("rope"), {x.meta_info()}, {})[0], rope(x).meta_info());
}

std::vector<double> dropout_reference(const Tensor& x, double p, uint64_t seed, uint64_t offset) {
  std::vector<double> v = x.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = philox_uniform(seed, offset, i) >= p ? v[i] / (1 - p) : 0.0;
  return v;
}

TEST(NnDropout, MaskComesFromPhiloxAtTheLogicalIndex) {
  Tensor x = random_tensor({8, 9}, DType::Float64, 9);
  EXPECT_TRUE(all_close(dropout(x, 0.3, 42, 100), dropout_reference(x, 0.3, 42, 100), 1e-15, 0));
  Tensor strided = non_contiguous(x);
  EXPECT_TRUE(all_close(dropout(strided, 0.3, 42, 100), dropout(x, 0.3, 42, 100)));
  Tensor f32 = random_tensor({100}, DType::Float32, 10);
  EXPECT_TRUE(all_close(dropout(f32, 0.5, 1, 0), dropout_reference(f32, 0.5, 1, 0), 1e-6, 0));
}

TEST(NnDropout, KeepsAboutOneMinusPAndEdgeProbabilities) {
  Tensor ones = Tensor::from_vector(std::vector<double>(20000, 1.0), {20000}, DType::Float32);
  std::vector<double> y = dropout(ones, 0.25, 7, 0).to_vector<double>();
  int64_t kept = 0;
  for (double value : y) {
    if (value != 0) {
      ++kept;
      EXPECT_NEAR(value, 1.0 / 0.75, 1e-6);
    }
  }
  EXPECT_NEAR(static_cast<double>(kept) / 20000.0, 0.75, 0.02);
  EXPECT_TRUE(all_close(dropout(ones, 0.0, 7, 0), ones));
  EXPECT_TRUE(all_close(dropout(ones, 1.0, 7, 0), std::vector<double>(20000, 0.0)));
}

TEST(NnDropout, GeneratorAdvancesSoDrawsDiffer) {
  Tensor x = Tensor::from_vector(std::vector<double>(64, 1.0), {8, 8}, DType::Float64);
  Generator gen(123);
  Tensor first = dropout(x, 0.5, gen);
  EXPECT_EQ(gen.offset(), 64u);
  Tensor second = dropout(x, 0.5, gen);
  EXPECT_EQ(gen.offset(), 128u);
  EXPECT_FALSE(all_close(first, second));
  EXPECT_TRUE(all_close(second, dropout_reference(x, 0.5, 123, 64)));
}

TEST(NnDropout, VjpReusesTheMask) {
  Tensor x = random_tensor({4, 5}, DType::Float64, 11);
  Attrs attrs{{"p", 0.4}, {"seed", int64_t{3}}, {"offset", int64_t{9}}};
  EXPECT_TRUE(check_vjp("dropout", {x}, attrs));
}

TEST(NnDropout, BadProbabilityAndDType) {
  EXPECT_TRUE(mentions(thrown_message<ValueError>([] { dropout(Tensor::meta({3}), 1.5, 0, 0); }), {"dropout", "1.5"}));
  EXPECT_TRUE(mentions(thrown_message<ValueError>([] { dropout(Tensor::meta({3}), -0.1, 0, 0); }), {"dropout", "p"}));
  EXPECT_TRUE(mentions(thrown_message<DTypeError>([] { dropout(Tensor::meta({3}, DType::Int64), 0.1, 0, 0); }),
                       {"dropout", "i64[3]"}));
  EXPECT_TRUE(dropout(Tensor::meta({1LL << 36}, DType::BFloat16), 0.1, 0, 0).is_meta());
}

}  // namespace
}  // namespace px
