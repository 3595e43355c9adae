// Randomized sequences (fixed seeds) of scenario regions over both subclasses: a reference world
// runs every step eagerly, a mixed world runs each step eagerly or compiled at random, reusing its
// compiled programs across steps (recompiling where the guards ask). Outputs and the subclass
// inputs' states agree after every step.

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>

#include "subclass/capture_regions.h"
#include "support/test_util.h"

namespace px {
namespace {

using subclass_test::make_masking;
using subclass_test::make_scaled;
using subclass_test::MaskingTensor;
using subclass_test::Mode;
using subclass_test::run_region;
using subclass_test::same_state;
using testing::random_ints;
using testing::random_tensor;

constexpr int64_t kLo = 3;
constexpr int64_t kHi = 9;
constexpr int kSequences = 20;
constexpr int kSteps = 12;

// One world's persistent subclass inputs plus the last rows region A produced.
struct World {
  Tensor idx;   // MaskingTensor over i64 [7]
  Tensor w;     // ScaledTensor over f32 [3, 4]
  Tensor rows;  // output of the last masking region A
};

World make_world(uint64_t seed) {
  return {make_masking(random_ints({7}, 0, 12, seed), kLo, kHi),
          make_scaled(random_tensor({3, 4}, DType::Float32, seed + 1, -2.0, 2.0)), Tensor()};
}

// The mixed world's programs, one per region, created on first compiled use.
struct Programs {
  std::optional<CapturedProgram> masking_a, masking_b, scaled_a, scaled_b;
};

TEST(SubclassSequences, RandomMixesOfEagerAndCompiledStepsMatchEager) {
  int compiled_steps = 0;
  for (int sequence = 0; sequence < kSequences; ++sequence) {
    auto seed = static_cast<uint64_t>(1000 + 17 * sequence);
    std::mt19937_64 choices(seed);
    World ref = make_world(seed);
    World mixed = make_world(seed);
    Programs programs;
    for (int step = 0; step < kSteps; ++step) {
      bool masking = std::uniform_int_distribution<int>(0, 1)(choices) == 0;
      Mode mode = std::uniform_int_distribution<int>(0, 1)(choices) == 0 ? Mode::Eager : Mode::Compiled;
      bool region_a = std::uniform_int_distribution<int>(0, 1)(choices) == 0;
      auto step_seed = seed * 100 + static_cast<uint64_t>(step);
      std::string what;
      Tensor want;
      Tensor got;
      if (masking) {
        // The only valid region: A when no mask is stashed, B when one is.
        region_a = subclass_as<MaskingTensor>(ref.idx)->state() == "plain";
        what = region_a ? "masking A" : "masking B";
        if (region_a) {
          Tensor weight = random_tensor({kHi - kLo, 4}, DType::Float32, step_seed);
          Tensor weight_copy = random_tensor({kHi - kLo, 4}, DType::Float32, step_seed);
          want = ref.rows = subclass_test::masking_a(weight, ref.idx);
          got = mixed.rows = run_region(mode, subclass_test::masking_a, programs.masking_a, weight_copy, mixed.idx,
                                        subclass_test::recompiling());
        } else {
          want = subclass_test::masking_b(ref.rows, ref.idx);
          got = run_region(mode, subclass_test::masking_b, programs.masking_b, mixed.rows, mixed.idx,
                           subclass_test::recompiling());
        }
      } else {
        what = region_a ? "scaled A" : "scaled B";
        Shape shape = region_a ? Shape{2, 3} : Shape{3, 4};
        Tensor x = random_tensor(shape, DType::Float32, step_seed);
        Tensor x_copy = random_tensor(shape, DType::Float32, step_seed);
        want = region_a ? subclass_test::scaled_a(x, ref.w) : subclass_test::scaled_b(x, ref.w);
        got =
            run_region(mode, region_a ? subclass_test::scaled_a : subclass_test::scaled_b,
                       region_a ? programs.scaled_a : programs.scaled_b, x_copy, mixed.w, subclass_test::recompiling());
      }
      compiled_steps += mode == Mode::Compiled ? 1 : 0;
      SCOPED_TRACE("sequence " + std::to_string(sequence) + ", step " + std::to_string(step) + ": " + what + " " +
                   subclass_test::mode_name(mode));
      EXPECT_TRUE(subclass_test::bitwise_equal(got, want));
      EXPECT_TRUE(same_state(mixed.idx, ref.idx));
      EXPECT_TRUE(same_state(mixed.w, ref.w));
      if (::testing::Test::HasFailure()) return;  // one divergence makes every later step diverge too
    }
    // Reused programs: a masking program never needs a second specialization, a scaled one at most two.
    for (const auto* program : {&programs.masking_a, &programs.masking_b}) {
      if (*program) {
        EXPECT_EQ((*program)->cache().size(), 1u);
      }
    }
    for (const auto* program : {&programs.scaled_a, &programs.scaled_b}) {
      if (*program) {
        EXPECT_LE((*program)->cache().size(), 2u);
      }
    }
  }
  EXPECT_GT(compiled_steps, kSequences * kSteps / 4);
}

}  // namespace
}  // namespace px
