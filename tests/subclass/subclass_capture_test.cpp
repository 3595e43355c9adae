// Capture through subclass inputs whose dispatch mutates their own attributes (issue 5, sections
// 4 and 5): every mix of eager and compiled regions equals eager, capture alone changes nothing,
// subclass parameters and buffers, failures halfway through capture, guards and descriptors.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "subclass/capture_regions.h"
#include "support/test_util.h"

namespace px {
namespace {

using subclass_test::capture_region;
using subclass_test::copy_of;
using subclass_test::make_masking;
using subclass_test::make_nested;
using subclass_test::make_scaled;
using subclass_test::MaskingTensor;
using subclass_test::Mode;
using subclass_test::Region;
using subclass_test::run_region;
using subclass_test::same_state;
using subclass_test::ScaledTensor;
using subclass_test::snapshot;
using subclass_test::strings_of;
using subclass_test::unchanged_since;
using testing::random_tensor;

// `text` contains `part` (messages are checked for the parts they must name).
::testing::AssertionResult has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not in: " << text;
}

bool any_has(const std::vector<std::string>& texts, const std::string& part) {
  for (const std::string& text : texts) {
    if (text.find(part) != std::string::npos) return true;
  }
  return false;
}

constexpr int64_t kLo = 4;
constexpr int64_t kHi = 10;

struct MaskingInputs {
  Tensor weight;  // [kHi - kLo, 4]: this rank's rows
  Tensor idx;     // MaskingTensor over i64 [8], some indices outside [kLo, kHi)
};

MaskingInputs masking_inputs(uint64_t seed = 1) {
  Tensor raw = Tensor::from_vector({0, 4, 9, 10, 5, 3, 11, 7}, {8}, DType::Int64);
  return {random_tensor({kHi - kLo, 4}, DType::Float32, seed), make_masking(raw, kLo, kHi)};
}

struct ScaledInputs {
  Tensor w;  // ScaledTensor over f32 [3, 4], no scale yet
  Tensor x;  // [2, 3], for region A
  Tensor y;  // [3, 4], for region B
};

ScaledInputs scaled_inputs(uint64_t seed = 1) {
  return {make_scaled(random_tensor({3, 4}, DType::Float32, seed, -2.0, 3.0)),
          random_tensor({2, 3}, DType::Float32, seed + 1), random_tensor({3, 4}, DType::Float32, seed + 2)};
}

const std::vector<std::pair<Mode, Mode>> kMixes = {{Mode::Compiled, Mode::Compiled},
                                                   {Mode::Eager, Mode::Compiled},
                                                   {Mode::Compiled, Mode::Eager},
                                                   {Mode::Eager, Mode::Eager}};

std::string mix_name(const std::pair<Mode, Mode>& mix) {
  return "A " + subclass_test::mode_name(mix.first) + ", B " + subclass_test::mode_name(mix.second);
}

// ---------------------------------------------------------------------------------------------
// The matrix

TEST(MaskingCapture, EveryMixOfEagerAndCompiledRegionsMatchesEager) {
  // Reference: eager A then eager B, two rounds, on one set of inputs.
  MaskingInputs ref = masking_inputs();
  Tensor ref_rows = subclass_test::masking_a(ref.weight, ref.idx);
  Tensor ref_after_a = copy_of(ref.idx);
  Tensor ref_out = subclass_test::masking_b(ref_rows, ref.idx);
  Tensor ref_after_b = copy_of(ref.idx);
  ASSERT_EQ(subclass_as<MaskingTensor>(ref_after_a)->state(), "stashed");
  ASSERT_EQ(subclass_as<MaskingTensor>(ref_after_b)->state(), "plain");

  for (const auto& mix : kMixes) {
    SCOPED_TRACE(mix_name(mix));
    MaskingInputs in = masking_inputs();
    std::optional<CapturedProgram> program_a;
    std::optional<CapturedProgram> program_b;
    // The second round calls the programs captured in the first again (same guards: no recompile).
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      Tensor rows = run_region(mix.first, subclass_test::masking_a, program_a, in.weight, in.idx);
      EXPECT_TRUE(subclass_test::bitwise_equal(rows, ref_rows));
      EXPECT_TRUE(same_state(in.idx, ref_after_a));
      Tensor out = run_region(mix.second, subclass_test::masking_b, program_b, rows, in.idx);
      EXPECT_TRUE(subclass_test::bitwise_equal(out, ref_out));
      EXPECT_TRUE(same_state(in.idx, ref_after_b));
    }
    if (program_a) {
      EXPECT_EQ(program_a->cache().size(), 1u);
    }
    if (program_b) {
      EXPECT_EQ(program_b->cache().size(), 1u);
    }
  }
}

