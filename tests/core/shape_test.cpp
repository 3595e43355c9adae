#include "parallax/core/shape.h"

#include <gtest/gtest.h>

#include "parallax/core/error.h"

namespace px {
namespace {

TEST(Shape, NumelAndContiguousStrides) {
  EXPECT_EQ(numel(Shape{}), 1);
  EXPECT_EQ(numel(Shape{2, 3, 4}), 24);
  EXPECT_EQ(numel(Shape{2, 0, 4}), 0);
  EXPECT_EQ(contiguous_strides(Shape{2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(contiguous_strides(Shape{}), Strides{});
  EXPECT_EQ(contiguous_strides(Shape{2, 0, 3}), (Strides{3, 3, 1}));
  EXPECT_EQ(numel(Shape{70'000, 1'000'000}), 70'000'000'000);
}

TEST(Shape, Printing) {
  EXPECT_EQ(shape_str(Shape{}), "[]");
  EXPECT_EQ(shape_str(Shape{4, 8}), "[4,8]");
  EXPECT_EQ((TensorMeta{{4, 8}, DType::Float32}).str(), "f32[4,8]");
  EXPECT_EQ((TensorMeta{{}, DType::BFloat16}).str(), "bf16[]");
  EXPECT_EQ((TensorMeta{{2, 3}, DType::Float64}).nbytes(), 48);
}

TEST(Shape, NormalizeDim) {
  EXPECT_EQ(normalize_dim(-1, 3, "op"), 2);
  EXPECT_EQ(normalize_dim(0, 3, "op"), 0);
  EXPECT_EQ(normalize_dim(-1, 0, "op"), 0) << "a scalar accepts 0 and -1";
  EXPECT_THROW(normalize_dim(3, 3, "op"), ValueError);
  EXPECT_THROW(normalize_dim(-4, 3, "op"), ValueError);
  try {
    normalize_dim(5, 2, "sum");
    FAIL();
  } catch (const ValueError& error) {
    EXPECT_NE(std::string(error.what()).find("sum: dim 5 is out of range for a tensor of rank 2"), std::string::npos)
        << error.what();
  }
}

TEST(Shape, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes(Shape{3, 1}, Shape{4}, "add"), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{2, 3}, "add"), (Shape{2, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{2, 1, 5}, Shape{1, 4, 1}, "add"), (Shape{2, 4, 5}));
  EXPECT_EQ(broadcast_shapes(Shape{0, 1}, Shape{1, 3}, "add"), (Shape{0, 3}));
}

TEST(Shape, BroadcastErrorNamesTheOpAndBothShapes) {
  EXPECT_THROW(broadcast_shapes(Shape{2, 3}, Shape{4}, "mul"), ShapeError);
  try {
    broadcast_shapes(Shape{8, 512}, Shape{256}, "add");
    FAIL();
  } catch (const ShapeError& error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind("ShapeError: add:", 0), 0u) << message;
    EXPECT_NE(message.find("[8,512]"), std::string::npos);
    EXPECT_NE(message.find("[256]"), std::string::npos);
    EXPECT_NE(message.find("512 vs 256"), std::string::npos);
  }
}

}  // namespace
}  // namespace px
