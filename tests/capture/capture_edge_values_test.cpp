// Non-tensor inputs at the edges of their types: NaN, signed zeros, infinities, denormals and the
// largest integers are baked into a captured program and guarded by what a program can tell
// apart (core/float_identity.h), not by `==`, so compiled and eager answers never differ.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "parallax/capture/capture.h"
#include "parallax/core/float_identity.h"
#include "parallax/ir/parser.h"
#include "parallax/ir/printer.h"
#include "parallax/ir/verifier.h"
#include "parallax/ops/elementwise.h"
#include "support/test_util.h"

namespace px {
namespace {

using Limits = std::numeric_limits<double>;

// 1/scale tells 0.0 from -0.0 (inf against -inf) and NaN from everything.
Tensor scaled_by_reciprocal(const Tensor& x, double scale) { return x * (1.0 / scale); }

Tensor shifted_by_count(const Tensor& x, int64_t count) { return x + static_cast<double>(count % 7); }

CapturedProgram capture_reciprocal(double scale) {
  return capture(scaled_by_reciprocal, std::make_tuple(testing::random_tensor({2, 3}), scale));
}

// Bit-for-bit agreement, NaNs included (all_close with zero tolerance treats NaN as a mismatch).
::testing::AssertionResult same_values(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) return ::testing::AssertionFailure() << "shapes differ";
  Tensor a = actual.contiguous(), e = expected.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<double>()[i], y = e.data<double>()[i];
    if (!same_double(x, y)) return ::testing::AssertionFailure() << "element " << i << ": " << x << " against " << y;
  }
  return ::testing::AssertionSuccess();
}

TEST(CaptureEdgeValues, NaNCapturesVerifiesAndRunsLikeEager) {
  const double nan = Limits::quiet_NaN();
  CapturedProgram program = capture_reciprocal(nan);  // the verifier runs on the captured graph
  EXPECT_TRUE(ir::verify_errors(program.graph()).empty());
  Tensor x = testing::random_tensor({2, 3}, DType::Float64, 5);
  EXPECT_TRUE(same_values(program.call<Tensor>(x, nan), scaled_by_reciprocal(x, nan)));
  // Every NaN is the same value to a program: another payload or sign passes the guard.
  EXPECT_NO_THROW(program.call<Tensor>(x, -nan));
  std::string message = testing::error_message([&] { program.call<Tensor>(x, 1.0); });
  EXPECT_NE(message.find("traced as nan, called with 1.0"), std::string::npos) << message;
}

TEST(CaptureEdgeValues, NegativeZeroIsAnotherValue) {
  Tensor x = testing::random_tensor({2, 3}, DType::Float64, 6);
  CapturedProgram positive = capture_reciprocal(0.0);
  EXPECT_TRUE(same_values(positive.call<Tensor>(x, 0.0), scaled_by_reciprocal(x, 0.0)));
  std::string message = testing::error_message([&] { positive.call<Tensor>(x, -0.0); });
  EXPECT_NE(message.find("traced as 0.0, called with -0.0"), std::string::npos) << message;

  CapturedProgram negative = capture_reciprocal(-0.0);
  EXPECT_TRUE(same_values(negative.call<Tensor>(x, -0.0), scaled_by_reciprocal(x, -0.0)));
  message = testing::error_message([&] { negative.call<Tensor>(x, 0.0); });
  EXPECT_NE(message.find("traced as -0.0, called with 0.0"), std::string::npos) << message;
}

TEST(CaptureEdgeValues, InfinitiesDenormalsAndExtremesGuardExactly) {
  Tensor x = testing::random_tensor({2, 3}, DType::Float64, 7);
  for (double value : {Limits::infinity(), -Limits::infinity(), Limits::denorm_min(), -Limits::denorm_min(),
                       Limits::min(), Limits::max(), Limits::lowest()}) {
    SCOPED_TRACE(value);
    CapturedProgram program = capture_reciprocal(value);
    EXPECT_TRUE(same_values(program.call<Tensor>(x, value), scaled_by_reciprocal(x, value)));
    // The nearest double towards zero is another value (for a denormal minimum, that is zero).
    const double neighbour = std::nextafter(value, 0.0);
    EXPECT_THROW(program.call<Tensor>(x, neighbour), Error);
  }
}

