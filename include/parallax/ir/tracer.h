#pragma once
// The tracer records op calls into a Graph. While installed (px::InterceptScope),
// every op call on this thread whose inputs are its proxies appends a node,
// with output types from the op's inference, and returns proxies of the outputs.
// Nothing is computed or allocated: tracing a 70B-parameter model is cheap.
//
//   Tracer tracer("mlp");
//   Tensor x = tracer.add_input("x", {{8, 4}, DType::Float32});
//   Tensor w = tracer.add_input("w", {{16, 4}, DType::Float32});
//   { InterceptScope scope(tracer);
//     tracer.set_outputs({px::call1(op::matmul(), {x, w.transpose(0, 1)})}); }
//   Graph graph = tracer.finish();
//
// Nodes carry the current ProvenanceScope (provenance.h). Every tensor an op
// reads must be a proxy of this trace: a concrete tensor, a meta tensor or a
// proxy of another trace raises ValueError naming the op and the input.

#include <memory>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ir/graph.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/op_handles.h"

namespace px::ir {

class Tracer : public DispatchInterceptor {
 public:
  explicit Tracer(std::string graph_name = "graph");
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // A new graph input; returns its proxy.
  Tensor add_input(std::string name, TensorMeta meta);
  std::vector<Tensor> intercept(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) override;
  // The graph's outputs: proxies of this trace.
  void set_outputs(const std::vector<Tensor>& outputs);
  // Gives a traced value a debug name (printed in the IR text).
  void set_name(const Tensor& proxy, std::string name);

  // True if `tensor` is a proxy made by this tracer.
  bool owns(const Tensor& tensor) const;
  // The value a proxy of this trace stands for; ValueError otherwise.
  ValueId value_of(const Tensor& proxy) const;
  const Graph& graph() const;

  // Verifies the graph and hands it over; the tracer records nothing afterwards.
  Graph finish();

 private:
  struct State;
  void check_active(std::string_view what) const;
  ValueId value_of(const Tensor& tensor, const std::string& role) const;
  Tensor make_proxy(ValueId id) const;

  std::shared_ptr<State> state_;
};

}  // namespace px::ir
