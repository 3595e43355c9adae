// add, sub, mul, div, maximum, minimum and their tensor-scalar forms: values
// against an independent float64 reference on contiguous, non-contiguous and
// broadcast inputs in every dtype, inference, meta, errors, VJPs and cost.

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

struct BinaryCase {
  std::string op;
  std::function<double(double, double)> reference;
  bool floating_only = false;
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }, true},
      {"maximum", [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](double a, double b) { return std::min(a, b); }},
  };
}

// A view of `t` repeated `copies` times along a new leading dim with stride 0.
Tensor expanded(const Tensor& t, int64_t copies) {
  Shape shape = t.shape();
  Strides strides = t.strides();
  shape.insert(shape.begin(), copies);
  strides.insert(strides.begin(), 0);
  return Tensor::alias(t, shape, strides, t.offset());
}

// Pairs of inputs in the layouts the kernel distinguishes.
std::vector<std::pair<Tensor, Tensor>> layouts(DType dtype, uint64_t seed, bool positive_rhs) {
  double low = positive_rhs ? 0.5 : -2;
  auto lhs = [&](const Shape& shape, uint64_t s) { return random_of(shape, dtype, s); };
  auto rhs = [&](const Shape& shape, uint64_t s) { return random_of(shape, dtype, s, low, 2); };
  return {
      {lhs({5, 7}, seed), rhs({5, 7}, seed + 1)},                                      // contiguous
      {lhs({1003}, seed + 2), rhs({1003}, seed + 3)},                                  // long: vector body and tail
      {non_contiguous(lhs({5, 7}, seed + 4)), non_contiguous(rhs({5, 7}, seed + 5))},  // strided
      {non_contiguous(lhs({6, 4}, seed + 6)), rhs({6, 4}, seed + 7)},                  // mixed
      {lhs({2, 5, 7}, seed + 8), rhs({7}, seed + 9)},                                  // bias-style broadcast
      {lhs({5, 1}, seed + 10), rhs({1, 7}, seed + 11)},                                // outer product
      {lhs({4, 3}, seed + 12), rhs({}, seed + 13)},                                    // scalar rhs
      {lhs({}, seed + 14), rhs({4, 3}, seed + 15)},                                    // scalar lhs
      {expanded(lhs({3, 4}, seed + 16), 2), non_contiguous(rhs({3, 4}, seed + 17))},   // stride-0 view
      {lhs({0, 3}, seed + 18), rhs({3}, seed + 19)},                                   // empty
  };
}

TEST(ElementwiseBinary, MatchesReferenceInEveryDTypeAndLayout) {
  for (const BinaryCase& c : binary_cases()) {
    for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16, DType::Int64}) {
      if (c.floating_only && dtype == DType::Int64) continue;
      int index = 0;
      for (const auto& [a, b] : layouts(dtype, 10, c.op == "div")) {
        SCOPED_TRACE(c.op + " " + std::string(dtype_name(dtype)) + " layout " + std::to_string(index++));
        Tensor out = call1(c.op, {a, b});
        EXPECT_EQ(out.shape(), reference_broadcast({a.shape(), b.shape()}));
        EXPECT_EQ(out.dtype(), dtype);
        EXPECT_TRUE(out.is_contiguous());
        std::vector<double> expected = reference_map({a, b}, [&](const auto& v) { return c.reference(v[0], v[1]); });
        Tolerance tol = tolerance_for(dtype);
        EXPECT_TRUE(all_close(out, expected, tol.rtol, tol.atol));
      }
    }
  }
}

TEST(ElementwiseBinary, InferenceMatchesKernelAndMetaAllocatesNothing) {
  Tensor a = random_of({2, 1, 4}, DType::Float32, 1);
  Tensor b = random_of({3, 1}, DType::Float32, 2);
  for (const BinaryCase& c : binary_cases()) {
    const OpDef& op = builtin_registry().get(c.op);
    std::vector<TensorMeta> inferred = infer_metas(op, {a.meta_info(), b.meta_info()}, {});
    ASSERT_EQ(inferred.size(), 1u);
    EXPECT_EQ(inferred[0], call1(c.op, {a, b}).meta_info());
    EXPECT_TRUE(op.traits.elementwise);
    // 70 billion elements: only shapes move.
    Tensor huge = call1(c.op, {Tensor::meta({70000, 1000000}), Tensor::meta({1000000})});
    EXPECT_TRUE(huge.is_meta());
    EXPECT_EQ(huge.shape(), (Shape{70000, 1000000}));
  }
}

TEST(ElementwiseBinary, ShapeMismatchNamesOpAndBothShapes) {
  Tensor a = Tensor::empty({2, 3});
  Tensor b = Tensor::empty({4});
  for (const BinaryCase& c : binary_cases()) {
    std::string message = error_message<ShapeError>([&] { call1(c.op, {a, b}); });
    EXPECT_TRUE(contains_all(message, {"ShapeError", c.op, "[2,3]", "[4]"}));
    // Meta inputs fail the same way, before anything runs.
    EXPECT_THROW(call1(c.op, {Tensor::meta({2, 3}), Tensor::meta({4})}), ShapeError);
  }
}

