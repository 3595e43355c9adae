#include "parallax/core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "parallax/core/error.h"

namespace px {
namespace {

TEST(DType, NamesAndSizesRoundTrip) {
  for (DType dtype : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  EXPECT_EQ(dtype_name(DType::Float32), "f32");
  EXPECT_EQ(dtype_name(DType::BFloat16), "bf16");
  EXPECT_EQ(dtype_size(DType::Float64), 8);
  EXPECT_EQ(dtype_size(DType::BFloat16), 2);
  EXPECT_EQ(dtype_size(DType::Bool), 1);
  EXPECT_TRUE(is_floating(DType::BFloat16));
  EXPECT_FALSE(is_floating(DType::Int64));
  EXPECT_FALSE(is_floating(DType::Bool));
}

TEST(DType, UnknownNameIsAValueErrorListingTheChoices) {
  EXPECT_THROW(parse_dtype("float32"), ValueError);
  try {
    parse_dtype("f16");
  } catch (const ValueError& error) {
    EXPECT_NE(std::string(error.what()).find("'f16'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("bf16"), std::string::npos);
  }
}

float bf16_round_trip(float value) { return static_cast<float>(BFloat16(value)); }

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(bf16_round_trip(1.0f), 1.0f);
  EXPECT_EQ(bf16_round_trip(1.00390625f), 1.0f);       // 1 + 2^-8: tie, stays even
  EXPECT_EQ(bf16_round_trip(1.01171875f), 1.015625f);  // 1 + 3*2^-8: tie, rounds up to even
  EXPECT_EQ(bf16_round_trip(1.005f), 1.0078125f);      // above the tie: rounds up
  EXPECT_EQ(bf16_round_trip(-3.0f), -3.0f);
  EXPECT_EQ(bf16_round_trip(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(bf16_round_trip(-0.0f)));
  EXPECT_TRUE(std::isinf(bf16_round_trip(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(bf16_round_trip(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lives only in the low bits must stay a NaN (not turn into inf).
  EXPECT_TRUE(std::isnan(bf16_round_trip(std::bit_cast<float>(0x7f800001u))));
  // The largest float rounds to inf, as IEEE rounding requires.
  EXPECT_TRUE(std::isinf(bf16_round_trip(std::numeric_limits<float>::max())));
}

TEST(BFloat16, KeepsEightSignificantBits) {
  for (float value : {0.1f, 3.14159f, 1e-20f, 6.5e4f, -123.456f}) {
    float rounded = bf16_round_trip(value);
    EXPECT_LE(std::abs(rounded - value), std::abs(value) * (1.0f / 256.0f)) << value;
  }
}

TEST(DType, VisitDispatchesOnTheStorageType) {
  EXPECT_EQ(visit_dtype(DType::Int64, [](auto zero) { return sizeof(zero); }), 8u);
  EXPECT_EQ(visit_dtype(DType::BFloat16, [](auto zero) { return sizeof(zero); }), 2u);
  EXPECT_EQ(dtype_of<double>(), DType::Float64);
}

}  // namespace
}  // namespace px
