// contiguous, clone, cast, cat, stack, triu and tril: ops that write fresh tensors.

#include <gtest/gtest.h>

#include <cmath>

#include "ops/shape_testing.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/shape.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::all_close;
using testing::check_vjp;
using testing::expect_error;
using testing::gather_reference;
using testing::non_contiguous;
using testing::random_tensor;
using Index = std::vector<int64_t>;

Tensor sample(const Shape& shape, uint64_t seed = 0) { return random_tensor(shape, DType::Float64, seed); }

TEST(ContiguousOp, CopiesOnlyWhenNeeded) {
  Tensor x = sample({3, 4}, 1);
  EXPECT_TRUE(x.contiguous().same(x));
  Tensor t = non_contiguous(x);
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage_with(t));
  EXPECT_TRUE(all_close(c, x.to_vector<double>()));
  Tensor b = sample({3, 1}, 2).expand({3, 4});
  EXPECT_TRUE(all_close(b.contiguous(), gather_reference(b, {3, 4}, [](Index i) { return Index{i[0], 0}; })));
  EXPECT_TRUE(check_vjp("contiguous", {t}));
  OpCost cost = builtin_registry().get("contiguous").cost({t.meta_info()}, {t.meta_info()}, {});
  EXPECT_EQ(cost.bytes_read, 96);
  EXPECT_EQ(cost.bytes_written, 96);
}

TEST(CloneOp, AlwaysCopies) {
  Tensor x = sample({2, 3}, 3);
  Tensor y = x.clone();
  EXPECT_FALSE(y.shares_storage_with(x));
  EXPECT_TRUE(all_close(y, x));
  Tensor s = x.slice(1, 0, 3, 2).clone();
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_TRUE(all_close(s, gather_reference(x, {2, 2}, [](Index i) { return Index{i[0], 2 * i[1]}; })));
  EXPECT_TRUE(check_vjp("clone", {non_contiguous(x)}));
}

TEST(CastOp, ConvertsEveryDtypePair) {
  std::vector<double> values{-2.75, -1, 0, 0.5, 1.00390625, 3};
  auto expected = [](double v, DType to) {
    switch (to) {
      case DType::Float32:
        return static_cast<double>(static_cast<float>(v));
      case DType::Float64:
        return v;
      case DType::Int64:
        return std::trunc(v);
      case DType::Bool:
        return v != 0 ? 1.0 : 0.0;
      case DType::BFloat16:
        return v == 1.00390625 ? 1.0 : v;  // 1 + 2^-8 ties to even in bf16
    }
    return v;
  };
  for (DType to : kAllDTypes) {
    Tensor x = non_contiguous(Tensor::from_vector(values, {2, 3}, DType::Float64));
    Tensor y = cast(x, to);
    EXPECT_EQ(y.dtype(), to);
    std::vector<double> want;
    for (double v : values) want.push_back(expected(v, to));
    EXPECT_TRUE(all_close(y, want)) << dtype_name(to);
    for (DType back : kAllDTypes) {
      std::vector<double> round;
      for (double v : want) round.push_back(expected(v, back));
      EXPECT_TRUE(all_close(cast(y, back), round)) << dtype_name(to) << " -> " << dtype_name(back);
    }
  }
  Tensor x = sample({2, 2});
  EXPECT_TRUE(x.to(DType::Float64).same(x)) << "to() the same dtype is the tensor itself";
  EXPECT_FALSE(cast(x, DType::Float64).shares_storage_with(x));
}

TEST(CastOp, GradientFlowsOnlyBetweenFloatingDtypes) {
  EXPECT_TRUE(check_vjp("cast", {sample({3}, 4)}, {{"dtype", DType::Float64}}));
  const OpDef& op = builtin_registry().get("cast");
  Tensor x = sample({3}, 5);
  std::vector<Tensor> inputs{x};
  for (auto [to, differentiable] : {std::pair{DType::Float32, true}, std::pair{DType::BFloat16, true},
                                    std::pair{DType::Int64, false}, std::pair{DType::Bool, false}}) {
    Attrs attrs{{"dtype", to}};
    std::vector<Tensor> outputs = call(op, inputs, attrs);
    std::vector<Tensor> grads{Tensor::from_vector({1, 2, 3}, {3}, to)};
    Tensor dx = op.vjp(VjpContext{inputs, outputs, grads, attrs})[0];
    EXPECT_EQ(dx.defined(), differentiable) << dtype_name(to);
    if (dx.defined()) {
      EXPECT_EQ(dx.dtype(), DType::Float64);
      EXPECT_TRUE(all_close(dx, {1, 2, 3}));
    }
  }
}

TEST(CatOp, JoinsAlongADim) {
  Tensor a = sample({2, 3}, 6), b = non_contiguous(sample({2, 2}, 7)), c = sample({2, 1}, 8).expand({2, 4});
  Tensor y = cat({a, b, c}, -1);
  EXPECT_EQ(y.shape(), (Shape{2, 9}));
  std::vector<double> want;
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), cv = c.to_vector<double>();
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t k = 0; k < 3; ++k) want.push_back(av[r * 3 + k]);
    for (int64_t k = 0; k < 2; ++k) want.push_back(bv[r * 2 + k]);
    for (int64_t k = 0; k < 4; ++k) want.push_back(cv[r * 4 + k]);
  }
  EXPECT_TRUE(all_close(y, want));
  EXPECT_EQ(cat({a}).shape(), (Shape{2, 3}));
  EXPECT_EQ(cat({a, sample({0, 3})}).shape(), (Shape{2, 3}));
  EXPECT_TRUE(check_vjp("cat", {a, b, sample({2, 4}, 9)}, {{"dim", int64_t{1}}}));
  EXPECT_TRUE(check_vjp("cat", {sample({1, 2}, 10), non_contiguous(sample({3, 2}, 11))}));
}

