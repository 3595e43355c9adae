// sum, mean, amax, amin and argmax through the dispatcher, against naive float64
// references written here, on contiguous, non-contiguous and broadcast inputs;
// inference vs kernel metas, meta inputs, VJPs against finite differences, and
// the errors bad input raises.

#include "parallax/ops/reduction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "parallax/ops/dispatch.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::all_close;
using testing::check_vjp;
using testing::non_contiguous;
using testing::random_tensor;

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

template <class E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& pieces) {
  EXPECT_THROW(fn(), E);
  std::string message = message_of(fn);
  for (const std::string& piece : pieces) {
    EXPECT_NE(message.find(piece), std::string::npos) << "message: " << message << "\nmissing: " << piece;
  }
}

// A view of `t` broadcast along a new leading dim of size `copies` (stride 0): same storage.
Tensor broadcast_view(const Tensor& t, int64_t copies) {
  Shape shape = t.shape();
  Strides strides = t.strides();
  shape.insert(shape.begin(), copies);
  strides.insert(strides.begin(), 0);
  return Tensor::alias(t, shape, strides, t.offset());
}

enum class Kind { Sum, Mean, Max, Min, Argmax };

// The reference: every input element folded into the output element it belongs to.
std::vector<double> naive_reduce(Kind kind, const Tensor& x, std::vector<int64_t> dims) {
  const Shape& shape = x.shape();
  int64_t rank = x.dim();
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  }
  for (int64_t& d : dims) d = d < 0 ? d + rank : d;
  auto reduced = [&](int64_t d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); };
  int64_t outputs = 1;
  for (int64_t d = 0; d < rank; ++d) outputs *= reduced(d) ? 1 : shape[d];
  std::vector<double> values = x.to_vector<double>();
  std::vector<std::vector<double>> groups(static_cast<size_t>(outputs));
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rest = i, out = 0, scale = 1;
    for (int64_t d = rank; d-- > 0;) {
      int64_t index = rest % shape[d];
      rest /= shape[d];
      if (!reduced(d)) {
        out += index * scale;
        scale *= shape[d];
      }
    }
    groups[static_cast<size_t>(out)].push_back(values[static_cast<size_t>(i)]);
  }
  std::vector<double> result;
  for (const std::vector<double>& group : groups) {
    double total = 0, best = group.empty() ? 0 : group[0];
    size_t best_at = 0;
    for (size_t j = 0; j < group.size(); ++j) {
      total += group[j];
      bool pick = kind == Kind::Min ? group[j] < best : group[j] > best;
      if (pick) {
        best = group[j];
        best_at = j;
      }
    }
    switch (kind) {
      case Kind::Sum:
        result.push_back(total);
        break;
      case Kind::Mean:
        result.push_back(total / static_cast<double>(group.size()));
        break;
      case Kind::Max:
      case Kind::Min:
        result.push_back(best);
        break;
      case Kind::Argmax:
        result.push_back(static_cast<double>(best_at));
        break;
    }
  }
  return result;
}

struct OpKind {
  const char* name;
  Kind kind;
};
constexpr OpKind kReductions[] = {{"sum", Kind::Sum}, {"mean", Kind::Mean}, {"amax", Kind::Max}, {"amin", Kind::Min}};

Shape expected_shape(const Shape& shape, std::vector<int64_t> dims, bool keepdim) {
  int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t& d : dims) d = d < 0 ? d + rank : d;
  Shape out;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced)
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

const std::vector<std::vector<int64_t>> kDimSets{{}, {0}, {1}, {-1}, {0, 2}, {2, 0}, {1, 2}, {0, 1, 2}};

