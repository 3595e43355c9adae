// capture: graph inputs and outputs, guards, recompilation, trace errors, and the
// issue's motivating program, in C++.

#include "parallax/capture/capture.h"

#include <gtest/gtest.h>

#include "parallax/autodiff/export.h"
#include "parallax/nn/layers.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/reduction.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::random_tensor;

// A Linear and one parameter that forward never uses;
// forward(x, input_dim, has_compute) = (linear(x) + input_dim, x.shape()).
class Motivating : public nn::ModuleBase<Motivating> {
 public:
  Motivating() {
    linear_ = register_module("linear", std::make_shared<nn::Linear>(4, 3, true, DType::Float64));
    register_parameter("unused", {5}, nn::Init::normal(0.0, 1.0), DType::Float64);
  }
  std::tuple<Tensor, Shape> forward(const Tensor& x, int64_t input_dim, bool has_compute) {
    (void)has_compute;
    return {(*linear_)(x) + static_cast<double>(input_dim), x.shape()};
  }
  nn::Linear& linear() { return *linear_; }

 private:
  std::shared_ptr<nn::Linear> linear_;
};

CaptureOptions motivating_options(CaptureOptions::OnGuardFailure on_failure = CaptureOptions::OnGuardFailure::Raise) {
  CaptureOptions options;
  options.name = "motivating";
  options.input_names = {"x", "input_dim", "has_compute"};
  options.on_guard_failure = on_failure;
  return options;
}

std::string error_of(const std::function<void()>& fn) { return testing::error_message(fn); }

TEST(Motivating, JointGraphHasExactlyFivePlaceholders) {
  Motivating model;
  model.materialize(1);
  Tensor x = random_tensor({2, 4}, DType::Float64, 7);
  CapturedProgram program = capture(model, std::make_tuple(x, int64_t{3}, true), motivating_options());
  JointProgram joint = export_joint(program);

  ASSERT_EQ(joint.graph.inputs().size(), 5u);
  std::vector<std::string> inputs;
  for (const InputDescriptor& input : joint.inputs) inputs.push_back(input.str());
  // A module's own parameters come before its submodules' (PyTorch's named_parameters order).
  EXPECT_EQ(inputs, (std::vector<std::string>{"Param(unused)", "Param(linear.weight)", "Param(linear.bias)",
                                              "UserInput([0])", "Tangent([0])"}));
  std::vector<std::string> outputs;
  for (const OutputDescriptor& output : joint.outputs) outputs.push_back(output.str());
  EXPECT_EQ(outputs, (std::vector<std::string>{"UserOutput([0])", "Grad(of: Param(unused), none)",
                                               "Grad(of: Param(linear.weight))", "Grad(of: Param(linear.bias))",
                                               "Grad(of: UserInput([0]))"}));
  EXPECT_EQ(joint.graph.outputs().size(), 4u);  // the none gradient has no graph output
  EXPECT_EQ(joint.graph_output, (std::vector<int64_t>{0, -1, 1, 2, 3}));
}

TEST(Motivating, ReturnsTheShapeOfTheGivenInput) {
  Motivating model;
  model.materialize(1);
  Tensor x = random_tensor({2, 4}, DType::Float64, 7);
  CapturedProgram program = capture(model, std::make_tuple(x, int64_t{3}, true), motivating_options());
  Tensor x2 = random_tensor({2, 4}, DType::Float64, 8);
  auto [y, shape] = program.call<std::tuple<Tensor, Shape>>(x2, int64_t{3}, true);
  EXPECT_EQ(shape, x2.shape());
  Tensor expected = model.linear()(x2) + 3.0;
  EXPECT_TRUE(testing::all_close(y, expected, 0, 0));  // the same ops on the same values: bitwise equal
  // The shape is a constant of the program, rebuilt by unflatten, not a graph output.
  EXPECT_EQ(program.graph().outputs().size(), 1u);
  ASSERT_EQ(program.primary().constant_outputs().size(), 2u);
  EXPECT_EQ(program.primary().constant_outputs()[0].first.str(), "[1][0]");
}

