// The one-input elementwise ops (unary maps, gelu, tensor-scalar ops, pow):
// values against float64 references written here, in every dtype and layout,
// special values, inference, meta, errors and VJPs.

#include <gtest/gtest.h>

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

double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double ref_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double ref_gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

struct UnaryCase {
  std::string op;
  std::function<double(double)> reference;
  double low, high;  // input range
  bool integer_ok = false;
  Attrs attrs = {};
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](double x) { return -x; }, -3, 3, true},
      {"abs", [](double x) { return std::abs(x); }, -3, 3, true},
      {"relu", [](double x) { return x > 0 ? x : 0.0; }, -3, 3, true},
      {"exp", [](double x) { return std::exp(x); }, -10, 10},
      {"log", [](double x) { return std::log(x); }, 0.01, 100},
      {"sqrt", [](double x) { return std::sqrt(x); }, 0, 100},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.01, 100},
      {"tanh", [](double x) { return std::tanh(x); }, -6, 6},
      {"sigmoid", ref_sigmoid, -20, 20},
      {"silu", [](double x) { return x * ref_sigmoid(x); }, -10, 10},
      {"gelu", ref_gelu, -5, 5},
      {"gelu", ref_gelu_tanh, -5, 5, false, {{"approximate", std::string("tanh")}}},
      {"add_scalar", [](double x) { return x + 2.5; }, -3, 3, false, {{"scalar", 2.5}}},
      {"sub_scalar", [](double x) { return x - 2.5; }, -3, 3, false, {{"scalar", 2.5}}},
      {"rsub_scalar", [](double x) { return 2.5 - x; }, -3, 3, false, {{"scalar", 2.5}}},
      {"mul_scalar", [](double x) { return x * -1.5; }, -3, 3, false, {{"scalar", -1.5}}},
      {"div_scalar", [](double x) { return x / 4.0; }, -3, 3, false, {{"scalar", 4.0}}},
      {"rdiv_scalar", [](double x) { return 3.0 / x; }, 0.1, 3, false, {{"scalar", 3.0}}},
      {"pow", [](double x) { return std::pow(x, 2.0); }, -3, 3, false, {{"exponent", 2.0}}},
      {"pow", [](double x) { return std::sqrt(x); }, 0, 3, false, {{"exponent", 0.5}}},
      {"pow", [](double x) { return 1 / x; }, 0.1, 3, false, {{"exponent", -1.0}}},
      {"pow", [](double x) { return x; }, -3, 3, false, {{"exponent", 1.0}}},
      {"pow", [](double x) { return std::pow(x, 1.7); }, 0.1, 3, false, {{"exponent", 1.7}}},
      {"pow", [](double x) { return std::pow(x, 3.0); }, -3, 3, false, {{"exponent", 3.0}}},
  };
}

std::string label(const UnaryCase& c) { return c.op + c.attrs.str(); }

std::vector<Tensor> layouts(DType dtype, const UnaryCase& c, uint64_t seed) {
  auto make = [&](const Shape& shape, uint64_t s) { return random_of(shape, dtype, s, c.low, c.high); };
  return {make({5, 7}, seed),
          make({1003}, seed + 1),
          non_contiguous(make({6, 5}, seed + 2)),
          non_contiguous(make({9}, seed + 3)),
          make({}, seed + 4),
          make({2, 0}, seed + 5)};
}

TEST(ElementwiseUnary, MatchesReferenceInEveryDTypeAndLayout) {
  for (const UnaryCase& c : unary_cases()) {
    for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
      int index = 0;
      for (const Tensor& x : layouts(dtype, c, 20)) {
        SCOPED_TRACE(label(c) + " " + std::string(dtype_name(dtype)) + " layout " + std::to_string(index++));
        Tensor out = call1(c.op, {x}, c.attrs);
        EXPECT_EQ(out.meta_info(), x.meta_info());
        std::vector<double> expected = reference_map({x}, [&](const auto& v) { return c.reference(v[0]); });
        Tolerance tol = tolerance_for(dtype);
        EXPECT_TRUE(all_close(out, expected, tol.rtol, tol.atol));
      }
    }
  }
}