TEST(ScaledCapture, EveryMixOfEagerAndCompiledRegionsMatchesEager) {
  ScaledInputs ref = scaled_inputs();
  Tensor ref_a = subclass_test::scaled_a(ref.x, ref.w);
  Tensor ref_after_a = copy_of(ref.w);
  Tensor ref_b = subclass_test::scaled_b(ref.y, ref.w);
  Tensor ref_after_b = copy_of(ref.w);
  ASSERT_TRUE(subclass_as<ScaledTensor>(ref_after_a)->scale().defined());

  for (const auto& mix : kMixes) {
    SCOPED_TRACE(mix_name(mix));
    ScaledInputs in = scaled_inputs();
    std::optional<CapturedProgram> program_a;
    std::optional<CapturedProgram> program_b;
    // Round 2 calls program A again with the scale now present: it recompiles.
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      Tensor a = run_region(mix.first, subclass_test::scaled_a, program_a, in.x, in.w, subclass_test::recompiling());
      EXPECT_TRUE(subclass_test::bitwise_equal(a, ref_a));
      EXPECT_TRUE(same_state(in.w, ref_after_a));
      Tensor b = run_region(mix.second, subclass_test::scaled_b, program_b, in.y, in.w, subclass_test::recompiling());
      EXPECT_TRUE(subclass_test::bitwise_equal(b, ref_b));
      EXPECT_TRUE(same_state(in.w, ref_after_b));
    }
    if (program_a) {
      EXPECT_EQ(program_a->cache().size(), 2u);  // scale absent, then present
    }
    if (program_b) {
      EXPECT_EQ(program_b->cache().size(), 1u);  // B always ran with the scale present
    }
  }
}

TEST(ScaledCapture, ACompiledFirstUseStashesTheScaleThatEagerReuses) {
  ScaledInputs ref = scaled_inputs(7);
  ScaledInputs in = scaled_inputs(7);
  subclass_test::scaled_a(ref.x, ref.w);
  CapturedProgram program = capture_region(subclass_test::scaled_a, in.x, in.w);
  program.call<Tensor>(in.x, in.w);
  Tensor scale = subclass_as<ScaledTensor>(in.w)->scale();
  ASSERT_TRUE(scale.defined());
  EXPECT_FALSE(scale.is_proxy());
  EXPECT_TRUE(subclass_test::bitwise_equal(scale, subclass_as<ScaledTensor>(ref.w)->scale()));
  // Eager B reuses the very tensor the epilogue set.
  subclass_test::scaled_b(in.y, in.w);
  EXPECT_TRUE(subclass_as<ScaledTensor>(in.w)->scale().same(scale));
}

TEST(MaskingCapture, StashAndReleaseInOneRegionLeavesNothingToReplay) {
  auto both = [](const Tensor& weight, const Tensor& idx) {
    return subclass_test::masking_b(subclass_test::masking_a(weight, idx), idx);
  };
  MaskingInputs ref = masking_inputs(3);
  MaskingInputs in = masking_inputs(3);
  Tensor expected = both(ref.weight, ref.idx);
  SubclassState before = snapshot(in.idx);
  CapturedProgram program = capture_region(both, in.weight, in.idx);
  Tensor out = program.call<Tensor>(in.weight, in.idx);
  EXPECT_TRUE(subclass_test::bitwise_equal(out, expected));
  EXPECT_TRUE(same_state(in.idx, ref.idx));
  EXPECT_TRUE(unchanged_since(in.idx, before));
  EXPECT_FALSE(any_has(strings_of(program.output_descriptors()), "AttrMutation"));
}

