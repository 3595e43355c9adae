// The README's example, built with the examples so that it stays true.

#include <iostream>

#include "parallax/parallax.h"

// A model is an nn::Module whose forward takes and returns anything that converts to a px::Tree.
class TinyNet : public px::nn::ModuleBase<TinyNet> {
 public:
  TinyNet() { fc_ = register_module("fc", std::make_shared<px::nn::Linear>(3, 2)); }
  std::tuple<px::Tensor, px::Shape> forward(const px::Tensor& x, double scale) {
    return {px::sum(px::relu((*fc_)(x))) * scale, x.shape()};
  }

 private:
  std::shared_ptr<px::nn::Linear> fc_;
};

int main() {
  px::Generator gen(0);  // explicit, counter-based: there is no global RNG
  px::Tensor x = px::randn({4, 3}, gen);
  px::Tensor w = px::Tensor::from_vector({0.5, -1, 1, 0.25, -0.5, 2}, {3, 2});
  std::cout << x.transpose(0, 1) << "\n" << px::sum(px::relu(px::matmul(x, w))) << "\n";  // eager ops

  TinyNet net;         // parameters are meta tensors: nothing allocated yet
  net.materialize(0);  // drawn from Philox keyed by (seed, parameter name)
  px::CapturedProgram program = px::capture(net, std::make_tuple(x, 2.0));  // scale = 2.0 is baked in and guarded
  auto [loss, shape] = program.call<std::tuple<px::Tensor, px::Shape>>(x, 2.0);
  std::cout << program.graph() << "loss " << loss << ", shape [" << shape[0] << ", " << shape[1] << "]\n";

  px::JointProgram joint = px::export_joint(program);  // forward + backward, with descriptors
  for (const px::InputDescriptor& input : joint.inputs) std::cout << input << " ";  // Param(fc.weight) ...
  std::cout << "\n";
  try {
    program(x, 3.0);
  } catch (const px::GuardError& error) {
    std::cout << error.what() << "\n";  // input [1]: traced as 2.0, called with 3.0 ...
  }
}