TEST(ElementwiseBinary, DTypeErrorsNameOpAndDTypes) {
  std::string mixed = error_message<DTypeError>([] { add(Tensor::empty({2}), Tensor::empty({2}, DType::Float64)); });
  EXPECT_TRUE(contains_all(mixed, {"DTypeError", "add", "f32[2]", "f64[2]"}));
  std::string boolean =
      error_message<DTypeError>([] { mul(Tensor::empty({2}, DType::Bool), Tensor::empty({2}, DType::Bool)); });
  EXPECT_TRUE(contains_all(boolean, {"mul", "bool[2]"}));
  std::string integer =
      error_message<DTypeError>([] { div(Tensor::empty({3}, DType::Int64), Tensor::empty({3}, DType::Int64)); });
  EXPECT_TRUE(contains_all(integer, {"div", "i64[3]", "floating"}));
}

TEST(ElementwiseBinary, MaximumAndMinimumPropagateNaN) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    Tensor a = Tensor::from_vector({nan, 1, 2, nan}, {4}, dtype);
    Tensor b = Tensor::from_vector({1, nan, 3, nan}, {4}, dtype);
    for (const Tensor& out : {maximum(a, b), minimum(a, b)}) {
      std::vector<double> v = out.to_vector<double>();
      EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[3])) << dtype_name(dtype);
    }
    EXPECT_EQ(maximum(a, b).to_vector<double>()[2], 3);
    EXPECT_EQ(minimum(a, b).to_vector<double>()[2], 2);
  }
}

TEST(ElementwiseBinary, IntegerOverflowWrapsAround) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Tensor a = Tensor::empty({2}, DType::Int64);
  a.data<int64_t>()[0] = kMax;
  a.data<int64_t>()[1] = std::numeric_limits<int64_t>::min();
  Tensor one = Tensor::from_vector({1}, {1}, DType::Int64);
  EXPECT_EQ(add(a, one).data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(sub(a, one).data<int64_t>()[1], kMax);
  EXPECT_EQ(mul(a, Tensor::from_vector({2}, {1}, DType::Int64)).data<int64_t>()[0], -2);
}

TEST(ElementwiseBinary, VjpsMatchFiniteDifferences) {
  for (const BinaryCase& c : binary_cases()) {
    SCOPED_TRACE(c.op);
    auto rhs = [&](const Shape& shape, uint64_t seed) {
      return testing::random_tensor(shape, DType::Float64, seed, c.op == "div" ? 0.5 : -1, c.op == "div" ? 2 : 1);
    };
    Tensor a = testing::random_tensor({3, 4}, DType::Float64, 1);
    EXPECT_TRUE(check_vjp(c.op, {a, rhs({3, 4}, 2)}));
    EXPECT_TRUE(check_vjp(c.op, {testing::random_tensor({2, 3, 4}, DType::Float64, 3), rhs({3, 1}, 4)}));
    EXPECT_TRUE(check_vjp(c.op, {testing::random_tensor({4}, DType::Float64, 5), rhs({3, 1}, 6)}));
    EXPECT_TRUE(check_vjp(c.op, {non_contiguous(a), non_contiguous(rhs({3, 4}, 7))}));
  }
}

std::vector<Tensor> vjp_of_call(const std::string& op, const std::vector<Tensor>& inputs, const Tensor& grad) {
  const OpDef& def = builtin_registry().get(op);
  std::vector<Tensor> outputs = call(def, inputs);
  std::vector<Tensor> grads{grad};
  Attrs attrs;
  return vjp_of(def)(VjpContext{inputs, outputs, grads, attrs});
}

TEST(ElementwiseBinary, MaximumTiesSendTheGradientToTheFirstInput) {
  Tensor a = Tensor::from_vector({1, 2, 3}, {3}, DType::Float64);
  Tensor b = Tensor::from_vector({1, 5, 0}, {3}, DType::Float64);
  Tensor g = Tensor::from_vector({10, 20, 30}, {3}, DType::Float64);
  std::vector<Tensor> max_grads = vjp_of_call("maximum", {a, b}, g);
  EXPECT_TRUE(all_close(max_grads[0], {10, 0, 30}));
  EXPECT_TRUE(all_close(max_grads[1], {0, 20, 0}));
  std::vector<Tensor> min_grads = vjp_of_call("minimum", {a, b}, g);
  EXPECT_TRUE(all_close(min_grads[0], {10, 20, 0}));
  EXPECT_TRUE(all_close(min_grads[1], {0, 0, 30}));
}

TEST(ElementwiseBinary, NoGradientFlowsIntoIntegersOrFromAnUndefinedCotangent) {
  Tensor a = Tensor::from_vector({1, 2}, {2}, DType::Int64);
  for (const char* op : {"add", "sub", "mul", "maximum"}) {
    std::vector<Tensor> grads = vjp_of_call(op, {a, a}, Tensor::from_vector({1, 1}, {2}, DType::Int64));
    ASSERT_EQ(grads.size(), 2u);
    EXPECT_FALSE(grads[0].defined() || grads[1].defined()) << op;
  }
  Tensor f = testing::random_tensor({2}, DType::Float64, 1);
  for (const BinaryCase& c : binary_cases()) {
    std::vector<Tensor> grads = vjp_of_call(c.op, {f, f}, Tensor());
    EXPECT_FALSE(grads[0].defined() || grads[1].defined()) << c.op;
  }
}

TEST(ElementwiseBinary, CostCountsBytesOfEveryOperandOnce) {
  const OpDef& add_op = builtin_registry().get("add");
  std::vector<TensorMeta> in{{{4, 8}, DType::Float32}, {{8}, DType::Float32}};
  OpCost cost = add_op.cost(in, add_op.infer(in, {}), {});
  EXPECT_EQ(cost.flops, 32);
  EXPECT_EQ(cost.bytes_read, (32 + 8) * 4);
  EXPECT_EQ(cost.bytes_written, 32 * 4);
}

}  // namespace
}  // namespace px
