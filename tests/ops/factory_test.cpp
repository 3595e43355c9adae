// full / zeros / ones / arange and the counter-based random factories.

#include "parallax/ops/factory.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops/shape_testing.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/shape.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::all_close;
using testing::expect_error;

TEST(FullOp, FillsEveryDtype) {
  for (DType dtype : kAllDTypes) {
    Tensor t = full({2, 3}, 2.5, dtype);
    EXPECT_EQ(t.meta_info(), (TensorMeta{{2, 3}, dtype}));
    double want = dtype == DType::Int64 ? 2.0 : dtype == DType::Bool ? 1.0 : 2.5;
    EXPECT_TRUE(all_close(t, std::vector<double>(6, want))) << dtype_name(dtype);
  }
  EXPECT_TRUE(all_close(zeros({4}), std::vector<double>(4, 0.0)));
  EXPECT_TRUE(all_close(ones({2, 2}, DType::BFloat16), std::vector<double>(4, 1.0)));
  EXPECT_EQ(full({}, 7.0).item<float>(), 7.0f);
  EXPECT_EQ(zeros({0, 5}).numel(), 0);
  expect_error<ShapeError>([] { zeros({2, -1}); }, {"full:", "negative", "[2,-1]"});
}

TEST(FullOp, LikeVariantsFollowTheirArgument) {
  Tensor x = Tensor::from_vector({1, 2, 3}, {3}, DType::Float64);
  Tensor z = zeros_like(x);
  EXPECT_EQ(z.meta_info(), x.meta_info());
  EXPECT_TRUE(all_close(ones_like(x), {1, 1, 1}));
  EXPECT_TRUE(all_close(full_like(x, -1), {-1, -1, -1}));
  Tensor huge = Tensor::meta({70'000'000'000}, DType::BFloat16);
  EXPECT_TRUE(zeros_like(huge).is_meta());
}

TEST(FullOp, MetaCostsNothing) {
  Tensor t = zeros({70'000'000'000}, DType::Float32, /*meta=*/true);
  EXPECT_TRUE(t.is_meta());
  EXPECT_EQ(t.storage(), nullptr);
  OpCost cost = builtin_registry().get("full").cost({}, {t.meta_info()}, {});
  EXPECT_EQ(cost.bytes_written, 280e9);
  EXPECT_EQ(cost.bytes_read, 0);
}

TEST(ArangeOp, MatchesANaiveLoop) {
  struct Case {
    double start, end, step;
    DType dtype;
  };
  for (Case c : {Case{0, 5, 1, DType::Int64}, Case{1, 2, 0.25, DType::Float64}, Case{5, 0, -2, DType::Float32},
                 Case{0, 1, 0.3, DType::Float64}, Case{3, 3, 1, DType::Int64}, Case{-1, 1, 0.5, DType::BFloat16}}) {
    std::vector<double> want;
    for (double v = c.start; c.step > 0 ? v < c.end - 1e-12 : v > c.end + 1e-12; v += c.step) want.push_back(v);
    Tensor t = arange(c.start, c.end, c.step, c.dtype);
    EXPECT_EQ(t.dtype(), c.dtype);
    EXPECT_TRUE(all_close(t, want, 1e-12, 1e-12)) << c.start << ":" << c.end << ":" << c.step;
  }
  EXPECT_EQ(arange(4).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  expect_error<ValueError>([] { arange(0, 5, 0); }, {"arange:", "non-zero step"});
  expect_error<ValueError>([] { arange(0, 5, -1); }, {"arange:", "sign"});
  expect_error<ValueError>([] { arange(0, INFINITY); }, {"arange:", "finite"});
  expect_error<DTypeError>([] { arange(0, 5, 1, DType::Bool); }, {"arange:", "bool"});
}

TEST(RandomOps, AreDeterministicPerSeedAndAdvanceTheGenerator) {
  Generator a(42), b(42), c(43);
  Tensor x = rand({4, 5}, a, DType::Float64);
  EXPECT_EQ(a.offset(), 20u);
  EXPECT_TRUE(all_close(rand({4, 5}, b, DType::Float64), x, 0, 0));
  EXPECT_FALSE(all_close(rand({4, 5}, c, DType::Float64), x, 0, 0));
  EXPECT_FALSE(all_close(rand({4, 5}, a, DType::Float64), x, 0, 0)) << "the second draw continues the stream";
  // Element i is philox_uniform(seed, offset, i), checked against the core Philox function directly.
  std::vector<double> want;
  for (uint64_t i = 0; i < 20; ++i) want.push_back(philox_uniform(42, 0, i));
  EXPECT_TRUE(all_close(x, want, 0, 0));
}

TEST(RandomOps, AnySliceCanBeDrawnAlone) {
  // The element at index i of a draw at offset o equals element i + k of a draw at offset o - k:
  // a shard of a parameter draws exactly its part of the full tensor.
  Tensor whole = call1("normal", {}, {{"shape", Shape{6, 4}}, {"seed", int64_t{9}}, {"dtype", DType::Float64}});
  Tensor rows = call1(
      "normal", {}, {{"shape", Shape{2, 4}}, {"seed", int64_t{9}}, {"offset", int64_t{12}}, {"dtype", DType::Float64}});
  EXPECT_TRUE(all_close(rows, whole.narrow(0, 3, 2), 0, 0));
  Tensor u = call1("uniform", {}, {{"shape", Shape{8}}, {"seed", int64_t{1}}, {"low", -2.0}, {"high", 3.0}});
  Tensor tail = call1(
      "uniform", {}, {{"shape", Shape{3}}, {"seed", int64_t{1}}, {"offset", int64_t{5}}, {"low", -2.0}, {"high", 3.0}});
  EXPECT_TRUE(all_close(tail, u.slice(0, 5, 8), 0, 0));
}

TEST(RandomOps, HaveTheRightMoments) {
  Generator gen(7);
  constexpr int64_t kCount = 200'000;
  auto moments = [](const Tensor& t) {
    std::vector<double> v = t.to_vector<double>();
    double mean = 0, var = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    for (double x : v) var += (x - mean) * (x - mean);
    return std::pair{mean, var / static_cast<double>(v.size())};
  };
  auto [umean, uvar] = moments(uniform({kCount}, -1.0, 3.0, gen, DType::Float64));
  EXPECT_NEAR(umean, 1.0, 0.02);
  EXPECT_NEAR(uvar, 16.0 / 12.0, 0.02);
  auto [nmean, nvar] = moments(normal({kCount}, 2.0, 0.5, gen, DType::Float32));
  EXPECT_NEAR(nmean, 2.0, 0.01);
  EXPECT_NEAR(nvar, 0.25, 0.005);
  std::vector<double> u = rand({kCount}, gen).to_vector<double>();
  EXPECT_TRUE(std::all_of(u.begin(), u.end(), [](double x) { return x >= 0 && x <= 1; }));
}

TEST(RandomOps, RejectBadArguments) {
  Generator gen(1);
  expect_error<DTypeError>([&] { rand({2}, gen, DType::Int64); }, {"uniform:", "i64", "not floating"});
  expect_error<DTypeError>([&] { randn({2}, gen, DType::Bool); }, {"normal:", "bool"});
  expect_error<ValueError>([&] { uniform({2}, 1.0, 0.0, gen); }, {"uniform:", "low 1.0", "high 0.0"});
  expect_error<ValueError>([&] { normal({2}, 0.0, -1.0, gen); }, {"normal:", "std must be >= 0"});
  expect_error<ShapeError>([&] { randn({-3}, gen); }, {"normal:", "negative"});
  expect_error<ValueError>([] { call1("uniform", {}, {{"shape", Shape{2}}}); }, {"uniform:", "seed"});
}

TEST(RandomOps, MetaDrawsAllocateNothingButStillAdvance) {
  Generator gen(3);
  Tensor t = randn({70'000, 1'000'000}, gen, DType::BFloat16, /*meta=*/true);
  EXPECT_TRUE(t.is_meta());
  EXPECT_EQ(t.dtype(), DType::BFloat16);
  EXPECT_EQ(gen.offset(), 70'000'000'000u);
  EXPECT_FALSE(builtin_registry().get("normal").vjp);
}

}  // namespace
}  // namespace px
