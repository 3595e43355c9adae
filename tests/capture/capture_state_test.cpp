// No global state: capturing many models in one process gives exactly what
// capturing each alone gives (compared as printed graphs, and against a golden text).

#include <gtest/gtest.h>

#include "parallax/autodiff/export.h"
#include "parallax/capture/capture.h"
#include "parallax/nn/models.h"
#include "parallax/ops/elementwise.h"

namespace px {
namespace {

CaptureOptions named(std::string name, std::vector<std::string> input_names = {}) {
  CaptureOptions options;
  options.name = std::move(name);
  options.input_names = std::move(input_names);
  return options;
}

std::string gpt_joint_text() {
  nn::GPT model(nn::gpt_mini());
  CapturedProgram program = capture(model, std::make_tuple(Tensor::meta({2, 8}, DType::Int64)), named("gpt"));
  return program.graph().str() + export_joint(program).graph.str();
}

std::string llama_joint_text() {
  nn::Llama model(nn::llama_mini());
  CapturedProgram program = capture(model, std::make_tuple(Tensor::meta({2, 8}, DType::Int64)), named("llama"));
  return program.graph().str() + export_joint(program).graph.str();
}

TEST(CaptureState, RepeatedCapturesInOneProcessPrintIdentically) {
  std::string gpt = gpt_joint_text();
  std::string llama = llama_joint_text();
  EXPECT_EQ(gpt_joint_text(), gpt);
  EXPECT_EQ(llama_joint_text(), llama);
  EXPECT_EQ(gpt_joint_text(), gpt);
}

// A tiny program whose whole graph is pinned: value ids, names and provenance come
// from the capture alone, never from a process-wide counter.
class Scale : public nn::ModuleBase<Scale> {
 public:
  Scale() {
    proj_ = register_module("proj", std::make_shared<nn::Linear>(3, 2, true, DType::Float64));
    register_parameter("unused", {4}, nn::Init::zeros(), DType::Float64);
  }
  Tensor forward(const Tensor& x, double factor) { return (*proj_)(x)*factor; }

 private:
  std::shared_ptr<nn::Linear> proj_;
};

TEST(CaptureState, GraphTextIsTheSameAloneOrInTheSuite) {
  Scale model;
  CapturedProgram program =
      capture(model, std::make_tuple(Tensor::meta({5, 3}, DType::Float64), 0.5), named("scale", {"x", "factor"}));
  EXPECT_EQ(program.graph().str(),
            R"(graph scale(%0: f64[4] "unused", %1: f64[2,3] "proj.weight", %2: f64[2] "proj.bias", %3: f64[5,3] "x") {
  %4 = linear(%3, %1, %2) : f64[5,2] @ "proj" forward
  %5 = mul_scalar(%4) {scalar=0.5} : f64[5,2]
  return %5
}
)");
  EXPECT_EQ(
      export_joint(program).graph.str(),
      R"(graph "scale.joint"(%0: f64[4] "unused", %1: f64[2,3] "proj.weight", %2: f64[2] "proj.bias", %3: f64[5,3] "x", %6: f64[5,2] "tangent") {
  %4 = linear(%3, %1, %2) : f64[5,2] @ "proj" forward
  %5 = mul_scalar(%4) {scalar=0.5} : f64[5,2]
  %7 = mul_scalar(%6) {scalar=0.5} : f64[5,2] @ "" backward
  %8 = reshape(%7) {shape=[5,2]} : f64[5,2] @ "proj" backward
  %9 = reshape(%3) {shape=[5,3]} : f64[5,3] @ "proj" backward
  %10 = transpose(%8) {dim0=0, dim1=1} : f64[2,5] @ "proj" backward
  %11 = matmul(%7, %1) : f64[5,3] @ "proj" backward
  %12 = matmul(%10, %9) : f64[2,3] @ "proj" backward
  %13 = sum(%8) {dims=[0], keepdim=false} : f64[2] @ "proj" backward
  return %5, %12, %13, %11
}
)");
}

TEST(CaptureState, Llama3_8bShapedModelCapturesOnMetaTensors) {
  nn::Llama model(nn::llama3_8b());
  ASSERT_TRUE(model.is_meta());
  CapturedProgram program = capture(model, std::make_tuple(Tensor::meta({1, 128}, DType::Int64)), named("llama3_8b"));
  EXPECT_EQ(program.primary().num_params, 32u * 9u + 3u);
  JointProgram joint = export_joint(program);
  EXPECT_EQ(joint.graph.inputs().size(), 32u * 9u + 3u + 2u);  // + tokens + the tangent of the logits
  EXPECT_EQ(joint.graph.meta(joint.graph.outputs()[0]).shape, (Shape{1, 128, 128256}));
  EXPECT_TRUE(model.is_meta());  // nothing was materialized
}

}  // namespace
}  // namespace px