// ---------------------------------------------------------------------------------------------
// Capture alone changes nothing

TEST(SubclassCapture, CaptureAloneLeavesTheInputsExactlyAsBefore) {
  MaskingInputs masking = masking_inputs();
  ScaledInputs scaled = scaled_inputs();
  SubclassState idx_plain = snapshot(masking.idx);
  SubclassState w_unscaled = snapshot(scaled.w);
  Tensor idx_copy = copy_of(masking.idx);
  Tensor w_copy = copy_of(scaled.w);

  CapturedProgram a = capture_region(subclass_test::masking_a, masking.weight, masking.idx);
  CapturedProgram s = capture_region(subclass_test::scaled_a, scaled.x, scaled.w);
  EXPECT_TRUE(unchanged_since(masking.idx, idx_plain));
  EXPECT_TRUE(unchanged_since(scaled.w, w_unscaled));
  EXPECT_TRUE(same_state(masking.idx, idx_copy));
  EXPECT_TRUE(same_state(scaled.w, w_copy));

  // With a stash present, capturing region B (which would release it) leaves it stashed.
  Tensor rows = subclass_test::masking_a(masking.weight, masking.idx);
  SubclassState idx_stashed = snapshot(masking.idx);
  CapturedProgram b = capture_region(subclass_test::masking_b, rows, masking.idx);
  EXPECT_TRUE(unchanged_since(masking.idx, idx_stashed));
  EXPECT_EQ(subclass_as<MaskingTensor>(masking.idx)->state(), "stashed");
}

// ---------------------------------------------------------------------------------------------
// Subclass parameters and buffers

class ScaledProj : public nn::ModuleBase<ScaledProj> {
 public:
  explicit ScaledProj(Tensor data) : weight_(&register_parameter("weight", make_scaled(std::move(data)))) {}
  Tensor forward(const Tensor& x) { return px::matmul(x, *weight_); }

 private:
  Tensor* weight_;
};

class ScaledNet : public nn::ModuleBase<ScaledNet> {
 public:
  explicit ScaledNet(Tensor data) : proj_(register_module("proj", std::make_shared<ScaledProj>(std::move(data)))) {}
  Tensor forward(const Tensor& x) { return px::relu((*proj_)(x)); }

 private:
  std::shared_ptr<ScaledProj> proj_;
};

TEST(SubclassCapture, AScaledParameterStashesItsScaleThroughTheModuleSlot) {
  ScaledNet eager(random_tensor({3, 4}, DType::Float32, 21, -2.0, 2.0));
  ScaledNet compiled(random_tensor({3, 4}, DType::Float32, 21, -2.0, 2.0));
  Tensor x1 = random_tensor({2, 3}, DType::Float32, 22);
  Tensor x2 = random_tensor({2, 3}, DType::Float32, 23);

  SubclassState before = snapshot(compiled.slot("proj.weight"));
  CapturedProgram program = px::capture(compiled, std::make_tuple(x1), subclass_test::recompiling());
  EXPECT_TRUE(unchanged_since(compiled.slot("proj.weight"), before));
  EXPECT_EQ(strings_of(program.input_descriptors()),
            (std::vector<std::string>{"SubclassInner(Param(proj.weight), data)", "UserInput([0])"}));
  EXPECT_EQ(strings_of(program.output_descriptors()),
            (std::vector<std::string>{"UserOutput(<root>)", "AttrMutation(Param(proj.weight), scale)"}));

  for (const Tensor& x : {x1, x2, x1}) {
    Tensor want = eager(x);
    Tensor got = program(x).as_tensor();
    EXPECT_TRUE(subclass_test::bitwise_equal(got, want));
    EXPECT_TRUE(same_state(compiled.slot("proj.weight"), eager.slot("proj.weight")));
  }
  ASSERT_EQ(program.cache().size(), 2u);  // scale absent, then present
  std::vector<std::string> second = strings_of(program.cache()[1]->inputs);
  EXPECT_TRUE(any_has(second, "SubclassInner(Param(proj.weight), scale)"));
  EXPECT_FALSE(any_has(strings_of(program.cache()[1]->outputs), "AttrMutation"));
}

