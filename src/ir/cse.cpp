#include <algorithm>
#include <map>

#include "parallax/ir/passes.h"

namespace px::ir {

namespace {

// A cheap bucket key; candidates in a bucket are compared exactly.
std::string node_key(const Node& node) {
  std::string key = node.op ? node.op->name : "";
  key += "(";
  for (ValueId input : node.inputs) key += std::to_string(input) + ",";
  return key + ")" + node.attrs.str();
}

bool same_computation(const Graph& graph, const Node& a, const Node& b) {
  if (a.op != b.op || a.inputs != b.inputs || !(a.attrs == b.attrs) || a.outputs.size() != b.outputs.size()) {
    return false;
  }
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (graph.meta(a.outputs[i]) != graph.meta(b.outputs[i])) return false;
  }
  return true;
}

}  // namespace

PassResult CommonSubexpressionElimination::run(Graph& graph, PassContext& context) const {
  std::vector<Node>& nodes = graph.mutable_nodes();
  std::map<ValueId, ValueId> replacement;  // erased output -> the kept node's output
  std::map<std::string, std::vector<size_t>> seen;
  std::vector<bool> erase(nodes.size(), false);
  int64_t erased = 0;
  for (size_t index = 0; index < nodes.size(); ++index) {
    Node& node = nodes[index];
    for (ValueId& input : node.inputs) {
      auto it = replacement.find(input);
      if (it != replacement.end()) input = it->second;
    }
    std::vector<size_t>& bucket = seen[node_key(node)];
    auto earlier = std::find_if(bucket.begin(), bucket.end(),
                                [&](size_t other) { return same_computation(graph, nodes[other], node); });
    if (earlier == bucket.end()) {
      bucket.push_back(index);
      continue;
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) replacement[node.outputs[i]] = nodes[*earlier].outputs[i];
    erase[index] = true;
    ++erased;
  }
  if (erased == 0) return {};
  for (ValueId& output : graph.mutable_outputs()) {
    auto it = replacement.find(output);
    if (it != replacement.end()) output = it->second;
  }
  graph.erase_nodes(erase);
  context.stats["cse.erased_nodes"] += erased;
  return {true};
}

}  // namespace px::ir
