// eq, ne, lt, le, gt, ge and where: values against references written here on
// every dtype and layout, errors, meta, VJPs; and the C++ operators.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

#include "ops/elementwise_testing.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "support/test_util.h"

namespace px {
namespace {

using namespace elementwise_testing;
using testing::all_close;
using testing::check_vjp;
using testing::non_contiguous;

struct CompareCase {
  std::string op;
  std::function<bool(double, double)> reference;
};

std::vector<CompareCase> compare_cases() {
  return {
      {"eq", [](double a, double b) { return a == b; }}, {"ne", [](double a, double b) { return a != b; }},
      {"lt", [](double a, double b) { return a < b; }},  {"le", [](double a, double b) { return a <= b; }},
      {"gt", [](double a, double b) { return a > b; }},  {"ge", [](double a, double b) { return a >= b; }},
  };
}

// Small integers stored in `dtype`, so that equal values are common.
Tensor small_values(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor ints = testing::random_ints(shape, 0, 3, seed);
  std::vector<double> values = ints.to_vector<double>();
  if (dtype == DType::Bool) {
    for (double& v : values) v = v > 1 ? 1 : 0;
  }
  return Tensor::from_vector(values, shape, dtype);
}

TEST(ElementwiseCompare, MatchesReferenceForEveryDTypeAndLayout) {
  for (const CompareCase& c : compare_cases()) {
    for (DType dtype : kAllDTypes) {
      auto make = [&](const Shape& shape, uint64_t seed) { return small_values(shape, dtype, seed); };
      std::vector<std::pair<Tensor, Tensor>> pairs{
          {make({4, 5}, 1), make({4, 5}, 2)},
          {make({1001}, 3), make({1001}, 4)},
          {non_contiguous(make({5, 4}, 5)), make({5, 4}, 6)},
          {make({3, 1, 5}, 7), non_contiguous(make({4, 5}, 8))},
          {make({}, 9), make({2, 3}, 10)},
      };
      int index = 0;
      for (const auto& [a, b] : pairs) {
        SCOPED_TRACE(c.op + " " + std::string(dtype_name(dtype)) + " layout " + std::to_string(index++));
        Tensor out = call1(c.op, {a, b});
        EXPECT_EQ(out.dtype(), DType::Bool);
        EXPECT_EQ(out.shape(), reference_broadcast({a.shape(), b.shape()}));
        EXPECT_TRUE(
            all_close(out, reference_map({a, b}, [&](const auto& v) { return c.reference(v[0], v[1]) ? 1.0 : 0.0; })));
      }
    }
  }
}

TEST(ElementwiseCompare, NaNComparesUnequal) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = Tensor::from_vector({nan, 1}, {2}, DType::Float32);
  Tensor b = Tensor::from_vector({nan, nan}, {2}, DType::Float32);
  EXPECT_TRUE(all_close(eq(a, b), {0, 0}));
  EXPECT_TRUE(all_close(ne(a, b), {1, 1}));
  EXPECT_TRUE(all_close(le(a, b), {0, 0}));
}

TEST(ElementwiseCompare, ErrorsMetaAndNoVjp) {
  std::string message = error_message<DTypeError>([] { lt(Tensor::empty({2}), Tensor::empty({2}, DType::Int64)); });
  EXPECT_TRUE(contains_all(message, {"lt", "f32[2]", "i64[2]"}));
  message = error_message<ShapeError>([] { ge(Tensor::empty({2, 3}), Tensor::empty({2})); });
  EXPECT_TRUE(contains_all(message, {"ge", "[2,3]", "[2]"}));
  for (const CompareCase& c : compare_cases()) {
    const OpDef& op = builtin_registry().get(c.op);
    EXPECT_FALSE(op.vjp) << c.op;
    EXPECT_THROW(vjp_of(op), UnsupportedOp);
    Tensor out =
        call1(c.op, {Tensor::meta({70000, 1, 1000000}, DType::BFloat16), Tensor::meta({3, 1}, DType::BFloat16)});
    EXPECT_TRUE(out.is_meta());
    EXPECT_EQ(out.meta_info(), (TensorMeta{{70000, 3, 1000000}, DType::Bool}));
  }
}

TEST(ElementwiseWhere, MatchesReferenceForEveryDTypeAndBroadcast) {
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    auto values = [&](const Shape& shape, uint64_t seed) { return small_values(shape, dtype, seed); };
    std::vector<std::array<Tensor, 3>> cases{
        {small_values({4, 5}, DType::Bool, 1), values({4, 5}, 2), values({4, 5}, 3)},
        {small_values({1003}, DType::Bool, 4), values({1003}, 5), values({1003}, 6)},
        {small_values({3, 1}, DType::Bool, 7), values({2, 1, 4}, 8), non_contiguous(values({3, 4}, 9))},
        {non_contiguous(small_values({4, 3}, DType::Bool, 10)), values({}, 11), values({3}, 12)},
    };
    for (const auto& [cond, a, b] : cases) {
      Tensor out = where(cond, a, b);
      EXPECT_EQ(out.shape(), reference_broadcast({cond.shape(), a.shape(), b.shape()}));
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_TRUE(all_close(out, reference_map({cond, a, b}, [](const auto& v) { return v[0] != 0 ? v[1] : v[2]; })));
    }
  }
}

