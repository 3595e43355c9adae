// view, reshape, permute, transpose, expand, squeeze, unsqueeze: values against
// naive index arithmetic, aliasing and strides, VJPs, errors, meta inputs.

#include <gtest/gtest.h>

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

TEST(ViewOp, SharesStorageAndKeepsRowMajorOrder) {
  Tensor x = sample({2, 3, 4});
  Tensor y = view(x, {6, -1});
  EXPECT_EQ(y.shape(), (Shape{6, 4}));
  EXPECT_TRUE(y.shares_storage_with(x));
  EXPECT_EQ(y.strides(), (Strides{4, 1}));
  EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>());
  EXPECT_TRUE(builtin_registry().get("view").traits.view);
}

TEST(ViewOp, FollowsTheStrideCompatibilityRule) {
  // [4,3] stored transposed: splitting dim 0 keeps a view, merging the two dims cannot.
  Tensor x = non_contiguous(sample({4, 3}, 1));
  Tensor split = x.view({2, 2, 3});
  EXPECT_TRUE(split.shares_storage_with(x));
  EXPECT_EQ(split.strides(), (Strides{2, 1, 4}));
  EXPECT_TRUE(all_close(split, gather_reference(x, {2, 2, 3}, [](Index i) { return Index{i[0] * 2 + i[1], i[2]}; })));
  expect_error<ShapeError>([&] { x.view({12}); }, {"view:", "f64[4,3]", "[12]", "use reshape"});
  // Size-1 dims and expanded (stride 0) dims view fine.
  Tensor row = sample({1, 5}, 2).expand({3, 5});
  EXPECT_EQ(row.view({3, 1, 5}).strides(), (Strides{0, 5, 1}));
  Tensor scalar = Tensor::scalar(4.0, DType::Float64);
  EXPECT_EQ(scalar.view({1, 1}).shape(), (Shape{1, 1}));
  EXPECT_EQ(scalar.view({1, 1}).view({}).item<double>(), 4.0);
}

TEST(ViewOp, RejectsBadShapes) {
  Tensor x = sample({2, 3});
  expect_error<ShapeError>([&] { x.view({4, 2}); }, {"view:", "[4,2]", "f64[2,3]", "6 elements"});
  expect_error<ShapeError>([&] { x.view({-1, -1}); }, {"view:", "only one -1"});
  expect_error<ShapeError>([&] { x.view({4, -1}); }, {"view:", "[4,-1]"});
  expect_error<ShapeError>([&] { x.view({-2, 3}); }, {"view:"});
  EXPECT_EQ(Tensor::empty({0, 3}).view({3, 0, 5}).shape(), (Shape{3, 0, 5})) << "empty tensors view freely";
  expect_error<ShapeError>([] { Tensor::empty({0, 3}).view({-1, 0}); }, {"view:", "f32[0,3]"});
}

TEST(ReshapeOp, ViewsWhenPossibleAndCopiesOtherwise) {
  Tensor x = sample({3, 4}, 3);
  Tensor flat = reshape(x, {-1});
  EXPECT_TRUE(flat.shares_storage_with(x));
  Tensor t = non_contiguous(x);
  Tensor copied = t.reshape({12});
  EXPECT_FALSE(copied.shares_storage_with(t));
  EXPECT_TRUE(copied.is_contiguous());
  EXPECT_TRUE(all_close(copied, x.to_vector<double>()));
  // Broadcast input: reshape materializes the repeated values.
  Tensor b = sample({1, 3}, 4).expand({2, 3});
  EXPECT_TRUE(all_close(b.reshape({6}), gather_reference(b, {6}, [](Index i) { return Index{i[0] / 3, i[0] % 3}; })));
  expect_error<ShapeError>([&] { x.reshape({5, -1}); }, {"reshape:", "[5,-1]", "f64[3,4]"});
  EXPECT_TRUE(check_vjp("reshape", {t}, {{"shape", Shape{2, 6}}}));
  EXPECT_TRUE(check_vjp("view", {x}, {{"shape", Shape{2, 2, 3}}}));
}

TEST(PermuteOp, MatchesNaiveIndexing) {
  for (Tensor x : {sample({2, 3, 4}, 5), non_contiguous(sample({2, 3, 4}, 6))}) {
    Tensor y = permute(x, {2, 0, 1});
    EXPECT_EQ(y.shape(), (Shape{4, 2, 3}));
    EXPECT_TRUE(y.shares_storage_with(x));
    EXPECT_TRUE(all_close(y, gather_reference(x, y.shape(), [](Index i) { return Index{i[1], i[2], i[0]}; })));
    EXPECT_TRUE(check_vjp("permute", {x}, {{"dims", Shape{2, 0, -2}}}));
  }
  Tensor x = sample({2, 3});
  expect_error<ValueError>([&] { x.permute({0, 0}); }, {"permute:", "[0,0]", "f64[2,3]"});
  expect_error<ValueError>([&] { x.permute({0}); }, {"permute:", "f64[2,3]"});
  expect_error<ValueError>([&] { x.permute({0, 2}); }, {"permute:"});
}

