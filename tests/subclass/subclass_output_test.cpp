// Subclass outputs: rebuilt by unflatten from graph outputs, with the metadata decided at capture;
// and the joint graph of a program over a subclass input differentiates its inner tensors.

#include <gtest/gtest.h>

#include "parallax/autodiff/export.h"
#include "parallax/capture/capture.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/linalg.h"
#include "subclass/test_subclasses.h"
#include "support/test_util.h"

namespace px {
namespace {

using subclass_test::make_scaled;
using subclass_test::same_state;
using subclass_test::ScaledTensor;
using testing::random_tensor;

// Returns a ScaledTensor built in the region: its data is computed, its scale absent, metadata {"scaled": false}.
Tensor double_into_scaled(const Tensor& x) { return make_scaled(x * 2.0); }

TEST(SubclassOutputs, AreRebuiltFromGraphOutputsWithTheCapturedMetadata) {
  Tensor x = random_tensor({3, 2}, DType::Float64, 1);
  auto region = [](const Tensor& input) { return double_into_scaled(input); };
  CapturedProgram program = capture(region, std::make_tuple(x));
  std::vector<std::string> outputs;
  for (const OutputDescriptor& output : program.output_descriptors()) outputs.push_back(output.str());
  EXPECT_EQ(outputs, (std::vector<std::string>{"UserOutput(<root>, data)"}));

  Tensor x2 = random_tensor({3, 2}, DType::Float64, 2);
  Tensor compiled = program.call<Tensor>(x2);
  Tensor eager = region(x2);
  ASSERT_NE(subclass_as<ScaledTensor>(compiled), nullptr);
  EXPECT_EQ(compiled.meta_info(), eager.meta_info());
  EXPECT_TRUE(same_state(compiled, eager));
}

TEST(SubclassOutputs, JointGraphDifferentiatesInnerTensorsButNotMutations) {
  // First use of a ScaledTensor: the scale is computed (and stashed) inside the region.
  Tensor x = make_scaled(random_tensor({2, 3}, DType::Float64, 3));
  Tensor w = random_tensor({3, 4}, DType::Float64, 4);
  auto region = [](const Tensor& w_, const Tensor& x_) { return matmul(x_, w_); };
  CapturedProgram program = capture(region, std::make_tuple(w, x));
  JointProgram joint = export_joint(program);
  std::vector<std::string> inputs, outputs;
  for (const InputDescriptor& input : joint.inputs) inputs.push_back(input.str());
  for (const OutputDescriptor& output : joint.outputs) outputs.push_back(output.str());
  // One tangent: for the user output only, not for the stashed scale.
  EXPECT_EQ(inputs, (std::vector<std::string>{"UserInput([0])", "SubclassInner([1], data)", "Tangent(<root>)"}));
  EXPECT_EQ(outputs, (std::vector<std::string>{"UserOutput(<root>)", "AttrMutation([1], scale)",
                                               "Grad(of: UserInput([0]))", "Grad(of: SubclassInner([1], data))"}));
}

}  // namespace
}  // namespace px