TEST(ElementwiseWhere, ErrorsNameTheOffendingInputs) {
  std::string message =
      error_message<DTypeError>([] { where(Tensor::empty({2}), Tensor::empty({2}), Tensor::empty({2})); });
  EXPECT_TRUE(contains_all(message, {"where", "cond", "f32[2]"}));
  message = error_message<DTypeError>(
      [] { where(Tensor::empty({2}, DType::Bool), Tensor::empty({2}), Tensor::empty({2}, DType::Float64)); });
  EXPECT_TRUE(contains_all(message, {"where", "f32[2]", "f64[2]"}));
  message = error_message<ShapeError>([] {
    where(Tensor::empty({2, 1}, DType::Bool), Tensor::empty({3}), Tensor::empty({4}));
  });
  EXPECT_TRUE(contains_all(message, {"where", "bool[2,1]", "f32[3]", "f32[4]"}));
  EXPECT_THROW(where(Tensor::meta({2, 1}, DType::Bool), Tensor::meta({3}), Tensor::meta({4})), ShapeError);
}

TEST(ElementwiseWhere, VjpRoutesTheGradientByCondition) {
  Tensor cond = Tensor::from_vector({1, 0, 1, 0, 0, 1}, {2, 3}, DType::Bool);
  Tensor a = testing::random_tensor({2, 3}, DType::Float64, 1);
  Tensor b = testing::random_tensor({3}, DType::Float64, 2);
  EXPECT_TRUE(check_vjp("where", {cond, a, b}));
  EXPECT_TRUE(check_vjp("where", {cond, non_contiguous(testing::random_tensor({2, 3}, DType::Float64, 3)),
                                  testing::random_tensor({2, 1}, DType::Float64, 4)}));
  const OpDef& op = builtin_registry().get("where");
  std::vector<Tensor> inputs{cond, a, b};
  std::vector<Tensor> outputs = call(op, inputs);
  std::vector<Tensor> grads{Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64)};
  Attrs attrs;
  std::vector<Tensor> result = vjp_of(op)(VjpContext{inputs, outputs, grads, attrs});
  ASSERT_EQ(result.size(), 3u);
  EXPECT_FALSE(result[0].defined());
  EXPECT_TRUE(all_close(result[1], {1, 0, 3, 0, 0, 6}));
  EXPECT_TRUE(all_close(result[2], {4, 2 + 5, 0}));
}

TEST(ElementwiseOperators, CallTheMatchingOps) {
  Tensor a = Tensor::from_vector({1, 2, 3}, {3}, DType::Float64);
  Tensor b = Tensor::from_vector({4, 5, 6}, {3}, DType::Float64);
  EXPECT_TRUE(all_close(a + b, {5, 7, 9}));
  EXPECT_TRUE(all_close(a - b, {-3, -3, -3}));
  EXPECT_TRUE(all_close(a * b, {4, 10, 18}));
  EXPECT_TRUE(all_close(b / a, {4, 2.5, 2}));
  EXPECT_TRUE(all_close(a + 1.0, {2, 3, 4}));
  EXPECT_TRUE(all_close(1.0 + a, {2, 3, 4}));
  EXPECT_TRUE(all_close(a - 1.0, {0, 1, 2}));
  EXPECT_TRUE(all_close(1.0 - a, {0, -1, -2}));
  EXPECT_TRUE(all_close(a * 2.0, {2, 4, 6}));
  EXPECT_TRUE(all_close(2.0 * a, {2, 4, 6}));
  EXPECT_TRUE(all_close(a / 2.0, {0.5, 1, 1.5}));
  EXPECT_TRUE(all_close(6.0 / a, {6, 3, 2}));
  EXPECT_TRUE(all_close(-a, {-1, -2, -3}));
  EXPECT_TRUE(all_close(pow(a, 2.0), {1, 4, 9}));
  EXPECT_TRUE(all_close(px::sqrt(b * b), {4, 5, 6}));
  EXPECT_TRUE(all_close(maximum(a, b - 3.0), {1, 2, 3}));
  EXPECT_TRUE(all_close(minimum(a, b - 3.0), {1, 2, 3}));
  EXPECT_TRUE(all_close(where(gt(a, b - 3.5), a, b), {1, 2, 3}));
}

}  // namespace
}  // namespace px