TEST(CaptureEdgeValues, LargestIntegersGuardExactly) {
  Tensor x = testing::random_tensor({2, 3}, DType::Float64, 8);
  using IntLimits = std::numeric_limits<int64_t>;
  for (int64_t value : {IntLimits::max(), IntLimits::min(), int64_t{1} << 53, (int64_t{1} << 53) + 1}) {
    SCOPED_TRACE(value);
    CapturedProgram program = capture(shifted_by_count, std::make_tuple(x, value));
    EXPECT_TRUE(same_values(program.call<Tensor>(x, value), shifted_by_count(x, value)));
    // Neighbours that a double could not tell apart are still other integers.
    const int64_t neighbour = value == IntLimits::max() ? value - 1 : value + 1;
    EXPECT_THROW(program.call<Tensor>(x, neighbour), Error);
    // A double of the same magnitude is another kind of value.
    EXPECT_THROW(program.call<Tensor>(x, static_cast<double>(value)), Error);
  }
}

TEST(AttrEquality, NaNEqualsItselfAndSignedZerosDiffer) {
  const double nan = Limits::quiet_NaN();
  EXPECT_EQ((Attrs{{"scalar", nan}}), (Attrs{{"scalar", -nan}}));
  EXPECT_NE((Attrs{{"scalar", 0.0}}), (Attrs{{"scalar", -0.0}}));
  EXPECT_EQ((Attrs{{"scalar", -0.0}}), (Attrs{{"scalar", -0.0}}));
  EXPECT_EQ((Attrs{{"scalar", Limits::denorm_min()}}), (Attrs{{"scalar", Limits::denorm_min()}}));
  EXPECT_NE((Attrs{{"scalar", Limits::denorm_min()}}), (Attrs{{"scalar", 0.0}}));
  EXPECT_NE((Attrs{{"scalar", 1.0}}), (Attrs{{"scalar", int64_t{1}}}));  // a double is not an int
  EXPECT_NE((Attrs{{"scalar", 1.0}}), (Attrs{{"other", 1.0}}));
}

TEST(AttrEquality, EdgeValuesSurviveTheIrText) {
  for (double value : {Limits::quiet_NaN(), -0.0, 0.0, Limits::infinity(), -Limits::infinity(), Limits::denorm_min(),
                       Limits::max(), Limits::lowest()}) {
    SCOPED_TRACE(value);
    CapturedProgram program = capture_reciprocal(1.0 / value);
    const std::string text = ir::print(program.graph());
    ir::Graph parsed = ir::parse(text);
    EXPECT_TRUE(ir::verify_errors(parsed).empty()) << text;
    ASSERT_EQ(parsed.nodes().size(), program.graph().nodes().size());
    for (size_t i = 0; i < parsed.nodes().size(); ++i) {
      EXPECT_EQ(parsed.nodes()[i].attrs, program.graph().nodes()[i].attrs) << text;
    }
  }
}

TEST(FloatIdentity, ComparesWhatAProgramCanTellApart) {
  const double nan = Limits::quiet_NaN();
  EXPECT_TRUE(same_double(nan, nan));
  EXPECT_TRUE(same_double(nan, -nan));
  EXPECT_FALSE(same_double(nan, 0.0));
  EXPECT_FALSE(same_double(0.0, -0.0));
  EXPECT_TRUE(same_double(-0.0, -0.0));
  EXPECT_TRUE(same_double(Limits::infinity(), Limits::infinity()));
  EXPECT_FALSE(same_double(Limits::infinity(), -Limits::infinity()));
  EXPECT_FALSE(same_double(Limits::denorm_min(), 0.0));
}

}  // namespace
}  // namespace px