// A module whose buffer is the masking index tensor; forward is region A on that buffer.
class ShardedLookup : public nn::ModuleBase<ShardedLookup> {
 public:
  explicit ShardedLookup(Tensor idx) : idx_(&register_buffer("idx", std::move(idx))) {}
  Tensor forward(const Tensor& weight) { return px::embedding(weight, *idx_); }

 private:
  Tensor* idx_;
};

TEST(SubclassCapture, AMaskingBufferStashesItsMaskThroughTheModuleSlot) {
  MaskingInputs ref = masking_inputs(31);
  MaskingInputs in = masking_inputs(31);
  ShardedLookup eager(ref.idx);
  ShardedLookup compiled(in.idx);
  Tensor want = eager(ref.weight);

  CapturedProgram program = px::capture(compiled, std::make_tuple(in.weight));
  EXPECT_EQ(strings_of(program.input_descriptors()),
            (std::vector<std::string>{"SubclassInner(Buffer(idx), data)", "UserInput([0])"}));
  EXPECT_EQ(strings_of(program.output_descriptors()),
            (std::vector<std::string>{"UserOutput(<root>)", "AttrMutation(Buffer(idx), mask)"}));
  Tensor got = program(in.weight).as_tensor();
  EXPECT_TRUE(subclass_test::bitwise_equal(got, want));
  EXPECT_TRUE(same_state(compiled.slot("idx"), eager.slot("idx")));
  // The slot and the caller's handle are one tensor: both see the stash.
  EXPECT_EQ(subclass_as<MaskingTensor>(in.idx)->state(), "stashed");

  // Region B, eager, on the buffer the compiled program stashed.
  Tensor out_ref = subclass_test::masking_b(want, ref.idx);
  Tensor out = subclass_test::masking_b(got, in.idx);
  EXPECT_TRUE(subclass_test::bitwise_equal(out, out_ref));
  EXPECT_TRUE(same_state(in.idx, ref.idx));
}

// ---------------------------------------------------------------------------------------------
// Failures halfway through capture

// Sets an attribute and its metadata, then throws: capture must undo both.
class FaultyTensor : public TensorSubclass {
 public:
  FaultyTensor(Tensor data, Tensor cache, bool touched)
      : data_(std::move(data)), cache_(std::move(cache)), touched_(touched) {}
  std::string type_name() const override { return "FaultyTensor"; }
  SubclassState flatten() const override {
    return {{{"data", data_}, {"cache", cache_}}, Tree::dict({{"touched", Tree::boolean(touched_)}})};
  }
  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override {
    return std::make_shared<FaultyTensor>(subclass_test::attribute_of(state, "data", "FaultyTensor"),
                                          subclass_test::attribute_of(state, "cache", "FaultyTensor"),
                                          state.metadata.at("touched").as_bool());
  }
  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>&, const Attrs&) override {
    cache_ = px::mul(data_, 2.0);
    touched_ = true;
    throw ShapeError("FaultyTensor: failing in '" + op.name + "' after mutating itself");
  }

 private:
  Tensor data_;
  Tensor cache_;
  bool touched_ = false;
};