TEST(Reduction, MatchesNaiveOnContiguousNonContiguousAndBroadcastInputs) {
  Tensor base = random_tensor({3, 4, 5}, DType::Float64, 1);
  std::vector<std::pair<const char*, Tensor>> inputs{
      {"contiguous", base},
      {"non-contiguous", non_contiguous(base)},
      {"broadcast", broadcast_view(random_tensor({4, 5}, DType::Float64, 2), 3)},
  };
  for (const auto& [layout, x] : inputs) {
    for (const OpKind& op : kReductions) {
      for (const std::vector<int64_t>& dims : kDimSets) {
        for (bool keepdim : {false, true}) {
          Tensor out = call1(op.name, {x}, {{"dims", dims}, {"keepdim", keepdim}});
          EXPECT_EQ(out.shape(), expected_shape(x.shape(), dims, keepdim)) << op.name << " " << layout;
          EXPECT_TRUE(all_close(out, naive_reduce(op.kind, x, dims), 1e-12, 1e-12))
              << op.name << " " << layout << " dims " << shape_str(dims) << " keepdim " << keepdim;
        }
      }
    }
  }
}

TEST(Reduction, Float32AndBFloat16ComputeAccurately) {
  Tensor x64 = random_tensor({6, 70}, DType::Float64, 3);
  for (const OpKind& op : kReductions) {
    for (std::vector<int64_t> dims : {std::vector<int64_t>{1}, std::vector<int64_t>{0}}) {
      std::vector<double> expected = naive_reduce(op.kind, x64, dims);
      Tensor x32 = x64.to(DType::Float32);
      EXPECT_TRUE(all_close(call1(op.name, {x32}, {{"dims", dims}}), expected, 1e-6, 1e-6)) << op.name;
      // bf16 rounds the inputs (8 bits of mantissa) and the result.
      Tensor x16 = x64.to(DType::BFloat16);
      std::vector<double> rounded = naive_reduce(op.kind, x16, dims);
      Tensor out16 = call1(op.name, {x16}, {{"dims", dims}});
      EXPECT_EQ(out16.dtype(), DType::BFloat16);
      EXPECT_TRUE(all_close(out16, rounded, 1e-2, 1e-2)) << op.name;
    }
  }
}

TEST(Reduction, Int64SumsAndExtremesStayInt64) {
  Tensor x = Tensor::from_vector({1, -2, 3, 4, 50, -6}, {2, 3}, DType::Int64);
  Tensor s = sum(x, {1});
  EXPECT_EQ(s.dtype(), DType::Int64);
  EXPECT_TRUE(all_close(s, {2, 48}));
  EXPECT_TRUE(all_close(amax(x, {0}), {4, 50, 3}));
  EXPECT_TRUE(all_close(amin(x), std::vector<double>{-6}));
  expect_error<DTypeError>([&] { mean(x); }, {"mean", "i64[2,3]", "floating"});
}

TEST(Reduction, FunctionalApiMatchesCall) {
  Tensor x = random_tensor({2, 3, 4}, DType::Float64, 4);
  EXPECT_TRUE(all_close(sum(x, {1}, true), call1("sum", {x}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}})));
  EXPECT_TRUE(all_close(mean(x), naive_reduce(Kind::Mean, x, {})));
  EXPECT_EQ(sum(x).shape(), Shape{});
  EXPECT_EQ(amax(x, {-1}, true).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(amin(x, {0, 1}).shape(), (Shape{4}));
}

TEST(Reduction, ScalarsEmptyTensorsAndNan) {
  Tensor scalar = Tensor::scalar(2.5, DType::Float64);
  EXPECT_EQ(sum(scalar).item<double>(), 2.5);
  EXPECT_EQ(sum(scalar, {0}).shape(), Shape{});
  EXPECT_EQ(amax(scalar, {-1}, true).shape(), Shape{});
  Tensor empty = Tensor::empty({0, 3}, DType::Float64);
  EXPECT_TRUE(all_close(sum(empty, {0}), {0, 0, 0}));
  EXPECT_TRUE(std::isnan(mean(empty).item<double>()));
  EXPECT_EQ(amax(empty, {1}).shape(), (Shape{0}));
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor with_nan = Tensor::from_vector({1, nan, 3, 4}, {2, 2}, DType::Float64);
  std::vector<double> maxes = amax(with_nan, {1}).to_vector<double>();
  EXPECT_TRUE(std::isnan(maxes[0]));
  EXPECT_EQ(maxes[1], 4.0);
}

