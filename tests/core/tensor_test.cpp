#include "parallax/core/tensor.h"

#include <gtest/gtest.h>

namespace px {
namespace {

TEST(Tensor, FromVectorRoundTrips) {
  Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Strides{3, 1}));
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace px