TEST(SubclassCaptureFailure, ADispatchThatThrowsAfterMutatingItselfLeavesTheInputRestored) {
  Tensor data = random_tensor({2, 3}, DType::Float32, 41);
  Tensor faulty = make_subclass_tensor(std::make_shared<FaultyTensor>(data, Tensor(), false), data.meta_info());
  Tensor other = random_tensor({2, 3}, DType::Float32, 42);
  SubclassState before = snapshot(faulty);
  Region region = [](const Tensor& a, const Tensor& b) { return px::add(a, px::neg(b)); };
  try {
    px::capture(region, std::make_tuple(other, faulty));
    ADD_FAILURE() << "capture did not throw";
  } catch (const ShapeError& error) {
    EXPECT_STREQ(error.what(), "ShapeError: FaultyTensor: failing in 'neg' after mutating itself");
  } catch (const std::exception& error) {
    ADD_FAILURE() << "capture threw another type: " << error.what();
  }
  EXPECT_TRUE(unchanged_since(faulty, before));
}

TEST(SubclassCaptureFailure, AThrowAfterAnotherInputWasMutatedRestoresEveryInput) {
  // idx1 is stashed by the first embedding, then idx2 (already stashed) throws.
  MaskingInputs first = masking_inputs(51);
  MaskingInputs second = masking_inputs(52);
  subclass_test::masking_a(second.weight, second.idx);
  SubclassState idx1_before = snapshot(first.idx);
  SubclassState idx2_before = snapshot(second.idx);
  auto region = [](const Tensor& weight, const Tensor& idx1, const Tensor& idx2) {
    return px::add(px::embedding(weight, idx1), px::embedding(weight, idx2));
  };
  std::string eager_error = testing::error_message([&] {
    MaskingInputs a = masking_inputs(51);
    MaskingInputs b = masking_inputs(52);
    subclass_test::masking_a(b.weight, b.idx);
    region(a.weight, a.idx, b.idx);
  });
  EXPECT_EQ(eager_error, "ValueError: MaskingTensor: a mask is already stashed");
  try {
    px::capture(region, std::make_tuple(first.weight, first.idx, second.idx));
    ADD_FAILURE() << "capture did not throw";
  } catch (const ValueError& error) {
    EXPECT_EQ(std::string(error.what()), eager_error);
  } catch (const std::exception& error) {
    ADD_FAILURE() << "capture threw another type: " << error.what();
  }
  EXPECT_TRUE(unchanged_since(first.idx, idx1_before));
  EXPECT_TRUE(unchanged_since(second.idx, idx2_before));
  EXPECT_EQ(subclass_as<MaskingTensor>(first.idx)->state(), "plain");
}

TEST(SubclassCaptureFailure, ARecompileThatThrowsInDispatchLeavesTheInputRestored) {
  MaskingInputs in = masking_inputs(61);
  CapturedProgram program = capture_region(subclass_test::masking_a, in.weight, in.idx, subclass_test::recompiling());
  program.call<Tensor>(in.weight, in.idx);  // stashes
  SubclassState stashed = snapshot(in.idx);
  // Region A again on a stashed index: the guards fail, the recapture runs dispatch, which throws as eager does.
  testing::expect_value_error([&] { program.call<Tensor>(in.weight, in.idx); },
                              "MaskingTensor: a mask is already stashed");
  EXPECT_TRUE(unchanged_since(in.idx, stashed));
}

// Remembers the other operand of its last op: an attribute set to an existing input tensor.
class RememberingTensor : public TensorSubclass {
 public:
  RememberingTensor(Tensor data, Tensor last) : data_(std::move(data)), last_(std::move(last)) {}
  std::string type_name() const override { return "RememberingTensor"; }
  SubclassState flatten() const override { return {{{"data", data_}, {"last", last_}}, Tree::none()}; }
  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override {
    return std::make_shared<RememberingTensor>(subclass_test::attribute_of(state, "data", "RememberingTensor"),
                                               subclass_test::attribute_of(state, "last", "RememberingTensor"));
  }
  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) override {
    if (args.size() != 2 || subclass_as<RememberingTensor>(args[0]) != this || args[1].is_subclass()) {
      throw ValueError("RememberingTensor: " + op.name + " takes the RememberingTensor and a plain tensor");
    }
    last_ = args[1];
    return px::call(op, {data_, args[1]}, attrs);
  }
  const Tensor& last() const { return last_; }

 private:
  Tensor data_;
  Tensor last_;
};

