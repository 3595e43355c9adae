#include "parallax/ir/interpreter.h"

#include "parallax/ir/schedule.h"
#include "parallax/ops/dispatch.h"

namespace px::ir {

std::vector<Tensor> interpret(const Graph& graph, const std::vector<Tensor>& inputs) {
  const std::string who = "interpret";
  const Schedule schedule = make_schedule(graph, who);
  check_run_inputs(graph, inputs, who);
  std::vector<Tensor> slots(static_cast<size_t>(schedule.num_slots));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (schedule.input_slots[i] >= 0) slots[static_cast<size_t>(schedule.input_slots[i])] = inputs[i];
  }
  std::vector<Tensor> args;
  for (size_t index = 0; index < schedule.steps.size(); ++index) {
    const Node& node = graph.nodes()[index];
    const Schedule::Step& step = schedule.steps[index];
    args.clear();
    for (int64_t slot : step.inputs) args.push_back(slots[static_cast<size_t>(slot)]);
    std::vector<Tensor> results = call(*node.op, args, node.attrs);
    check_node_results(graph, node, results, who);
    args.clear();
    for (int64_t slot : step.release) slots[static_cast<size_t>(slot)] = Tensor();
    for (size_t i = 0; i < results.size(); ++i) {
      if (step.outputs[i] >= 0) slots[static_cast<size_t>(step.outputs[i])] = std::move(results[i]);
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(schedule.output_slots.size());
  for (int64_t slot : schedule.output_slots) outputs.push_back(slots[static_cast<size_t>(slot)]);
  return outputs;
}

}  // namespace px::ir
