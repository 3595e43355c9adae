// slice, narrow, select, slice_backward, split and chunk.

#include <gtest/gtest.h>

#include <limits>

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

// Python's range(start, end, step) after clamping, for a dim of `size`.
std::vector<int64_t> python_range(int64_t size, int64_t start, int64_t end, int64_t step) {
  auto fix = [size](int64_t i) { return i < 0 ? std::max<int64_t>(i + size, 0) : std::min(i, size); };
  std::vector<int64_t> out;
  for (int64_t i = fix(start); i < fix(end); i += step) out.push_back(i);
  return out;
}

Attrs slice_attrs(int64_t dim, int64_t start, int64_t end, int64_t step = 1) {
  return {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}};
}

TEST(SliceOp, MatchesPythonSlicing) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    int64_t start, end, step;
  };
  for (Tensor x : {sample({3, 7}, 1), non_contiguous(sample({3, 7}, 2)), sample({1, 7}, 3).expand({3, 7})}) {
    for (Case c : {Case{1, 5, 1}, Case{-4, kMax, 2}, Case{-100, 100, 3}, Case{5, 2, 1}, Case{0, 7, 10},
                   Case{std::numeric_limits<int64_t>::min(), -1, kMax}}) {
      std::vector<int64_t> picked = python_range(7, c.start, c.end, c.step);
      Tensor y = x.slice(1, c.start, c.end, c.step);
      ASSERT_EQ(y.shape(), (Shape{3, static_cast<int64_t>(picked.size())}));
      EXPECT_TRUE(y.shares_storage_with(x));
      EXPECT_TRUE(all_close(y, gather_reference(x, y.shape(), [&](Index i) { return Index{i[0], picked[i[1]]}; })));
    }
  }
  EXPECT_TRUE(check_vjp("slice", {sample({5, 4}, 4)}, slice_attrs(0, -4, 5, 2)));
}

TEST(SliceOp, RejectsBadArguments) {
  Tensor x = sample({3, 4});
  expect_error<ValueError>([&] { x.slice(1, 0, 4, 0); }, {"slice:", "step must be positive, got 0"});
  expect_error<ValueError>([&] { x.slice(2, 0, 1); }, {"slice", "dim 2"});
  expect_error<ShapeError>([&] { Tensor::scalar(1.0).slice(0, 0, 1); }, {"slice:", "at least 1 dim", "f32[]"});
}

TEST(NarrowOp, IsASliceOfGivenLength) {
  Tensor x = non_contiguous(sample({3, 5}, 5));
  Tensor y = x.narrow(1, -4, 3);
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_TRUE(all_close(y, gather_reference(x, y.shape(), [](Index i) { return Index{i[0], i[1] + 1}; })));
  EXPECT_EQ(x.narrow(0, 3, 0).shape(), (Shape{0, 5}));
  expect_error<ValueError>([&] { x.narrow(1, 3, 3); }, {"narrow:", "start 3", "length 3", "size 5", "f64[3,5]"});
  expect_error<ValueError>([&] { x.narrow(1, -6, 1); }, {"narrow:"});
  EXPECT_TRUE(check_vjp("narrow", {x}, {{"dim", int64_t{1}}, {"start", int64_t{-4}}, {"length", int64_t{3}}}));
}

TEST(SelectOp, DropsTheDim) {
  Tensor x = sample({3, 4, 2}, 6);
  Tensor y = x.select(1, -1);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.offset(), 6);
  EXPECT_TRUE(y.shares_storage_with(x));
  EXPECT_TRUE(all_close(y, gather_reference(x, y.shape(), [](Index i) { return Index{i[0], 3, i[1]}; })));
  EXPECT_EQ(sample({4}, 7).select(0, 2).shape(), Shape{});
  expect_error<ValueError>([&] { x.select(1, 4); }, {"select:", "index 4", "size 4", "f64[3,4,2]"});
  expect_error<ValueError>([&] { x.select(0, -4); }, {"select:", "index -4"});
  EXPECT_TRUE(check_vjp("select", {non_contiguous(x)}, {{"dim", int64_t{2}}, {"index", int64_t{1}}}));
  EXPECT_TRUE(check_vjp("select", {sample({4}, 8)}, {{"dim", int64_t{0}}, {"index", int64_t{-2}}}));
}