TEST(Reduction, BadDimsAndDtypesRaiseNamedErrors) {
  Tensor x = random_tensor({2, 3}, DType::Float32, 5);
  expect_error<ValueError>([&] { sum(x, {1, -1}); }, {"sum", "dim 1 appears more than once", "[1,-1]"});
  expect_error<ValueError>([&] { mean(x, {2}); }, {"mean", "dim 2 is out of range", "rank 2"});
  expect_error<ValueError>([&] { amax(x, {-3}); }, {"amax", "-3"});
  Tensor flags = Tensor::from_vector({1, 0}, {2}, DType::Bool);
  expect_error<DTypeError>([&] { sum(flags); }, {"sum", "bool[2]"});
  expect_error<DTypeError>([&] { amin(flags); }, {"amin", "bool[2]"});
  Tensor empty = Tensor::empty({2, 0}, DType::Float32);
  expect_error<ValueError>([&] { amax(empty, {1}); }, {"amax", "f32[2,0]", "dim 1 of size 0"});
  expect_error<ValueError>([&] { argmax(empty); }, {"argmax", "f32[2,0]"});
  expect_error<ValueError>([&] { call1("sum", {x}, {{"dims", int64_t{1}}}); }, {"sum", "dims"});
}

TEST(Reduction, InferenceMatchesKernelAndMetaInputsAllocateNothing) {
  Tensor x = random_tensor({3, 4, 5}, DType::Float32, 6);
  for (const char* name : {"sum", "mean", "amax", "amin"}) {
    for (const std::vector<int64_t>& dims : kDimSets) {
      Attrs attrs{{"dims", dims}, {"keepdim", true}};
      const OpDef& op = builtin_registry().get(name);
      std::vector<TensorMeta> inferred = infer_metas(op, {x.meta_info()}, attrs);
      EXPECT_EQ(call1(name, {x}, attrs).meta_info(), inferred[0]) << name;
    }
  }
  Tensor huge = Tensor::meta({70'000, 1'000'000}, DType::BFloat16);
  Tensor out = sum(huge, {1});
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.meta_info(), (TensorMeta{{70'000}, DType::BFloat16}));
  EXPECT_EQ(mean(huge, {0}, true).shape(), (Shape{1, 1'000'000}));
  Tensor index = argmax(huge, 1);
  EXPECT_TRUE(index.is_meta());
  EXPECT_EQ(index.meta_info(), (TensorMeta{{70'000}, DType::Int64}));
}

TEST(Reduction, CostCountsEveryElementOnce) {
  const OpDef& op = builtin_registry().get("sum");
  Attrs attrs = check_call(op, {Tensor::meta({8, 16})}, {{"dims", std::vector<int64_t>{1}}});
  std::vector<TensorMeta> in{{{8, 16}, DType::Float32}};
  OpCost cost = op.cost(in, op.infer(in, attrs), attrs);
  EXPECT_EQ(cost.flops, 128);
  EXPECT_EQ(cost.bytes_read, 128 * 4);
  EXPECT_EQ(cost.bytes_written, 8 * 4);
}

TEST(ReductionVjp, MatchesFiniteDifferences) {
  Tensor x = random_tensor({3, 4, 5}, DType::Float64, 7);
  for (const OpKind& op : kReductions) {
    for (const std::vector<int64_t>& dims : kDimSets) {
      for (bool keepdim : {false, true}) {
        EXPECT_TRUE(check_vjp(op.name, {x}, {{"dims", dims}, {"keepdim", keepdim}})) << shape_str(dims);
      }
    }
    EXPECT_TRUE(check_vjp(op.name, {non_contiguous(x)}, {{"dims", std::vector<int64_t>{1}}}));
  }
}

TEST(ReductionVjp, ExtremesSplitTheGradientAmongTies) {
  Tensor x = Tensor::from_vector({1, 3, 3, 0, 2, 5, 1, 5, 5}, {3, 3}, DType::Float64);
  Tensor out = amax(x, {1});
  Tensor grad = Tensor::from_vector({1, 2, 3}, {3}, DType::Float64);
  std::vector<Tensor> outputs{out}, grads{grad};
  Attrs attrs = check_call(builtin_registry().get("amax"), {x}, {{"dims", std::vector<int64_t>{1}}});
  VjpContext ctx{{x}, outputs, grads, attrs};
  std::vector<Tensor> dx = vjp_of(builtin_registry().get("amax"))(ctx);
  // Rows [1,3,3] and [1,5,5] tie twice: each tied element gets half of the row's gradient.
  EXPECT_TRUE(all_close(dx[0], {0, 0.5, 0.5, 0, 0, 2, 0, 1.5, 1.5}));
  // Two-way ties are where the one-sided slopes average to 1/2: finite differences agree.
  EXPECT_TRUE(check_vjp("amax", {x}, {{"dims", std::vector<int64_t>{1}}}));
}

TEST(ReductionVjp, IntegerSumsHaveNoGradient) {
  Tensor x = Tensor::from_vector({1, 2, 3}, {3}, DType::Int64);
  Tensor out = sum(x);
  std::vector<Tensor> outputs{out}, grads{Tensor::scalar(1, DType::Int64)};
  Attrs attrs = check_call(builtin_registry().get("sum"), {x}, {});
  VjpContext ctx{{x}, outputs, grads, attrs};
  std::vector<Tensor> dx = vjp_of(builtin_registry().get("sum"))(ctx);
  ASSERT_EQ(dx.size(), 1u);
  EXPECT_FALSE(dx[0].defined());
}

TEST(Argmax, MatchesNaiveAlongEveryDimAndFlattened) {
  Tensor base = random_tensor({3, 4, 5}, DType::Float64, 8);
  for (Tensor x : {base, non_contiguous(base), broadcast_view(random_tensor({4, 5}, DType::Float64, 9), 3)}) {
    for (int64_t dim : {0, 1, 2, -1}) {
      for (bool keepdim : {false, true}) {
        Tensor out = argmax(x, dim, keepdim);
        EXPECT_EQ(out.dtype(), DType::Int64);
        EXPECT_EQ(out.shape(), expected_shape(x.shape(), {dim}, keepdim));
        EXPECT_TRUE(all_close(out, naive_reduce(Kind::Argmax, x, {dim}))) << "dim " << dim;
      }
    }
    Tensor flat = argmax(x);
    EXPECT_EQ(flat.shape(), Shape{});
    EXPECT_TRUE(all_close(flat, naive_reduce(Kind::Argmax, x, {})));
    EXPECT_EQ(argmax(x, std::nullopt, true).shape(), (Shape{1, 1, 1}));
  }
}

TEST(Argmax, FirstOfTiesOtherDtypesAndNoGradient) {
  Tensor ties = Tensor::from_vector({2, 7, 7, 1, 7, 3}, {2, 3}, DType::Float32);
  EXPECT_TRUE(all_close(argmax(ties, 1), {1, 1}));
  EXPECT_TRUE(all_close(argmax(ties), std::vector<double>{1}));
  Tensor ints = Tensor::from_vector({5, 9, 9, -1}, {4}, DType::Int64);
  EXPECT_EQ(argmax(ints).item<int64_t>(), 1);
  EXPECT_EQ(argmax(ties.to(DType::BFloat16), 0).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(argmax(Tensor::scalar(3.0)).item<int64_t>(), 0);
  EXPECT_THROW(vjp_of(builtin_registry().get("argmax")), UnsupportedOp);
  expect_error<ValueError>([&] { argmax(ties, 2); }, {"argmax", "dim 2 is out of range"});
}

}  // namespace
}  // namespace px