TEST(SubclassCapture, AnAttributeSetToAnotherInputIsReplayedAsThatInputWithoutACopy) {
  Tensor data = random_tensor({2, 3}, DType::Float32, 101);
  auto remembering = [&] {
    return make_subclass_tensor(std::make_shared<RememberingTensor>(data, Tensor()), data.meta_info());
  };
  Region region = [](const Tensor& r, const Tensor& other) { return px::add(r, other); };
  Tensor ref = remembering();
  Tensor other_ref = random_tensor({2, 3}, DType::Float32, 102);
  Tensor want = region(ref, other_ref);
  ASSERT_TRUE(subclass_as<RememberingTensor>(ref)->last().same(other_ref));

  Tensor r = remembering();
  Tensor other = random_tensor({2, 3}, DType::Float32, 102);
  CapturedProgram program = capture_region(region, r, other);
  EXPECT_EQ(strings_of(program.output_descriptors()), (std::vector<std::string>{"UserOutput(<root>)"}));
  Tensor got = program.call<Tensor>(r, other);
  EXPECT_TRUE(subclass_test::bitwise_equal(got, want));
  EXPECT_TRUE(same_state(r, ref));
  EXPECT_TRUE(subclass_as<RememberingTensor>(r)->last().same(other));  // the caller's own tensor, not a copy
}

// ---------------------------------------------------------------------------------------------
// Guards

TEST(SubclassGuards, DifferentMetadataOrPresenceIsAGuardErrorNamingTheKeyPath) {
  MaskingInputs in = masking_inputs(71);
  CapturedProgram program = capture_region(subclass_test::masking_a, in.weight, in.idx);

  // Other metadata (another shard's [lo, hi)).
  MaskingInputs shifted = masking_inputs(71);
  Tensor other_shard = make_masking(subclass_as<MaskingTensor>(shifted.idx)->data(), kLo - 1, kHi - 1);
  SubclassState other_before = snapshot(other_shard);
  std::string message = testing::error_message([&] { program.call<Tensor>(shifted.weight, other_shard); });
  EXPECT_TRUE(has(message, "GuardError: input [1]: traced as MaskingTensor("));
  EXPECT_TRUE(has(message, "\"lo\": 3, \"hi\": 9"));
  EXPECT_TRUE(unchanged_since(other_shard, other_before));

  // A stash present (presence and metadata differ).
  MaskingInputs stashed = masking_inputs(71);
  subclass_test::masking_a(stashed.weight, stashed.idx);
  message = testing::error_message([&] { program.call<Tensor>(stashed.weight, stashed.idx); });
  EXPECT_TRUE(has(message, "GuardError: input [1]"));

  // A plain tensor where a subclass was traced.
  message =
      testing::error_message([&] { program.call<Tensor>(in.weight, subclass_as<MaskingTensor>(in.idx)->data()); });
  EXPECT_TRUE(has(message, "GuardError: input [1]"));
}

TEST(SubclassGuards, AttributePresenceAloneIsGuarded) {
  // Same metadata ({"scaled": false}), but the scale present in one and absent in the other.
  Tensor data = random_tensor({3, 4}, DType::Float32, 81);
  Tensor x = random_tensor({2, 3}, DType::Float32, 82);
  Tensor absent = make_scaled(data);
  CapturedProgram program = capture_region(subclass_test::scaled_a, x, absent);
  Tensor present = make_scaled(data, Tensor::scalar(4.0), false);
  std::string message = testing::error_message([&] { program.call<Tensor>(x, present); });
  EXPECT_TRUE(has(message, "GuardError: input [1]"));
  EXPECT_TRUE(has(message, "scale: absent"));
}

