#include "parallax/autodiff/joint.h"

#include <gtest/gtest.h>

#include "parallax/ir/interpreter.h"
#include "parallax/ir/provenance.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/dispatch.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::random_ints;
using testing::random_tensor;

// loss = cross_entropy(linear(gelu(linear(x, w1, b1)), w2, b2), y), as an IR graph.
ir::Graph mlp_loss_graph(int64_t batch, int64_t in, int64_t hidden, int64_t classes) {
  ir::Tracer tracer("mlp");
  Tensor w1 = tracer.add_input("w1", {{hidden, in}, DType::Float64});
  Tensor b1 = tracer.add_input("b1", {{hidden}, DType::Float64});
  Tensor w2 = tracer.add_input("w2", {{classes, hidden}, DType::Float64});
  Tensor b2 = tracer.add_input("b2", {{classes}, DType::Float64});
  Tensor x = tracer.add_input("x", {{batch, in}, DType::Float64});
  Tensor y = tracer.add_input("y", {{batch}, DType::Int64});
  {
    InterceptScope scope(tracer);
    Tensor h;
    {
      ir::ProvenanceScope layer("fc1");
      h = call1("gelu", {call1("linear", {x, w1, b1})});
    }
    ir::ProvenanceScope layer("fc2");
    Tensor logits = call1("linear", {h, w2, b2});
    tracer.set_outputs({call1("cross_entropy", {logits, y})});
  }
  return tracer.finish();
}

std::vector<Tensor> mlp_inputs(int64_t batch, int64_t in, int64_t hidden, int64_t classes) {
  return {random_tensor({hidden, in}, DType::Float64, 1),      random_tensor({hidden}, DType::Float64, 2),
          random_tensor({classes, hidden}, DType::Float64, 3), random_tensor({classes}, DType::Float64, 4),
          random_tensor({batch, in}, DType::Float64, 5),       random_ints({batch}, 0, classes, 6)};
}

TEST(Joint, GradientsMatchFiniteDifferencesOfTheForwardGraph) {
  ir::Graph forward = mlp_loss_graph(6, 5, 7, 3);
  autodiff::JointGraph joint = autodiff::build_joint(forward);
  // Every floating input gets a gradient; the int64 labels do not.
  EXPECT_EQ(joint.grad_of_input, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(joint.tangent_for_output, (std::vector<size_t>{0}));
  ASSERT_EQ(joint.num_forward_outputs, 1u);

  std::vector<Tensor> inputs = mlp_inputs(6, 5, 7, 3);
  std::vector<Tensor> joint_inputs = inputs;
  joint_inputs.push_back(Tensor::scalar(1.0, DType::Float64));
  std::vector<Tensor> results = ir::interpret(joint.graph, joint_inputs);
  ASSERT_EQ(results.size(), 6u);
  EXPECT_NEAR(results[0].item<double>(), ir::interpret(forward, inputs)[0].item<double>(), 1e-14);

  const double eps = 1e-6;
  for (size_t g = 0; g < joint.grad_of_input.size(); ++g) {
    size_t input = joint.grad_of_input[g];
    std::vector<double> base = inputs[input].to_vector<double>();
    std::vector<double> analytic = results[1 + g].to_vector<double>();
    ASSERT_EQ(analytic.size(), base.size());
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<Tensor> shifted = inputs;
      std::vector<double> plus = base, minus = base;
      plus[j] += eps;
      minus[j] -= eps;
      shifted[input] = Tensor::from_vector(plus, inputs[input].shape(), DType::Float64);
      double f_plus = ir::interpret(forward, shifted)[0].item<double>();
      shifted[input] = Tensor::from_vector(minus, inputs[input].shape(), DType::Float64);
      double f_minus = ir::interpret(forward, shifted)[0].item<double>();
      EXPECT_NEAR(analytic[j], (f_plus - f_minus) / (2 * eps), 1e-7) << "input " << input << " element " << j;
    }
  }
}

TEST(Joint, BackwardNodesCarryTheirForwardModulePath) {
  autodiff::JointGraph joint = autodiff::build_joint(mlp_loss_graph(2, 3, 4, 2));
  bool saw_backward_fc1 = false;
  for (const ir::Node& node : joint.graph.nodes()) {
    if (node.provenance.phase == ir::Phase::Backward && node.provenance.module_path == "fc1") saw_backward_fc1 = true;
  }
  EXPECT_TRUE(saw_backward_fc1);
}

TEST(Joint, UnusedInputGetsZeroGradient) {
  ir::Tracer tracer("partial");
  Tensor a = tracer.add_input("a", {{3}, DType::Float64});
  Tensor unused = tracer.add_input("unused", {{2}, DType::Float64});
  {
    InterceptScope scope(tracer);
    tracer.set_outputs({call1("sum", {call1("mul", {a, a})})});
  }
  autodiff::JointGraph joint = autodiff::build_joint(tracer.finish());
  std::vector<Tensor> results = ir::interpret(
      joint.graph, {Tensor::from_vector({1, 2, 3}, {3}, DType::Float64),
                    Tensor::from_vector({5, 6}, {2}, DType::Float64), Tensor::scalar(2.0, DType::Float64)});
  EXPECT_TRUE(testing::all_close(results[1], std::vector<double>{4, 8, 12}));  // 2 * 2a
  EXPECT_TRUE(testing::all_close(results[2], std::vector<double>{0, 0}));
}

TEST(Joint, RejectsBadRequiresGrad) {
  ir::Graph forward = mlp_loss_graph(2, 3, 4, 2);
  autodiff::JointOptions options;
  options.requires_grad = {true};
  EXPECT_THROW(autodiff::build_joint(forward, options), ValueError);
  options.requires_grad.assign(6, false);
  options.requires_grad[5] = true;  // the int64 labels
  EXPECT_THROW(autodiff::build_joint(forward, options), ValueError);
}

}  // namespace
}  // namespace px
