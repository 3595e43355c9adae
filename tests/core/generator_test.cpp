#include "parallax/core/generator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace px {
namespace {

TEST(Philox, IsAPureFunctionOfKeyAndCounter) {
  auto a = philox4x32({1, 2, 3, 4}, 99);
  EXPECT_EQ(a, philox4x32({1, 2, 3, 4}, 99));
  EXPECT_NE(a, philox4x32({1, 2, 3, 5}, 99));
  EXPECT_NE(a, philox4x32({1, 2, 3, 4}, 100));
  // Known-answer test of Philox4x32-10 (Random123's kat_vectors: zero counter, zero key).
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, 0), (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(Philox, SubRangesByOffsetReproduceTheFullStream) {
  // Drawing elements [k, k+n) of a stream at offset o equals drawing n elements at offset o + k.
  for (uint64_t k : {0u, 1u, 7u, 1000u}) {
    for (uint64_t i = 0; i < 16; ++i) {
      EXPECT_EQ(philox_uniform(5, 3, k + i), philox_uniform(5, 3 + k, i));
      EXPECT_EQ(philox_normal(5, 3, k + i), philox_normal(5, 3 + k, i));
    }
  }
  EXPECT_NE(philox_uniform(5, 0, 0), philox_uniform(6, 0, 0));
}

TEST(Philox, UniformAndNormalMoments) {
  constexpr int kCount = 200'000;
  double usum = 0, usq = 0, nsum = 0, nsq = 0;
  std::set<double> distinct;
  for (uint64_t i = 0; i < kCount; ++i) {
    double u = philox_uniform(11, 0, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    usum += u;
    usq += u * u;
    double n = philox_normal(11, 0, i);
    ASSERT_TRUE(std::isfinite(n));
    nsum += n;
    nsq += n * n;
    if (i < 1000) distinct.insert(u);
  }
  double umean = usum / kCount, nmean = nsum / kCount;
  EXPECT_NEAR(umean, 0.5, 0.005);
  EXPECT_NEAR(usq / kCount - umean * umean, 1.0 / 12.0, 0.002);
  EXPECT_NEAR(nmean, 0.0, 0.01);
  EXPECT_NEAR(nsq / kCount - nmean * nmean, 1.0, 0.015);
  EXPECT_EQ(distinct.size(), 1000u);
}

TEST(Generator, AdvancesByTheCountDrawn) {
  Generator gen(42);
  EXPECT_EQ(gen.seed(), 42u);
  EXPECT_EQ(gen.advance(10), 0u);
  EXPECT_EQ(gen.advance(5), 10u);
  EXPECT_EQ(gen.offset(), 15u);
  Generator other(42);
  EXPECT_EQ(other.offset(), 0u) << "generators share no state";
}

}  // namespace
}  // namespace px