TEST(SubclassGuards, RecompileOnOtherMetadataMatchesEager) {
  MaskingInputs in = masking_inputs(91);
  CapturedProgram program = capture_region(subclass_test::masking_a, in.weight, in.idx, subclass_test::recompiling());
  Tensor raw = subclass_as<MaskingTensor>(in.idx)->data();
  for (int64_t shift : {0, -1, 2}) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    Tensor ref = make_masking(raw, kLo + shift, kHi + shift);
    Tensor idx = make_masking(raw, kLo + shift, kHi + shift);
    Tensor want = subclass_test::masking_a(in.weight, ref);
    Tensor got = program.call<Tensor>(in.weight, idx);
    EXPECT_TRUE(subclass_test::bitwise_equal(got, want));
    EXPECT_TRUE(same_state(idx, ref));
  }
  EXPECT_EQ(program.cache().size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// Descriptors

TEST(SubclassDescriptors, MaskingRegions) {
  MaskingInputs in = masking_inputs();
  CapturedProgram a = capture_region(subclass_test::masking_a, in.weight, in.idx);
  EXPECT_EQ(strings_of(a.input_descriptors()),
            (std::vector<std::string>{"UserInput([0])", "SubclassInner([1], data)"}));
  EXPECT_EQ(strings_of(a.output_descriptors()),
            (std::vector<std::string>{"UserOutput(<root>)", "AttrMutation([1], mask)"}));

  Tensor rows = a.call<Tensor>(in.weight, in.idx);
  CapturedProgram b = capture_region(subclass_test::masking_b, rows, in.idx);
  // Every present inner tensor is a graph input, read or not (B reads only the mask).
  EXPECT_EQ(strings_of(b.input_descriptors()),
            (std::vector<std::string>{"UserInput([0])", "SubclassInner([1], data)", "SubclassInner([1], mask)"}));
  EXPECT_EQ(strings_of(b.output_descriptors()), (std::vector<std::string>{"UserOutput(<root>)"}));
}

TEST(SubclassDescriptors, ScaledRegion) {
  ScaledInputs in = scaled_inputs();
  CapturedProgram a = capture_region(subclass_test::scaled_a, in.x, in.w);
  EXPECT_EQ(strings_of(a.input_descriptors()),
            (std::vector<std::string>{"UserInput([0])", "SubclassInner([1], data)"}));
  EXPECT_EQ(strings_of(a.output_descriptors()),
            (std::vector<std::string>{"UserOutput(<root>)", "AttrMutation([1], scale)"}));
}

// A ScaledTensor inside a Nested: its first use mutates the inner instance, which capture must
// output (the attribute names the path through both) and replay like a top-level mutation.
TEST(SubclassCapture, AMutationOfANestedSubclassIsReplayed) {
  ScaledInputs ref = scaled_inputs(5);
  ScaledInputs nested_in = scaled_inputs(5);
  Tensor nested_ref = make_nested(ref.w);
  Tensor nested = make_nested(nested_in.w);
  Tensor want = subclass_test::scaled_a(ref.x, nested_ref);
  CapturedProgram n = capture_region(subclass_test::scaled_a, nested_in.x, nested);
  EXPECT_EQ(strings_of(n.input_descriptors()),
            (std::vector<std::string>{"UserInput([0])", "SubclassInner([1], inner.data)"}));
  EXPECT_EQ(strings_of(n.output_descriptors()),
            (std::vector<std::string>{"UserOutput(<root>)", "AttrMutation([1], inner.scale)"}));
  Tensor got = n.call<Tensor>(nested_in.x, nested);
  EXPECT_TRUE(subclass_test::bitwise_equal(got, want));
  EXPECT_TRUE(same_state(nested, nested_ref));
}

}  // namespace
}  // namespace px