TEST(TransposeOp, SwapsShapeAndStrides) {
  Tensor x = sample({2, 3, 4}, 7);
  Tensor y = x.transpose(0, -1);
  EXPECT_EQ(y.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(y.strides(), (Strides{1, 4, 12}));
  EXPECT_TRUE(all_close(y, gather_reference(x, y.shape(), [](Index i) { return Index{i[2], i[1], i[0]}; })));
  EXPECT_TRUE(check_vjp("transpose", {non_contiguous(x)}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}));
  Tensor scalar = Tensor::scalar(2.0);
  EXPECT_EQ(scalar.transpose(0, -1).shape(), Shape{});
  expect_error<ValueError>([&] { x.transpose(0, 3); }, {"transpose", "dim 3", "rank 3"});
}

TEST(ExpandOp, BroadcastsWithZeroStrides) {
  Tensor x = sample({3, 1}, 8);
  Tensor y = x.expand({2, 3, 4});
  EXPECT_EQ(y.strides(), (Strides{0, 1, 0}));
  EXPECT_TRUE(y.shares_storage_with(x));
  EXPECT_TRUE(all_close(y, gather_reference(x, y.shape(), [](Index i) { return Index{i[1], 0}; })));
  EXPECT_EQ(x.expand({-1, 5}).shape(), (Shape{3, 5}));
  EXPECT_TRUE(check_vjp("expand", {x}, {{"shape", Shape{2, 3, 4}}}));
  EXPECT_TRUE(check_vjp("expand", {non_contiguous(sample({1, 3}, 9))}, {{"shape", Shape{4, -1}}}));
  expect_error<ShapeError>([&] { x.expand({2, 4}); }, {"expand:", "f64[3,1]", "[2,4]", "size 3 cannot become 2"});
  expect_error<ShapeError>([&] { x.expand({1}); }, {"expand:", "fewer dims"});
  expect_error<ShapeError>([&] { x.expand({-1, 3, 1}); }, {"expand:", "leading"});
}

TEST(SqueezeOp, RemovesSizeOneDims) {
  Tensor x = sample({1, 3, 1, 2}, 10);
  EXPECT_EQ(x.squeeze().shape(), (Shape{3, 2}));
  EXPECT_EQ(x.squeeze(2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(x.squeeze(1).shape(), (Shape{1, 3, 1, 2})) << "a dim that is not size 1 stays, as in torch";
  EXPECT_EQ(squeeze(x, {0, -2}).shape(), (Shape{3, 2}));
  EXPECT_TRUE(x.squeeze().shares_storage_with(x));
  EXPECT_TRUE(all_close(x.squeeze(), x.to_vector<double>()));
  EXPECT_EQ(Tensor::scalar(1.0).squeeze(0).shape(), Shape{});
  expect_error<ValueError>([&] { squeeze(x, {0, 0}); }, {"squeeze:", "twice"});
  expect_error<ValueError>([&] { x.squeeze(4); }, {"squeeze", "dim 4"});
  EXPECT_TRUE(check_vjp("squeeze", {x}, {}));
}

TEST(UnsqueezeOp, InsertsSizeOneDims) {
  Tensor x = sample({3, 2}, 11);
  EXPECT_EQ(x.unsqueeze(0).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{3, 2, 1}));
  EXPECT_EQ(x.unsqueeze(1).strides(), (Strides{2, 2, 1}));
  EXPECT_TRUE(x.unsqueeze(2).is_contiguous());
  EXPECT_TRUE(x.unsqueeze(1).shares_storage_with(x));
  EXPECT_EQ(Tensor::scalar(3.0).unsqueeze(0).shape(), (Shape{1}));
  expect_error<ValueError>([&] { x.unsqueeze(3); }, {"unsqueeze", "dim 3"});
  EXPECT_TRUE(check_vjp("unsqueeze", {non_contiguous(x)}, {{"dim", int64_t{1}}}));
}

TEST(ViewOps, MetaInputsGiveMetaOutputsWithoutStorage) {
  Tensor huge = Tensor::meta({70'000, 1'000'000}, DType::Float32);  // 70e9 elements, nothing allocated
  Tensor y = huge.view({70'000, 1000, 1000}).permute({2, 0, 1}).unsqueeze(0).expand({4, -1, -1, -1});
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.shape(), (Shape{4, 1000, 70'000, 1000}));
  EXPECT_EQ(huge.reshape({-1}).shape(), (Shape{70'000'000'000}));
  EXPECT_EQ(huge.transpose(0, 1).squeeze().shape(), (Shape{1'000'000, 70'000}));
  EXPECT_EQ(y.storage(), nullptr);
  expect_error<ShapeError>([&] { huge.view({3, -1}); }, {"view:", "f32[70000,1000000]"});
}

}  // namespace
}  // namespace px
