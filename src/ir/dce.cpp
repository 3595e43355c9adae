#include <set>

#include "parallax/ir/passes.h"

namespace px::ir {

PassResult DeadCodeElimination::run(Graph& graph, PassContext& context) const {
  const std::vector<Node>& nodes = graph.nodes();
  std::set<ValueId> live(graph.outputs().begin(), graph.outputs().end());
  std::vector<bool> erase(nodes.size(), false);
  int64_t erased = 0;
  for (size_t index = nodes.size(); index-- > 0;) {
    const Node& node = nodes[index];
    bool used = false;
    for (ValueId output : node.outputs) used = used || live.count(output) != 0;
    if (!used) {
      erase[index] = true;
      ++erased;
      continue;
    }
    live.insert(node.inputs.begin(), node.inputs.end());
  }
  if (erased == 0) return {};
  graph.erase_nodes(erase);
  context.stats["dce.erased_nodes"] += erased;
  return {true};
}

}  // namespace px::ir
