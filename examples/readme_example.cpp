// The README's example, built with the examples so that it stays true.

#include <iostream>

#include "parallax/parallax.h"

int main() {
  px::Generator gen(0);  // explicit, counter-based: there is no global RNG
  px::Tensor x = px::randn({4, 3}, gen);
  px::Tensor w = px::Tensor::from_vector({0.5, -1, 1, 0.25, -0.5, 2}, {3, 2});
  px::Tensor loss = px::sum(px::relu(px::matmul(x, w)));  // every op goes through the dispatcher
  std::cout << x.transpose(0, 1) << "\n" << loss << "\n";  // views share storage

  // The same ops, traced into an IR graph and differentiated.
  px::ir::Tracer tracer("example");
  px::Tensor tx = tracer.add_input("x", {{4, 3}, px::DType::Float32});
  px::Tensor tw = tracer.add_input("w", {{3, 2}, px::DType::Float32});
  {
    px::InterceptScope scope(tracer);
    tracer.set_outputs({px::sum(px::relu(px::matmul(tx, tw)))});
  }
  px::autodiff::JointGraph joint = px::autodiff::build_joint(tracer.finish());
  std::cout << joint.graph;  // the IR text: forward nodes, then backward nodes
  std::vector<px::Tensor> out = px::ir::interpret(joint.graph, {x, w, px::Tensor::scalar(1.0)});
  std::cout << "loss " << out[0] << ", dloss/dw " << out[2] << "\n";
}