TEST(Motivating, ChangedInputDimRaisesGuardErrorNamingItsKeyPath) {
  Motivating model;
  model.materialize(1);
  Tensor x = random_tensor({2, 4}, DType::Float64, 7);
  CapturedProgram program = capture(model, std::make_tuple(x, int64_t{3}, true), motivating_options());
  EXPECT_THROW(program(x, int64_t{4}, true), GuardError);
  std::string message = error_of([&] { program(x, int64_t{4}, true); });
  EXPECT_NE(message.find("input [1] (input_dim): traced as 3, called with 4"), std::string::npos) << message;
  message = error_of([&] { program(x, int64_t{3}, false); });
  EXPECT_NE(message.find("input [2] (has_compute): traced as true, called with false"), std::string::npos) << message;
}

TEST(Motivating, RecompileReturnsTheNewResult) {
  Motivating model;
  model.materialize(1);
  Tensor x = random_tensor({2, 4}, DType::Float64, 7);
  CapturedProgram program = capture(model, std::make_tuple(x, int64_t{3}, true),
                                    motivating_options(CaptureOptions::OnGuardFailure::Recompile));
  auto [y, shape] = program.call<std::tuple<Tensor, Shape>>(x, int64_t{4}, true);
  EXPECT_TRUE(testing::all_close(y, model.linear()(x) + 4.0, 0, 0));
  EXPECT_EQ(program.cache().size(), 2u);
  // A call that fits the first program reuses it; a new shape is one more specialization.
  program(x, int64_t{3}, true);
  EXPECT_EQ(program.cache().size(), 2u);
  Tensor wide = random_tensor({5, 4}, DType::Float64, 9);
  auto [y5, shape5] = program.call<std::tuple<Tensor, Shape>>(wide, int64_t{3}, true);
  EXPECT_EQ(shape5, (Shape{5, 4}));
  EXPECT_EQ(y5.shape(), (Shape{5, 3}));
  EXPECT_EQ(program.cache().size(), 3u);
}

TEST(Capture, RecompileCacheIsBounded) {
  Motivating model;
  model.materialize(1);
  Tensor x = random_tensor({2, 4}, DType::Float64, 7);
  CaptureOptions options = motivating_options(CaptureOptions::OnGuardFailure::Recompile);
  options.cache_size = 2;
  CapturedProgram program = capture(model, std::make_tuple(x, int64_t{3}, true), options);
  program(x, int64_t{4}, true);
  std::string message = error_of([&] { program(x, int64_t{5}, true); });
  EXPECT_NE(message.find("GuardError"), std::string::npos) << message;
  EXPECT_NE(message.find("cache_size of 2"), std::string::npos) << message;
  EXPECT_NE(message.find("program 0: input [1] (input_dim): traced as 3, called with 5"), std::string::npos) << message;
  EXPECT_NE(message.find("program 1: input [1] (input_dim): traced as 4, called with 5"), std::string::npos) << message;
  EXPECT_EQ(program.cache().size(), 2u);
}

TEST(Capture, ResetForgetsPrograms) {
  Motivating model;
  model.materialize(1);
  Tensor x = random_tensor({2, 4}, DType::Float64, 7);
  CapturedProgram program = capture(model, std::make_tuple(x, int64_t{3}, true), motivating_options());
  program.reset();
  EXPECT_THROW(program.graph(), ValueError);
  program(x, int64_t{6}, true);  // captures again, for these values
  EXPECT_EQ(program.cache().size(), 1u);
  EXPECT_EQ(program.primary().baked_inputs()[0].second, Tree::integer(6));
}

// forward(a, b) reads a only, and returns b untouched.
class ReadsFirst : public nn::ModuleBase<ReadsFirst> {
 public:
  ReadsFirst() {
    linear_ = register_module("linear", std::make_shared<nn::Linear>(4, 2, false, DType::Float64));
    register_buffer("steps", {}, nn::Init::zeros(), DType::Int64);
  }
  std::tuple<Tensor, Tensor> forward(const Tensor& a, const Tensor& b) { return {(*linear_)(a), b}; }