TEST(ElementwiseUnary, IntegerOpsKeepInt64) {
  Tensor x = Tensor::from_vector({-3, 0, 4, -1}, {2, 2}, DType::Int64);
  EXPECT_TRUE(all_close(neg(x), {3, 0, -4, 1}));
  EXPECT_TRUE(all_close(abs(non_contiguous(x)), {3, 0, 4, 1}));
  EXPECT_TRUE(all_close(relu(x), {0, 0, 4, 0}));
  EXPECT_TRUE(all_close(x + 2.0, {-1, 2, 6, 1}));
  EXPECT_TRUE(all_close(10.0 - x, {13, 10, 6, 11}));
  EXPECT_TRUE(all_close(x * -3.0, {9, 0, -12, 3}));
  EXPECT_TRUE(all_close(x - 1.0, {-4, -1, 3, -2}));
  for (const Tensor& out : {neg(x), abs(x), relu(x), x + 2.0, x * 2.0}) EXPECT_EQ(out.dtype(), DType::Int64);
}

TEST(ElementwiseUnary, Int64MinimumNegatesAndAbsWithoutUndefinedBehavior) {
  Tensor x = Tensor::empty({1}, DType::Int64);
  x.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(neg(x).data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(abs(x).data<int64_t>()[0], std::numeric_limits<int64_t>::min());
}

TEST(ElementwiseUnary, SpecialValues) {
  double inf = std::numeric_limits<double>::infinity();
  double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = Tensor::from_vector({-1000, -inf, 1000, inf, nan, 0}, {6}, dtype);
    double rtol = 1e-6;  // float32 tanh lands within an ulp of +-1
    EXPECT_TRUE(all_close(exp(x), {0, 0, inf, inf, nan, 1}, rtol));
    EXPECT_TRUE(all_close(sigmoid(x), {0, 0, 1, 1, nan, 0.5}, rtol));
    EXPECT_TRUE(all_close(tanh(x), {-1, -1, 1, 1, nan, 0}, rtol));
    EXPECT_TRUE(all_close(silu(x), {0, nan, 1000, inf, nan, 0}, rtol));  // -inf * sigmoid(-inf) = -inf * 0
    EXPECT_TRUE(all_close(relu(x), {0, 0, 1000, inf, nan, 0}, rtol));
    EXPECT_TRUE(all_close(gelu(x), {0, nan, 1000, inf, nan, 0}, rtol));
    EXPECT_TRUE(all_close(gelu(x, "tanh"), {0, nan, 1000, inf, nan, 0}, rtol));
    EXPECT_TRUE(all_close(log(Tensor::from_vector({0, -1, inf}, {3}, dtype)), {-inf, nan, inf}));
  }
}

TEST(ElementwiseUnary, GeluKeepsRelativeAccuracyInTheNegativeTail) {
  // x Phi(x) is tiny here; computing it as 1 + erf(x) would cancel every digit in float32.
  std::vector<double> xs{-3, -5, -7, -9};
  Tensor x32 = Tensor::from_vector(xs, {4}, DType::Float32);
  std::vector<double> exact;
  for (double v : xs) exact.push_back(0.5 * v * std::erfc(-v / std::sqrt(2.0)));
  EXPECT_TRUE(all_close(gelu(x32), exact, 3e-5, 0));
}

TEST(ElementwiseUnary, InferenceMetaAndTraits) {
  for (const UnaryCase& c : unary_cases()) {
    const OpDef& op = builtin_registry().get(c.op);
    EXPECT_TRUE(op.traits.elementwise) << c.op;
    Tensor x = random_of({3, 2}, DType::Float32, 5, c.low, c.high);
    EXPECT_EQ(infer_metas(op, {x.meta_info()}, c.attrs)[0], call1(c.op, {x}, c.attrs).meta_info());
    Tensor huge = call1(c.op, {Tensor::meta({70000000000}, DType::BFloat16)}, c.attrs);
    EXPECT_TRUE(huge.is_meta());
    EXPECT_EQ(huge.meta_info(), (TensorMeta{{70000000000}, DType::BFloat16}));
  }
}

