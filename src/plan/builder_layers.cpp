// Repeated-layer clustering: which graph nodes and inputs share a decision (see plan/builder.h).

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "plan/builder_internal.h"

namespace px::plan::detail {

namespace {

// "layers.3.attention.wq" -> list "layers", index 3, rest "attention.wq".
struct LayerPath {
  std::string list;
  int64_t index = 0;
  std::string rest;
};

bool all_digits(std::string_view text) {
  return !text.empty() && text.size() < 10 &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

std::optional<LayerPath> parse_layer_path(const std::string& path) {
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('.', begin);
    if (end == std::string::npos) end = path.size();
    std::string_view component(path.data() + begin, end - begin);
    if (all_digits(component)) {
      LayerPath parsed;
      parsed.list = begin == 0 ? "" : path.substr(0, begin - 1);
      parsed.index = std::stoll(std::string(component));
      parsed.rest = end < path.size() ? path.substr(end + 1) : "";
      return parsed;
    }
    begin = end + 1;
  }
  return std::nullopt;
}

void append_metas(std::string& text, const ir::Graph& graph, const std::vector<ir::ValueId>& values) {
  for (ir::ValueId value : values) {
    text += graph.meta(value).str();
    text += ',';
  }
}

// What must agree between a node and its representative, beyond its position in the layer.
std::string node_signature(const ir::Graph& graph, const ir::Node& node, const std::string& rest) {
  std::string text = rest;
  text += '|';
  text += ir::phase_name(node.provenance.phase);
  text += '|';
  text += node.op->name;
  text += node.attrs.str();
  text += '|';
  append_metas(text, graph, node.inputs);
  text += "->";
  append_metas(text, graph, node.outputs);
  text += '\n';
  return text;
}

struct Layer {
  std::vector<int64_t> nodes;   // graph node indices, in graph order
  std::vector<int64_t> inputs;  // graph input indices (parameters, buffers), in input order
  std::string signature;
};

}  // namespace

Clustering cluster_layers(const JointProgram& program, bool enabled) {
  const ir::Graph& graph = program.graph;
  Clustering result;
  result.node_rep.resize(graph.nodes().size());
  for (size_t n = 0; n < result.node_rep.size(); ++n) result.node_rep[n] = static_cast<int64_t>(n);
  result.input_rep.resize(graph.inputs().size());
  for (size_t i = 0; i < result.input_rep.size(); ++i) result.input_rep[i] = static_cast<int64_t>(i);
  result.node_layer.assign(graph.nodes().size(), -1);
  if (!enabled) return result;

  // list path -> layer index -> its nodes and parameters.
  std::map<std::string, std::map<int64_t, Layer>> lists;
  std::map<std::pair<std::string, int64_t>, int64_t> layer_ids;
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const ir::Node& node = graph.nodes()[n];
    std::optional<LayerPath> parsed = parse_layer_path(node.provenance.module_path);
    if (!parsed) continue;
    const auto id = layer_ids.try_emplace({parsed->list, parsed->index}, static_cast<int64_t>(layer_ids.size()));
    result.node_layer[n] = id.first->second;
    Layer& layer = lists[parsed->list][parsed->index];
    layer.nodes.push_back(static_cast<int64_t>(n));
    layer.signature += node_signature(graph, node, parsed->rest);
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const InputDescriptor& input = program.inputs[i];
    if (input.fqns.empty()) continue;  // user inputs and tangents are never shared
    std::optional<LayerPath> parsed = parse_layer_path(input.fqns.front());
    if (!parsed) continue;
    auto list = lists.find(parsed->list);
    // A parameter of a layer that has no nodes stays on its own.
    if (list == lists.end() || !list->second.count(parsed->index)) continue;
    Layer& layer = list->second[parsed->index];
    layer.inputs.push_back(static_cast<int64_t>(i));
    layer.signature += "input " + input.str().substr(0, input.str().find('(')) + " " + parsed->rest + " " +
                       graph.meta(graph.inputs()[i]).str() + "\n";
  }

  for (auto& [list_path, layers] : lists) {
    // Identical layers, grouped by signature; the map keeps each group's layers ascending.
    std::map<std::string, std::vector<int64_t>> groups;
    for (const auto& [index, layer] : layers) groups[layer.signature].push_back(index);
    std::vector<LayerGroup> found;
    for (const auto& [signature, indices] : groups) {
      if (indices.size() < 2) continue;
      const Layer& rep = layers.at(indices.front());
      for (size_t k = 1; k < indices.size(); ++k) {
        const Layer& member = layers.at(indices[k]);
        for (size_t p = 0; p < member.nodes.size(); ++p) {
          result.node_rep[static_cast<size_t>(member.nodes[p])] = rep.nodes[p];
        }
        for (size_t p = 0; p < member.inputs.size(); ++p) {
          result.input_rep[static_cast<size_t>(member.inputs[p])] = rep.inputs[p];
        }
      }
      found.push_back(LayerGroup{list_path, indices});
    }
    std::sort(found.begin(), found.end(),
              [](const LayerGroup& a, const LayerGroup& b) { return a.layers.front() < b.layers.front(); });
    result.groups.insert(result.groups.end(), found.begin(), found.end());
  }
  return result;
}

}  // namespace px::plan::detail