 private:
  std::shared_ptr<nn::Linear> linear_;
};

TEST(Capture, GraphInputsAreParametersBuffersThenOnlyTheUserTensorsRead) {
  ReadsFirst model;
  model.materialize(3);
  Tensor a = random_tensor({3, 4}, DType::Float64, 1), b = random_tensor({7}, DType::Float64, 2);
  CapturedProgram program = capture(model, std::make_tuple(a, b));
  std::vector<std::string> inputs;
  for (const InputDescriptor& input : program.input_descriptors()) inputs.push_back(input.str());
  EXPECT_EQ(inputs, (std::vector<std::string>{"Param(linear.weight)", "Buffer(steps)", "UserInput([0])"}));
  EXPECT_EQ(program.graph().inputs().size(), 3u);
  // b comes back as the caller's own handle: a pass-through, not a graph output.
  Tensor b2 = random_tensor({7}, DType::Float64, 5);
  auto [y, same_b] = program.call<std::tuple<Tensor, Tensor>>(a, b2);
  EXPECT_TRUE(same_b.same(b2));
  EXPECT_EQ(program.graph().outputs().size(), 1u);
  EXPECT_EQ(program.primary().output_leaves[1].kind, OutputLeaf::Kind::PassThrough);
}

TEST(Capture, ModuleSlotsAreRestoredAfterCaptureAndAfterAThrowingForward) {
  ReadsFirst model;
  model.materialize(3);
  std::vector<std::pair<std::string, Tensor>> before = model.named_parameters();
  capture(model, std::make_tuple(random_tensor({3, 4}, DType::Float64, 1), random_tensor({7}, DType::Float64, 2)));
  std::vector<std::pair<std::string, Tensor>> after = model.named_parameters();
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].second.same(after[i].second));
  // A wrong feature size makes linear throw inside forward: slots still come back.
  EXPECT_THROW(capture(model, std::make_tuple(random_tensor({3, 5}, DType::Float64, 1), Tensor::zeros({1}))),
               ShapeError);
  after = model.named_parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].second.same(after[i].second));
}

TEST(Capture, TensorFromOutsideTheTraceIsAClearError) {
  Tensor outside = Tensor::zeros({4}, DType::Float64);
  auto fn = [outside](const Tensor& x) { return x + outside; };
  std::string message = error_of([&] { capture(fn, std::make_tuple(Tensor::zeros({4}, DType::Float64))); });
  EXPECT_NE(message.find("not produced in this trace"), std::string::npos) << message;
  EXPECT_NE(message.find("make it a graph input"), std::string::npos) << message;
}

// Reads a traced value to branch on it: data-dependent control flow.
class Branchy : public nn::ModuleBase<Branchy> {
 public:
  Branchy() { gate_ = register_module("gate", std::make_shared<Gate>()); }
  Tensor forward(const Tensor& x) { return (*gate_)(x); }

 private:
  struct Gate : nn::ModuleBase<Gate> {
    Tensor forward(const Tensor& x) { return sum(x).item<double>() > 0 ? x : -x; }
  };
  std::shared_ptr<Gate> gate_;
};

TEST(Capture, ReadingATracedValueRaisesTraceErrorNamingOpAndModule) {
  Branchy model;
  Tensor x = ones({3}, DType::Float64);
  EXPECT_TRUE(testing::all_close(model(x), x, 0, 0));  // eager: just works
  EXPECT_THROW(capture(model, std::make_tuple(x)), TraceError);
  std::string message = error_of([&] { capture(model, std::make_tuple(x)); });
  EXPECT_NE(message.find("item()"), std::string::npos) << message;
  EXPECT_NE(message.find("in module 'gate'"), std::string::npos) << message;
}

}  // namespace
}  // namespace px
