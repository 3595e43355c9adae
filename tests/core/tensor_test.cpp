#include "parallax/core/tensor.h"

#include <gtest/gtest.h>

#include <sstream>

#include "parallax/ops/factory.h"
#include "parallax/ops/shape.h"

namespace px {
namespace {

TEST(Tensor, FromVectorRoundTrips) {
  Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Strides{3, 1}));
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Tensor::scalar(2.5, DType::Float64).item<double>(), 2.5);
  EXPECT_THROW(Tensor::from_vector({1, 2, 3}, {2, 2}), ShapeError);
  EXPECT_THROW(t.item<double>(), ValueError);
}

TEST(Tensor, DataAccessChecksDtypeAndKind) {
  Tensor t = Tensor::from_vector({1, 2}, {2}, DType::Float64);
  EXPECT_EQ(t.data<double>()[1], 2.0);
  EXPECT_THROW(t.data<float>(), DTypeError);
  EXPECT_THROW(Tensor::meta({2}).data<float>(), ValueError);
  EXPECT_THROW(Tensor().shape(), ValueError);
  EXPECT_THROW(Tensor::empty({2, -1}), ShapeError);
}

TEST(TensorViews, ShareStorageWithTheRightStridesAndOffset) {
  Tensor x = arange(0, 24, 1, DType::Float32).view({2, 3, 4});
  EXPECT_EQ(x.strides(), (Strides{12, 4, 1}));

  Tensor t = x.transpose(1, 2);
  EXPECT_EQ(t.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(t.strides(), (Strides{12, 1, 4}));
  EXPECT_FALSE(t.is_contiguous());

  Tensor s = x.slice(2, 1, 4, 2);
  EXPECT_EQ(s.strides(), (Strides{12, 4, 2}));
  EXPECT_EQ(s.offset(), 1);

  Tensor sel = x.select(1, 2);
  EXPECT_EQ(sel.strides(), (Strides{12, 1}));
  EXPECT_EQ(sel.offset(), 8);
  EXPECT_EQ(sel.to_vector<double>(), (std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23}));

  Tensor n = x.narrow(0, 1, 1);
  EXPECT_EQ(n.offset(), 12);

  Tensor e = x.select(2, 0).unsqueeze(2).expand({2, 3, 5});
  EXPECT_EQ(e.strides(), (Strides{12, 4, 0}));

  for (const Tensor& v : {t, s, sel, n, e, x.permute({2, 0, 1}), x.squeeze(), x.unsqueeze(0), x.reshape({6, 4})}) {
    EXPECT_TRUE(v.shares_storage_with(x));
  }
  // Writing through a view is visible in the base.
  sel.data<float>()[0] = -1;
  EXPECT_EQ(x.to_vector<double>()[8], -1);
}

TEST(TensorViews, ContiguousCloneAndTo) {
  Tensor x = arange(0, 6, 1, DType::Float64).view({2, 3});
  Tensor t = x.transpose(0, 1);
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage_with(x));
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(x.contiguous().same(x));
  EXPECT_FALSE(x.clone().shares_storage_with(x));
  Tensor half = t.to(DType::BFloat16);
  EXPECT_EQ(half.dtype(), DType::BFloat16);
  EXPECT_EQ(half.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(TensorMeta, SeventyBillionElementsCostNothing) {
  Tensor huge = Tensor::meta({70'000'000'000}, DType::Float32);
  EXPECT_TRUE(huge.is_meta());
  EXPECT_EQ(huge.numel(), 70'000'000'000);
  EXPECT_EQ(huge.storage(), nullptr);
  Tensor w = huge.view({70'000, 1'000'000});
  Tensor v = w.transpose(0, 1).slice(0, 0, 10).unsqueeze(0).expand({8, -1, -1}).select(0, 3).reshape({-1});
  EXPECT_TRUE(v.is_meta());
  EXPECT_EQ(v.shape(), (Shape{700'000}));
  Tensor z = zeros({70'000'000'000}, DType::BFloat16, /*meta=*/true);
  EXPECT_TRUE(z.is_meta());
  EXPECT_EQ(to_string(z), "Tensor(bf16[70000000000], meta)");
}

TEST(TensorPrinting, ShowsShapeDtypeAndValues) {
  EXPECT_EQ(to_string(Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3})), "Tensor(f32[2,3], [[1, 2, 3], [4, 5, 6]])");
  EXPECT_EQ(to_string(Tensor::scalar(7, DType::Int64)), "Tensor(i64[], 7)");
  EXPECT_EQ(to_string(Tensor::from_vector({1, 0}, {2}, DType::Bool)), "Tensor(bool[2], [true, false])");
  EXPECT_EQ(to_string(Tensor()), "Tensor(undefined)");
  EXPECT_EQ(to_string(Tensor::meta({4, 8}, DType::Float64)), "Tensor(f64[4,8], meta)");
}

TEST(TensorPrinting, AbbreviatesLongDims) {
  std::string text = to_string(arange(0, 100, 1, DType::Int64));
  EXPECT_EQ(text, "Tensor(i64[100], [0, 1, 2, ..., 97, 98, 99])");
  std::string matrix = to_string(arange(0, 80, 1, DType::Int64).view({10, 8}));
  EXPECT_EQ(matrix.rfind("Tensor(i64[10,8], [[0, 1, 2, ..., 5, 6, 7], [8, 9, 10, ..., 13, 14, 15], [16,", 0), 0u)
      << matrix;
  EXPECT_NE(matrix.find("..., [56,"), std::string::npos) << matrix;
  // Printing reads through strides: a transposed view prints its logical order.
  EXPECT_EQ(to_string(arange(0, 4, 1, DType::Int64).view({2, 2}).transpose(0, 1)),
            "Tensor(i64[2,2], [[0, 2], [1, 3]])");
}

}  // namespace
}  // namespace px
