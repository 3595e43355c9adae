// capture over nested inputs and outputs: structure, value and tensor guards,
// and outputs that mix tensors, constants, shapes, None and pass-throughs.

#include <gtest/gtest.h>

#include "parallax/capture/capture.h"
#include "parallax/ops/elementwise.h"
#include "support/test_util.h"

namespace px::capture_test {

struct Settings {
  int64_t repeat = 1;
  double scale = 1.0;
  std::string mode = "add";
};
PX_TREE_STRUCT(Settings, repeat, scale, mode)

}  // namespace px::capture_test

namespace px {
namespace {

using capture_test::Settings;
using testing::random_tensor;

std::string error_of(const std::function<void()>& fn) { return testing::error_message(fn); }

// forward(batch: {"x": T, "extra": [T...]}, settings, maybe_bias) -> a mixed tree.
Tree nested_forward(const Tree& inputs) {
  const Tree& batch = inputs[0];
  auto settings = from_tree<Settings>(inputs[1]);
  Tensor x = batch.at("x").as_tensor();
  Tensor y = x * settings.scale;
  for (int64_t i = 0; i < settings.repeat; ++i) y = settings.mode == "add" ? y + x : y * x;
  for (const Tree& extra : batch.at("extra").children()) y = y + extra.as_tensor();
  if (!inputs[2].is_none()) y = y + inputs[2].as_tensor();
  return Tree::dict({{"y", Tree::tensor(y)},
                     {"shape", to_tree(x.shape())},
                     {"mode", Tree::string(settings.mode)},
                     {"nothing", Tree::none()},
                     {"x", Tree::tensor(x)},
                     {"ratio", Tree::real(settings.scale / 2)}});
}

Tree nested_inputs(int64_t extras, bool bias, Settings settings = {}, Shape shape = {2, 3},
                   DType dtype = DType::Float64) {
  std::vector<Tree> extra;
  for (int64_t i = 0; i < extras; ++i) extra.push_back(Tree::tensor(random_tensor(shape, dtype, 10 + i)));
  Tree batch = Tree::dict({{"x", Tree::tensor(random_tensor(shape, dtype, 1))}, {"extra", Tree::list(extra)}});
  return Tree::tuple({batch, to_tree(settings), bias ? Tree::tensor(random_tensor(shape, dtype, 3)) : Tree::none()});
}

CapturedProgram nested_program(const Tree& example) {
  CaptureOptions options;
  options.name = "nested";
  options.input_names = {"batch", "settings", "bias"};
  return capture(nested_forward, nullptr, example, options);
}

TEST(CaptureTrees, RunsNestedInputsAndRebuildsMixedOutputs) {
  Tree example = nested_inputs(2, true, {2, 0.5, "mul"});
  CapturedProgram program = nested_program(example);
  Tree call = nested_inputs(2, true, {2, 0.5, "mul"});
  Tree out = program.run(call);
  Tree eager = nested_forward(call);
  EXPECT_TRUE(testing::all_close(out.at("y").as_tensor(), eager.at("y").as_tensor(), 0, 0));
  EXPECT_EQ(out.at("shape"), to_tree(Shape{2, 3}));
  EXPECT_EQ(out.at("mode"), Tree::string("mul"));
  EXPECT_TRUE(out.at("nothing").is_none());
  EXPECT_EQ(out.at("ratio"), Tree::real(0.25));
  EXPECT_TRUE(out.at("x").as_tensor().same(call[0].at("x").as_tensor()));  // pass-through: the caller's handle
  EXPECT_EQ(program.out_spec().str(),
            "{\"y\": *, \"shape\": [*, *], \"mode\": *, \"nothing\": None, \"x\": *, \"ratio\": *}");
  EXPECT_EQ(program.graph().outputs().size(), 1u);
}

TEST(CaptureTrees, StructureGuardsNameTheKeyPath) {
  CapturedProgram program = nested_program(nested_inputs(2, true));
  std::string message = error_of([&] { program.run(nested_inputs(3, true)); });
  EXPECT_NE(message.find("GuardError: input [0][\"extra\"] (batch): traced as list of 2, called with list of 3"),
            std::string::npos)
      << message;
  message = error_of([&] { program.run(nested_inputs(2, false)); });
  EXPECT_NE(message.find("input [2] (bias): traced as a leaf, called with None"), std::string::npos) << message;
  Tree renamed = nested_inputs(2, true);
  Tree batch = Tree::dict({{"x", renamed[0].at("x")}, {"more", renamed[0].at("extra")}});
  message = error_of([&] { program.run(Tree::tuple({batch, renamed[1], renamed[2]})); });
  EXPECT_NE(message.find("input [0] (batch): traced as dict with keys (\"x\", \"extra\"), called with dict with "
                         "keys (\"x\", \"more\")"),
            std::string::npos)
      << message;
}

TEST(CaptureTrees, ValueGuardsCoverEveryNonTensorLeaf) {
  CapturedProgram program = nested_program(nested_inputs(1, false, {1, 2.0, "add"}));
  EXPECT_NO_THROW(program.run(nested_inputs(1, false, {1, 2.0, "add"})));
  std::string message = error_of([&] { program.run(nested_inputs(1, false, {1, 2.5, "add"})); });
  EXPECT_NE(message.find("input [1].scale (settings): traced as 2.0, called with 2.5"), std::string::npos) << message;
  message = error_of([&] { program.run(nested_inputs(1, false, {1, 2.0, "mul"})); });
  EXPECT_NE(message.find("input [1].mode (settings): traced as \"add\", called with \"mul\""), std::string::npos)
      << message;
}

TEST(CaptureTrees, TensorGuardsCheckDtypeAndShape) {
  CapturedProgram program = nested_program(nested_inputs(1, false));
  std::string message = error_of([&] { program.run(nested_inputs(1, false, {}, {4, 3})); });
  EXPECT_NE(message.find("input [0][\"x\"] (batch): traced as f64[2,3], called with f64[4,3]"), std::string::npos)
      << message;
  message = error_of([&] { program.run(nested_inputs(1, false, {}, {2, 3}, DType::Float32)); });
  EXPECT_NE(message.find("traced as f64[2,3], called with f32[2,3]"), std::string::npos) << message;
  // A tensor where an int was traced, and the other way round.
  Tree swapped = nested_inputs(1, false);
  Tree batch = Tree::dict({{"x", Tree::integer(4)}, {"extra", swapped[0].at("extra")}});
  message = error_of([&] { program.run(Tree::tuple({batch, swapped[1], swapped[2]})); });
  EXPECT_NE(message.find("traced as a tensor f64[2,3], called with 4"), std::string::npos) << message;
}

TEST(CaptureTrees, GuardsListEveryAssumption) {
  CapturedProgram program = nested_program(nested_inputs(1, false, {1, 2.0, "add"}));
  std::string text = program.guards().str();
  EXPECT_NE(text.find("input [0][\"x\"] (batch) is f64[2,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("input [1].repeat (settings) == 1"), std::string::npos) << text;
  EXPECT_NE(text.find("input [1].mode (settings) == \"add\""), std::string::npos) << text;
  std::vector<std::pair<KeyPath, Tree>> baked = program.primary().baked_inputs();
  ASSERT_EQ(baked.size(), 3u);
  EXPECT_EQ(baked[2].first.str(), "[1].mode");
}

TEST(CaptureTrees, ScalarOnlyOutputsNeedNoGraph) {
  auto fn = [](const Tensor& x, int64_t n) { return std::make_tuple(n * 2, x.shape(), std::string("ok")); };
  CapturedProgram program = capture(fn, std::make_tuple(Tensor::zeros({3}), int64_t{5}));
  EXPECT_TRUE(program.graph().inputs().empty());
  auto [twice, shape, status] = program.call<std::tuple<int64_t, Shape, std::string>>(Tensor::zeros({3}), int64_t{5});
  EXPECT_EQ(twice, 10);
  EXPECT_EQ(shape, (Shape{3}));
  EXPECT_EQ(status, "ok");
}

}  // namespace
}  // namespace px