TEST(CatOp, RejectsMismatchedInputs) {
  Tensor a = sample({2, 3});
  expect_error<ShapeError>(
      [&] {
        cat({a, sample({3, 3})}, 1);
      },
      {"cat:", "f64[2,3], f64[3,3]", "outside dim 1", "input 1 dim 0: 3 vs 2"});
  expect_error<ShapeError>([&] { cat({a, sample({2, 3, 1})}); }, {"cat:", "same number of dims"});
  expect_error<DTypeError>([&] { cat({a, random_tensor({2, 3}, DType::Float32)}); }, {"cat", "f64[2,3]", "f32[2,3]"});
  expect_error<ShapeError>([&] { cat({Tensor::scalar(1), Tensor::scalar(2)}); }, {"cat:", "f32[]"});
  expect_error<ValueError>([&] { cat({}); }, {"cat"});
}

TEST(StackOp, JoinsAlongANewDim) {
  Tensor a = sample({2, 3}, 12), b = non_contiguous(sample({2, 3}, 13));
  for (int64_t dim : {0, 1, 2, -1}) {
    Tensor y = stack({a, b}, dim);
    int64_t d = dim < 0 ? dim + 3 : dim;
    Shape shape{2, 3};
    shape.insert(shape.begin() + d, 2);
    ASSERT_EQ(y.shape(), shape);
    std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      Index index = testing::unravel(i, shape);
      int64_t which = index[d];
      index.erase(index.begin() + d);
      double want = (which == 0 ? av : bv)[index[0] * 3 + index[1]];
      EXPECT_EQ(element_as_double(y, i), want);
    }
  }
  EXPECT_EQ(stack({Tensor::scalar(1.0), Tensor::scalar(2.0)}).to_vector<double>(), (std::vector<double>{1, 2}));
  expect_error<ShapeError>([&] { stack({a, sample({3, 2})}); }, {"stack:", "f64[2,3], f64[3,2]", "same shape"});
  expect_error<ValueError>([&] { stack({a, b}, 3); }, {"stack", "dim 3"});
  EXPECT_TRUE(check_vjp("stack", {a, b, sample({2, 3}, 14)}, {{"dim", int64_t{1}}}));
}

TEST(TriangleOps, KeepOneSideOfTheDiagonal) {
  for (Tensor x : {sample({2, 3, 4}, 15), non_contiguous(sample({2, 3, 4}, 16))}) {
    std::vector<double> xv = x.to_vector<double>();
    for (int64_t diagonal : {-5, -1, 0, 2, 9}) {
      std::vector<double> upper(xv.size()), lower(xv.size());
      for (int64_t i = 0; i < x.numel(); ++i) {
        Index index = testing::unravel(i, x.shape());
        int64_t offset = index[2] - index[1];
        upper[i] = offset >= diagonal ? xv[i] : 0.0;
        lower[i] = offset <= diagonal ? xv[i] : 0.0;
      }
      EXPECT_TRUE(all_close(triu(x, diagonal), upper)) << diagonal;
      EXPECT_TRUE(all_close(tril(x, diagonal), lower)) << diagonal;
    }
  }
  EXPECT_EQ(triu(Tensor::from_vector({1, 1, 1, 1}, {2, 2}, DType::Int64), std::numeric_limits<int64_t>::min())
                .to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1, 1, 1}));
  expect_error<ShapeError>([] { triu(Tensor::from_vector({1, 2}, {2})); }, {"triu:", "at least 2 dims", "f32[2]"});
  expect_error<ShapeError>([] { tril(Tensor::scalar(1)); }, {"tril:", "f32[]"});
  EXPECT_TRUE(check_vjp("triu", {sample({3, 3}, 17)}, {{"diagonal", int64_t{1}}}));
  EXPECT_TRUE(check_vjp("tril", {non_contiguous(sample({2, 3, 2}, 18))}));
}

TEST(CopyOps, MetaInputsGiveMetaOutputs) {
  Tensor huge = Tensor::meta({70'000, 1'000'000}, DType::Float32);
  EXPECT_TRUE(huge.contiguous().is_meta());
  EXPECT_TRUE(huge.clone().is_meta());
  Tensor half = huge.to(DType::BFloat16);
  EXPECT_TRUE(half.is_meta());
  EXPECT_EQ(half.dtype(), DType::BFloat16);
  EXPECT_EQ(cat({huge, huge}, 1).shape(), (Shape{70'000, 2'000'000}));
  EXPECT_EQ(stack({huge, huge}).shape(), (Shape{2, 70'000, 1'000'000}));
  EXPECT_TRUE(triu(huge).is_meta());
  OpCost cost = builtin_registry().get("cast").cost({huge.meta_info()}, {half.meta_info()}, {});
  EXPECT_EQ(cost.bytes_read, 4 * 70e9);
  EXPECT_EQ(cost.bytes_written, 2 * 70e9);
}

TEST(TensorMethods, GoThroughTheOps) {
  Tensor x = sample({2, 3, 4}, 19);
  EXPECT_EQ(x.view({6, 4}).shape(), (Shape{6, 4}));
  EXPECT_EQ(x.permute({1, 2, 0}).shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(x.narrow(2, 1, 2).shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(x.select(0, 1).shape(), (Shape{3, 4}));
  EXPECT_EQ(x.slice(2, 0, 4, 2).shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(x.to(DType::Float32).dtype(), DType::Float32);
  EXPECT_THROW(Tensor().clone(), ValueError);
}

}  // namespace
}  // namespace px