TEST(ElementwiseUnary, DTypeErrorsNameTheOp) {
  Tensor ints = Tensor::empty({3}, DType::Int64);
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu"}) {
    EXPECT_TRUE(contains_all(error_message<DTypeError>([&] { call1(op, {ints}); }), {op, "i64[3]"}));
  }
  EXPECT_TRUE(
      contains_all(error_message<DTypeError>([] { neg(Tensor::empty({2}, DType::Bool)); }), {"neg", "bool[2]"}));
  EXPECT_TRUE(contains_all(error_message<DTypeError>([&] { div(ints, 2.0); }), {"div_scalar", "i64[3]"}));
  EXPECT_TRUE(contains_all(error_message<DTypeError>([&] { pow(ints, 2.0); }), {"pow", "i64[3]"}));
  EXPECT_TRUE(contains_all(error_message<DTypeError>([&] { ints * 0.5; }), {"mul_scalar", "i64[3]", "0.5"}));
  EXPECT_TRUE(contains_all(error_message<DTypeError>([&] { ints + 1e30; }), {"add_scalar", "int64 range"}));
  EXPECT_THROW(Tensor::empty({3}, DType::Bool) + 1.0, DTypeError);
}

TEST(ElementwiseUnary, BadAttributesAreValueErrors) {
  Tensor x = Tensor::empty({2});
  EXPECT_TRUE(contains_all(error_message<ValueError>([&] { gelu(x, "fast"); }), {"gelu", "fast", "tanh"}));
  EXPECT_THROW(call1("add_scalar", {x}), ValueError);  // missing scalar
  EXPECT_THROW(call1("pow", {x}, {{"exponent", std::string("two")}}), ValueError);
  EXPECT_THROW(call1("gelu", {Tensor::meta({2})}, {{"approximate", std::string("erf")}}), ValueError);
}

TEST(ElementwiseUnary, VjpsMatchFiniteDifferences) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(label(c));
    // Keep away from the kinks of abs and relu at 0.
    double low = c.low, high = c.high;
    if (c.op == "abs" || c.op == "relu") low = 0.1;
    if (c.op == "exp") low = -3, high = 3;
    if (low >= 0) low = std::max(low, 0.5);  // sqrt, log, rsqrt, x^p: away from the singularity at 0
    Tensor x = testing::random_tensor({3, 4}, DType::Float64, 7, low, std::min(high, 20.0));
    EXPECT_TRUE(check_vjp(c.op, {x}, c.attrs));
    EXPECT_TRUE(check_vjp(c.op, {non_contiguous(x)}, c.attrs));
    if (c.op == "abs" || c.op == "relu") {
      EXPECT_TRUE(check_vjp(c.op, {neg(x)}, c.attrs));
    }
  }
  EXPECT_TRUE(check_vjp("pow", {testing::random_tensor({4}, DType::Float64, 8, 0.5, 2)}, {{"exponent", 0.0}}));
}

TEST(ElementwiseUnary, GeluBackwardIsTheGeluVjpAndIsDifferentiable) {
  for (const char* approximate : {"none", "tanh"}) {
    SCOPED_TRACE(approximate);
    Attrs attrs{{"approximate", std::string(approximate)}};
    Tensor x = testing::random_tensor({4, 5}, DType::Float64, 9, -4, 4);
    Tensor g = testing::random_tensor({4, 5}, DType::Float64, 10);
    Tensor dx = call1("gelu_backward", {g, x}, attrs);
    // Against central differences of gelu itself, elementwise.
    double eps = 1e-6;
    std::vector<double> expected = reference_map({g, x}, [&](const auto& v) {
      double up = std::string(approximate) == "none" ? ref_gelu(v[1] + eps) : ref_gelu_tanh(v[1] + eps);
      double down = std::string(approximate) == "none" ? ref_gelu(v[1] - eps) : ref_gelu_tanh(v[1] - eps);
      return v[0] * (up - down) / (2 * eps);
    });
    EXPECT_TRUE(all_close(dx, expected, 1e-7, 1e-8));
    EXPECT_TRUE(check_vjp("gelu_backward", {g, x}, attrs));
    EXPECT_TRUE(
        all_close(call1("gelu_backward", {g.to(DType::Float32), x.to(DType::Float32)}, attrs), expected, 1e-5, 1e-6));
  }
  std::string message = error_message<ShapeError>([] {
    call1("gelu_backward", {Tensor::empty({2, 3}), Tensor::empty({3})});
  });
  EXPECT_TRUE(contains_all(message, {"gelu_backward", "f32[2,3]", "f32[3]"}));
}

}  // namespace
}  // namespace px
