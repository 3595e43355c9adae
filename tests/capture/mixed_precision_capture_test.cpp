// capture under a MixedPrecisionPolicy: parameters and floating inputs reach forward cast to
// param_dtype, each cast right before its first reader and stamped with its parameter's module,
// outputs cast to output_dtype, and the joint graph's gradients back in the parameters' dtype.

#include <gtest/gtest.h>

#include "parallax/autodiff/export.h"
#include "parallax/capture/capture.h"
#include "parallax/nn/layers.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/reduction.h"
#include "support/test_util.h"

namespace px {
namespace {

class TwoLayers : public nn::ModuleBase<TwoLayers> {
 public:
  TwoLayers() {
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(8, 16));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(16, 4));
  }
  Tensor forward(const Tensor& x) { return sum(relu((*fc2_)(relu((*fc1_)(x))))); }

 private:
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

MixedPrecisionPolicy bf16_policy() { return {DType::BFloat16, DType::Float32, DType::Float32}; }

CaptureOptions with(const MixedPrecisionPolicy& precision) {
  CaptureOptions options;
  options.precision = precision;
  return options;
}

TEST(MixedPrecisionCapture, CastsSitRightBeforeTheirFirstReaderInTheirParametersModule) {
  TwoLayers model;
  const Tensor x = testing::random_tensor({2, 8}, DType::Float32, 1);
  CapturedProgram program = capture(model, std::make_tuple(x), with(bf16_policy()));
  const ir::Graph& graph = program.primary().graph;
  for (ir::ValueId input : graph.inputs()) EXPECT_EQ(graph.meta(input).dtype, DType::Float32);
  const auto users = graph.users();
  int64_t casts = 0;
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const ir::Node& node = graph.nodes()[n];
    if (node.op->name != "cast" || node.attrs.get_dtype("dtype") != DType::BFloat16) continue;
    ++casts;
    // Only casts lie between a cast and its first reader.
    const size_t reader = users.at(node.outputs[0]).front();
    ASSERT_GT(reader, n);
    for (size_t k = n + 1; k < reader; ++k) EXPECT_EQ(graph.nodes()[k].op->name, "cast") << "node " << k;
    const std::string& input_name = graph.value(node.inputs[0]).name;
    if (input_name.rfind("fc", 0) == 0) {
      EXPECT_EQ(node.provenance.module_path, input_name.substr(0, 3)) << input_name;  // "fc1.weight" in "fc1"
    }
  }
  EXPECT_EQ(casts, 5);  // four parameters and x
  const ir::Node& last = graph.nodes().back();
  EXPECT_EQ(last.op->name, "cast");
  EXPECT_EQ(graph.meta(graph.outputs()[0]).dtype, DType::Float32);
}

TEST(MixedPrecisionCapture, ComputesInBf16AndTheGradientsComeBackInFloat32) {
  TwoLayers model;
  model.materialize(3);
  const Tensor x = testing::random_tensor({2, 8}, DType::Float32, 1);
  const double f32 = model(x).to(DType::Float64).item<double>();
  CapturedProgram program = capture(model, std::make_tuple(x), with(bf16_policy()));
  const Tensor loss = program.call<Tensor>(x);
  EXPECT_EQ(loss.dtype(), DType::Float32);
  const double bf16 = loss.to(DType::Float64).item<double>();
  EXPECT_NE(bf16, f32);
  EXPECT_NEAR(bf16, f32, 0.02 * std::abs(f32) + 1e-3);

  const JointProgram joint = export_joint(program.primary());
  for (const InputDescriptor& input : joint.inputs) {
    if (input.kind != InputDescriptor::Kind::Param) continue;
    const int64_t grad = joint.grad_output_of(input);
    ASSERT_GE(grad, 0) << input.str();
    EXPECT_EQ(joint.graph.meta(joint.graph.outputs()[static_cast<size_t>(grad)]).dtype, DType::Float32) << input.str();
  }
}

TEST(MixedPrecisionCapture, AnEmptyPolicyChangesNothingAndABadOneIsRejected) {
  TwoLayers model;
  const Tensor x = testing::random_tensor({2, 8}, DType::Float32, 1);
  CapturedProgram plain = capture(model, std::make_tuple(x));
  CapturedProgram empty = capture(model, std::make_tuple(x), with({}));
  EXPECT_EQ(plain.primary().graph.str(), empty.primary().graph.str());
  const std::string message = testing::error_message([&] {
    capture(model, std::make_tuple(x), with({DType::Int64, std::nullopt, std::nullopt}));
  });
  EXPECT_NE(message.find("param_dtype must be a floating dtype"), std::string::npos) << message;
}

}  // namespace
}  // namespace px
