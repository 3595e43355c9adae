// export_joint: descriptors on every input and output, and gradients that match
// central finite differences (float64) for an MLP, a transformer block and a 2-layer GPT.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "parallax/autodiff/export.h"
#include "parallax/capture/capture.h"
#include "parallax/ir/interpreter.h"
#include "parallax/nn/models.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/reduction.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::random_ints;
using testing::random_tensor;

// The forward graph's inputs for a call with `example`: the module's tensors, then the user leaves read.
std::vector<Tensor> forward_inputs(const CapturedProgram& program, const Tree& example) {
  return program.primary().graph_inputs(example);
}

// sum over tangents t of sum(output_t * t): the scalar whose gradient the joint graph computes.
double objective(const CapturedGraph& captured, const std::vector<Tensor>& inputs,
                 const std::vector<std::pair<size_t, Tensor>>& seeded) {
  std::vector<Tensor> outputs = ir::interpret(captured.graph, inputs);
  double total = 0;
  for (const auto& [output, tangent] : seeded) total += sum(outputs[output] * tangent).item<double>();
  return total;
}

Tensor perturbed(const Tensor& base, int64_t index, double delta) {
  Tensor copy = base.contiguous().clone();
  copy.data<double>()[index] += delta;
  return copy;
}

// Checks every gradient of the joint program against central differences on up to
// `samples` elements of each input (spread over the tensor).
void check_joint_gradients(const CapturedProgram& program, const Tree& example, int64_t samples) {
  const CapturedGraph& captured = program.primary();
  JointProgram joint = export_joint(program);
  std::vector<Tensor> inputs = forward_inputs(program, example);
  std::vector<Tensor> joint_inputs = inputs;
  std::vector<std::pair<size_t, Tensor>> seeded;
  for (size_t i = captured.inputs.size(); i < joint.inputs.size(); ++i) {
    const InputDescriptor& tangent = joint.inputs[i];
    ASSERT_EQ(tangent.kind, InputDescriptor::Kind::Tangent);
    auto output = std::find_if(captured.outputs.begin(), captured.outputs.end(),
                               [&](const OutputDescriptor& o) { return o.leaf == tangent.leaf; });
    ASSERT_NE(output, captured.outputs.end());
    Tensor seed = random_tensor(joint.graph.meta(joint.graph.inputs()[i]).shape, DType::Float64, 100 + i);
    seeded.emplace_back(output - captured.outputs.begin(), seed);
    joint_inputs.push_back(seed);
  }
  ASSERT_FALSE(seeded.empty());
  std::vector<Tensor> joint_outputs = ir::interpret(joint.graph, joint_inputs);

  int64_t checked = 0;
  for (size_t d = joint.num_forward_outputs; d < joint.outputs.size(); ++d) {
    const OutputDescriptor& grad = joint.outputs[d];
    const InputDescriptor& of = grad.of.at(0);
    auto position = std::find(captured.inputs.begin(), captured.inputs.end(), of);
    ASSERT_NE(position, captured.inputs.end()) << grad.str();
    size_t input = position - captured.inputs.begin();
    if (grad.none) {
      EXPECT_EQ(joint.graph_output[d], -1);
      continue;
    }
    const Tensor& analytic = joint_outputs.at(joint.graph_output[d]);
    ASSERT_EQ(analytic.shape(), inputs[input].shape()) << grad.str();
    std::vector<double> values = analytic.to_vector<double>();
    int64_t numel = inputs[input].numel();
    int64_t step = std::max<int64_t>(1, numel / samples);
    for (int64_t e = 0; e < numel; e += step) {
      const double h = 1e-6;
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[input] = perturbed(inputs[input], e, h);
      minus[input] = perturbed(inputs[input], e, -h);
      double numeric = (objective(captured, plus, seeded) - objective(captured, minus, seeded)) / (2 * h);
      EXPECT_NEAR(values[e], numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << grad.str() << " element " << e;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

// loss = cross_entropy(mlp(x), y): y is an int64 input, so its gradient is an explicit none.
class MlpLoss : public nn::ModuleBase<MlpLoss> {
 public:
  MlpLoss() { mlp_ = register_module("mlp", std::make_shared<nn::MLPModel>(5, 7, 3, DType::Float64)); }
  Tensor forward(const Tensor& x, const Tensor& y) { return cross_entropy((*mlp_)(x), y); }

 private:
  std::shared_ptr<nn::MLPModel> mlp_;
};

TEST(JointExport, MlpGradientsMatchFiniteDifferences) {
  MlpLoss model;
  model.materialize(11);
  Tensor x = random_tensor({4, 5}, DType::Float64, 1), y = random_ints({4}, 0, 3, 2);
  CapturedProgram program = capture(model, std::make_tuple(x, y));
  check_joint_gradients(program, to_tree(std::make_tuple(x, y)), 1000);
  JointProgram joint = export_joint(program);
  std::vector<std::string> outputs;
  for (const OutputDescriptor& output : joint.outputs) outputs.push_back(output.str());
  EXPECT_EQ(outputs, (std::vector<std::string>{"UserOutput(<root>)", "Grad(of: Param(mlp.fc1.weight))",
                                               "Grad(of: Param(mlp.fc1.bias))", "Grad(of: Param(mlp.fc2.weight))",
                                               "Grad(of: Param(mlp.fc2.bias))", "Grad(of: UserInput([0]))",
                                               "Grad(of: UserInput([1]), none)"}));
}

TEST(JointExport, TransformerBlockGradientsMatchFiniteDifferences) {
  nn::BlockConfig config;
  config.attention = {.dim = 8, .n_heads = 4, .n_kv_heads = 2, .bias = false, .rope = true, .rope_theta = 10000.0};
  config.norm = nn::NormKind::RMSNorm;
  config.mlp = nn::Activation::SwiGLU;
  config.hidden = 12;
  nn::TransformerBlock block(config, DType::Float64);
  block.materialize(5);
  Tree example = to_tree(std::make_tuple(random_tensor({2, 3, 8}, DType::Float64, 4)));
  CapturedProgram program = capture(block, std::make_tuple(flatten(example).leaves[0].as_tensor()));
  check_joint_gradients(program, example, 12);
}

TEST(JointExport, GptBlockWithLayerNormGradientsMatchFiniteDifferences) {
  nn::BlockConfig config;
  config.attention = {.dim = 8, .n_heads = 2, .n_kv_heads = 0, .bias = true, .rope = false, .rope_theta = 10000.0};
  nn::TransformerBlock block(config, DType::Float64);
  block.materialize(6);
  Tensor x = random_tensor({2, 3, 8}, DType::Float64, 4);
  CapturedProgram program = capture(block, std::make_tuple(x));
  check_joint_gradients(program, to_tree(std::make_tuple(x)), 12);
}

// A 2-layer GPT returning its LM loss; lm_head is tied to wte, so one input carries both names.
class GptLoss : public nn::ModuleBase<GptLoss> {
 public:
  explicit GptLoss(const nn::GPTConfig& config) { gpt_ = register_module("gpt", std::make_shared<nn::GPT>(config)); }
  Tensor forward(const Tensor& tokens, const Tensor& targets) { return nn::lm_loss((*gpt_)(tokens), targets); }

 private:
  std::shared_ptr<nn::GPT> gpt_;
};

TEST(JointExport, TwoLayerGptGradientsMatchFiniteDifferences) {
  nn::GPTConfig config{.vocab = 11, .max_seq = 8, .dim = 8, .n_layers = 2, .n_heads = 2, .dtype = DType::Float64};
  GptLoss model(config);
  model.materialize(9);
  Tensor tokens = random_ints({2, 4}, 0, 11, 1), targets = random_ints({2, 4}, 0, 11, 2);
  CapturedProgram program = capture(model, std::make_tuple(tokens, targets));
  EXPECT_EQ(program.input_descriptors()[0].str(), "Param(gpt.wte.weight, gpt.lm_head.weight)");
  check_joint_gradients(program, to_tree(std::make_tuple(tokens, targets)), 6);

  JointProgram joint = export_joint(program);
  // Tokens and targets are int64: explicit none gradients; every node is tagged forward or backward.
  EXPECT_EQ(joint.outputs.back().str(), "Grad(of: UserInput([1]), none)");
  size_t backward = 0;
  for (const ir::Node& node : joint.graph.nodes()) backward += node.provenance.phase == ir::Phase::Backward;
  EXPECT_GT(backward, 0u);
  EXPECT_LT(backward, joint.graph.nodes().size());
}

}  // namespace
}  // namespace px