TEST(SliceBackwardOp, ScattersIntoZeros) {
  Tensor grad = sample({2, 3}, 9);
  Tensor out = slice_backward(grad, {5, 3}, 0, 1, 5, 2);
  std::vector<double> expected(15, 0.0);
  std::vector<double> g = grad.to_vector<double>();
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 3; ++c) expected[(1 + 2 * r) * 3 + c] = g[r * 3 + c];
  }
  EXPECT_TRUE(all_close(out, expected));
  EXPECT_TRUE(all_close(slice_backward(non_contiguous(grad), {5, 3}, 0, 1, 5, 2), expected));
  expect_error<ShapeError>(
      [&] {
        slice_backward(grad, {5, 3}, 0, 0, 5, 1);
      },
      {"slice_backward:", "f64[2,3]", "[5,3]", "[5,3]"});
  expect_error<ShapeError>([&] { slice_backward(grad, {-5, 3}, 0, 0, 5, 1); }, {"slice_backward:", "negative"});
  EXPECT_TRUE(check_vjp(
      "slice_backward", {grad},
      {{"shape", Shape{5, 3}}, {"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}}));
}

TEST(SplitOp, GivesConsecutiveViews) {
  for (Tensor x : {sample({3, 6}, 10), non_contiguous(sample({3, 6}, 11))}) {
    std::vector<Tensor> parts = split(x, {1, 0, 2, 3}, -1);
    ASSERT_EQ(parts.size(), 4u);
    int64_t start = 0;
    for (const Tensor& part : parts) {
      EXPECT_TRUE(part.shares_storage_with(x));
      int64_t offset = start;
      EXPECT_TRUE(all_close(part, gather_reference(x, part.shape(), [&](Index i) {
                              return Index{i[0], i[1] + offset};
                            })));
      start += part.shape()[1];
    }
    EXPECT_TRUE(check_vjp("split", {x}, {{"sizes", Shape{1, 0, 2, 3}}, {"dim", int64_t{1}}}));
  }
  Tensor x = sample({3, 6});
  expect_error<ShapeError>([&] { split(x, {2, 2}, 1); }, {"split:", "[2,2]", "add up to 4", "f64[3,6]", "size 6"});
  expect_error<ShapeError>([&] { split(x, {-1, 7}, 1); }, {"split:", "negative"});
  expect_error<ValueError>([&] { split(x, {}, 1); }, {"split:"});
}

TEST(SplitOp, VjpFillsZerosForOutputsWithoutGradient) {
  Tensor x = sample({5, 2}, 12);
  const OpDef& op = builtin_registry().get("split");
  Attrs attrs = check_call(op, {x}, {{"sizes", Shape{2, 3}}});
  std::vector<Tensor> outputs = call(op, {x}, attrs);
  Tensor g1 = sample({3, 2}, 13);
  std::vector<Tensor> grads{Tensor(), g1};
  std::vector<Tensor> inputs{x};
  std::vector<Tensor> dx = op.vjp(VjpContext{inputs, outputs, grads, attrs});
  std::vector<double> expected(4, 0.0);
  for (double v : g1.to_vector<double>()) expected.push_back(v);
  EXPECT_TRUE(all_close(dx[0], expected));
  std::vector<Tensor> none{Tensor(), Tensor()};
  EXPECT_FALSE(op.vjp(VjpContext{inputs, outputs, none, attrs})[0].defined());
  // Meta gradients stay meta: the zeros are meta too.
  std::vector<Tensor> meta_grads{Tensor(), Tensor::meta({3, 2}, DType::Float64)};
  Tensor meta_dx = op.vjp(VjpContext{inputs, outputs, meta_grads, attrs})[0];
  EXPECT_TRUE(meta_dx.is_meta());
  EXPECT_EQ(meta_dx.shape(), (Shape{5, 2}));
}

TEST(ChunkOp, FollowsTorchChunk) {
  struct Case {
    int64_t size, chunks;
    std::vector<int64_t> sizes;
  };
  for (const Case& c : {Case{7, 3, {3, 3, 1}}, Case{6, 3, {2, 2, 2}}, Case{5, 4, {2, 2, 1}}, Case{2, 5, {1, 1}},
                        Case{0, 3, {0, 0, 0}}, Case{1, 1, {1}}}) {
    Tensor x = sample({2, c.size}, 14);
    std::vector<Tensor> parts = chunk(x, c.chunks, 1);
    std::vector<int64_t> sizes;
    for (const Tensor& part : parts) sizes.push_back(part.shape()[1]);
    EXPECT_EQ(sizes, c.sizes) << "size " << c.size << " in " << c.chunks << " chunks";
  }
  Tensor x = non_contiguous(sample({7, 2}, 15));
  std::vector<Tensor> parts = chunk(x, 3);
  EXPECT_TRUE(all_close(parts[2], gather_reference(x, {1, 2}, [](Index i) { return Index{6, i[1]}; })));
  expect_error<ValueError>([&] { chunk(x, 0); }, {"chunk:", "chunks must be positive"});
  EXPECT_TRUE(check_vjp("chunk", {x}, {{"chunks", int64_t{3}}}));
}

TEST(SliceOps, MetaInputsGiveMetaOutputs) {
  Tensor huge = Tensor::meta({70'000'000'000}, DType::BFloat16);
  EXPECT_EQ(huge.slice(0, 10, -10, 3).shape(), (Shape{23'333'333'327}));
  EXPECT_EQ(huge.narrow(0, 5, 7).shape(), (Shape{7}));
  EXPECT_EQ(huge.select(0, -1).shape(), Shape{});
  std::vector<Tensor> parts = chunk(huge, 4);
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_TRUE(parts[3].is_meta());
  EXPECT_EQ(parts[3].shape(), (Shape{17'500'000'000}));
  Tensor back = slice_backward(Tensor::meta({7}, DType::BFloat16), {70'000'000'000}, 0, 5, 12, 1);
  EXPECT_TRUE(back.is_meta());
}

}  // namespace
}  // namespace px
