// build_problem: a ShardingProblem from a joint graph (semantics in plan/builder.h).

#include "parallax/plan/builder.h"

#include <chrono>
#include <map>
#include <tuple>
#include <unordered_map>

#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "plan/builder_internal.h"

namespace px::plan {

namespace {

using detail::Clustering;

void check_program(const JointProgram& program, const dist::DeviceMesh& mesh, const dist::MeshTopology& topology,
                   const PlanOptions& options) {
  const ir::Graph& graph = program.graph;
  if (program.inputs.size() != graph.inputs().size()) {
    throw ValueError("build_problem: " + std::to_string(program.inputs.size()) + " input descriptors for " +
                     std::to_string(graph.inputs().size()) + " graph inputs");
  }
  if (program.graph_output.size() != program.outputs.size()) {
    throw ValueError("build_problem: " + std::to_string(program.graph_output.size()) + " graph output indices for " +
                     std::to_string(program.outputs.size()) + " output descriptors");
  }
  for (int64_t output : program.graph_output) {
    if (output < -1 || output >= static_cast<int64_t>(graph.outputs().size())) {
      throw ValueError("build_problem: output descriptor names graph output " + std::to_string(output) + " of " +
                       std::to_string(graph.outputs().size()));
    }
  }
  if (static_cast<int64_t>(topology.links.size()) != mesh.ndim()) {
    throw ValueError("build_problem: the topology has " + std::to_string(topology.links.size()) +
                     " link profiles for " + mesh.str());
  }
  options.device.validate();
  options.precision.validate("build_problem");
  if (options.optimizer_states < 0) {
    throw ValueError("build_problem: optimizer_states must be >= 0, got " + std::to_string(options.optimizer_states));
  }
  if (options.memory_limit_bytes && !(*options.memory_limit_bytes > 0)) {
    throw ValueError("build_problem: memory_limit_bytes must be positive, got " +
                     std::to_string(*options.memory_limit_bytes));
  }
}

// Per graph input: the graph output holding its gradient (-1 for none), and per graph output
// whether it is only some parameter's gradient.
struct Gradients {
  std::vector<int64_t> of_input;
  std::vector<bool> grad_only;
};

Gradients find_gradients(const JointProgram& program) {
  const size_t num_outputs = program.graph.outputs().size();
  Gradients result{std::vector<int64_t>(program.inputs.size(), -1), std::vector<bool>(num_outputs, false)};
  std::map<std::string, size_t> input_index;
  for (size_t i = 0; i < program.inputs.size(); ++i) input_index.emplace(program.inputs[i].str(), i);
  std::vector<bool> other_use(num_outputs, false);
  for (size_t d = 0; d < program.outputs.size(); ++d) {
    int64_t output = program.graph_output[d];
    if (output < 0) continue;
    const OutputDescriptor& descriptor = program.outputs[d];
    auto o = static_cast<size_t>(output);
    if (descriptor.kind != OutputDescriptor::Kind::Grad || descriptor.of.empty() ||
        descriptor.of.front().underlying_kind() != InputDescriptor::Kind::Param) {
      other_use[o] = true;
      continue;
    }
    auto found = input_index.find(descriptor.of.front().str());
    if (found == input_index.end()) {
      throw ValueError("build_problem: " + descriptor.str() + " refers to no graph input");
    }
    result.of_input[found->second] = output;
    result.grad_only[o] = true;
  }
  for (size_t o = 0; o < num_outputs; ++o) result.grad_only[o] = result.grad_only[o] && !other_use[o];
  return result;
}

std::string node_name(const ir::Node& node) {
  return node.op->name + " @" + (node.provenance.module_path.empty() ? "<root>" : node.provenance.module_path) + " (" +
         std::string(ir::phase_name(node.provenance.phase)) + ")";
}

// Accumulated edge costs, keyed by the (lower, higher) problem node pair.
class EdgeBuilder {
 public:
  EdgeBuilder(PlanProblem& plan, std::vector<std::vector<double>>& folded)
      : plan_(plan), folded_(folded), cache_(plan.mesh, plan.topology, interner_) {}

  // `count` graph transfers of output `output` of node u's meta `meta` into input `input` of node v
  // (input -1: into node v's own placement, for a gradient going to its parameter).
  void add(int64_t u, int64_t output, int64_t v, int64_t input, const TensorMeta& meta, double count) {
    const std::vector<int64_t>& from = placement_ids(u, true, output);
    const std::vector<int64_t>& to = input < 0 ? placement_ids(v, true, 0) : placement_ids(v, false, input);
    // The distinct placements on each side, priced once per pair.
    std::vector<int64_t> rows, cols;
    std::vector<size_t> row_of, col_of;
    auto distinct = [](int64_t id, std::vector<int64_t>& list) {
      for (size_t k = 0; k < list.size(); ++k) {
        if (list[k] == id) return k;
      }
      list.push_back(id);
      return list.size() - 1;
    };
    for (int64_t id : from) row_of.push_back(distinct(id, rows));
    for (int64_t id : to) col_of.push_back(distinct(id, cols));
    const int64_t meta_id = interner_.meta(meta);
    std::vector<double> priced(rows.size() * cols.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t c = 0; c < cols.size(); ++c) {
        priced[r * cols.size() + c] = count * cache_.seconds(meta, meta_id, rows[r], cols[c]);
      }
    }
    // A consumer that recomputes in the backward reads its inputs twice.
    const std::vector<bool>& recompute = plan_.nodes[static_cast<size_t>(v)].recompute;
    auto cost = [&](size_t su, size_t sv) {
      const double twice = input >= 0 && !recompute.empty() && recompute[sv] ? 2.0 : 1.0;
      return twice * priced[row_of[su] * cols.size() + col_of[sv]];
    };
    if (u == v) {
      std::vector<double>& extra = folded_[static_cast<size_t>(u)];
      for (size_t s = 0; s < from.size(); ++s) extra[s] += cost(s, s);
      return;
    }
    const bool flip = u > v;
    const size_t width = flip ? from.size() : to.size();  // the higher node's strategy count
    std::vector<double>& matrix = edges_[{std::min(u, v), std::max(u, v)}];
    if (matrix.empty()) matrix.assign(from.size() * to.size(), 0.0);
    for (size_t su = 0; su < from.size(); ++su) {
      for (size_t sv = 0; sv < to.size(); ++sv) matrix[flip ? sv * width + su : su * width + sv] += cost(su, sv);
    }
  }

  void finish() {
    for (auto& [pair, matrix] : edges_) {
      plan_.problem.edges.push_back(ProblemEdge{pair.first, pair.second, std::move(matrix)});
    }
  }

 private:
  // Per strategy of node p, the id of its placements of output (or input) `index`.
  const std::vector<int64_t>& placement_ids(int64_t p, bool output, int64_t index) {
    auto [it, fresh] = ids_.try_emplace({p, output ? index : -1 - index});
    if (fresh) {
      for (const NdStrategy& strategy : plan_.nodes[static_cast<size_t>(p)].strategies) {
        const auto& lists = output ? strategy.outputs : strategy.inputs;
        it->second.push_back(interner_.placements(lists[static_cast<size_t>(index)]));
      }
    }
    return it->second;
  }

  PlanProblem& plan_;
  std::vector<std::vector<double>>& folded_;
  detail::Interner interner_;
  detail::RedistributeCache cache_;
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> ids_;
  std::map<std::pair<int64_t, int64_t>, std::vector<double>> edges_;
};

// Problem nodes: inputs first (graph input order), then graph nodes (graph order of representatives).
void create_nodes(PlanProblem& plan, const JointProgram& program, const Clustering& clustering) {
  const ir::Graph& graph = program.graph;
  const size_t num_inputs = graph.inputs().size(), num_nodes = graph.nodes().size();
  plan.input_node.assign(num_inputs, -1);
  plan.op_node.assign(num_nodes, -1);
  for (size_t i = 0; i < num_inputs; ++i) {
    if (clustering.input_rep[i] != static_cast<int64_t>(i)) continue;
    plan.input_node[i] = static_cast<int64_t>(plan.nodes.size());
    PlanNode node;
    node.kind = PlanNode::Kind::Input;
    node.input_kind = program.inputs[i].kind == InputDescriptor::Kind::SubclassInner ? program.inputs[i].owner
                                                                                     : program.inputs[i].kind;
    plan.nodes.push_back(std::move(node));
  }
  for (size_t n = 0; n < num_nodes; ++n) {
    if (clustering.node_rep[n] != static_cast<int64_t>(n)) continue;
    plan.op_node[n] = static_cast<int64_t>(plan.nodes.size());
    plan.nodes.push_back(PlanNode{});
  }
  // Members: the representative first, then the others in graph order.
  for (size_t i = 0; i < num_inputs; ++i) {
    plan.input_node[i] = plan.input_node[static_cast<size_t>(clustering.input_rep[i])];
  }
  for (size_t n = 0; n < num_nodes; ++n) plan.op_node[n] = plan.op_node[static_cast<size_t>(clustering.node_rep[n])];
  for (size_t i = 0; i < num_inputs; ++i) {
    auto& members = plan.nodes[static_cast<size_t>(plan.input_node[i])].members;
    if (clustering.input_rep[i] == static_cast<int64_t>(i)) {
      members.insert(members.begin(), static_cast<int64_t>(i));
    } else {
      members.push_back(static_cast<int64_t>(i));
    }
  }
  for (size_t n = 0; n < num_nodes; ++n) {
    auto& members = plan.nodes[static_cast<size_t>(plan.op_node[n])].members;
    if (clustering.node_rep[n] == static_cast<int64_t>(n)) {
      members.insert(members.begin(), static_cast<int64_t>(n));
    } else {
      members.push_back(static_cast<int64_t>(n));
    }
  }
}

std::vector<TensorMeta> metas_of(const ir::Graph& graph, const std::vector<ir::ValueId>& values) {
  std::vector<TensorMeta> metas;
  metas.reserve(values.size());
  for (ir::ValueId value : values) metas.push_back(graph.meta(value));
  return metas;
}

}  // namespace

OpCost optimizer_update_cost(int64_t numel, DType param, DType state, int64_t states) {
  const auto elements = static_cast<double>(numel);
  const auto param_bytes = static_cast<double>(dtype_size(param));
  const auto state_bytes = static_cast<double>(dtype_size(state)) * static_cast<double>(states);
  OpCost cost;
  cost.flops = elements * (4.0 + 5.0 * static_cast<double>(states));
  cost.bytes_read = elements * (2 * param_bytes + state_bytes);
  cost.bytes_written = elements * (param_bytes + state_bytes);
  return cost;
}

namespace {

// Strategies, compute seconds and per-copy bytes of every problem node.
void fill_strategies(PlanProblem& plan, const JointProgram& program) {
  const ir::Graph& graph = program.graph;
  detail::StrategyCache cache(plan.mesh, plan.options.device);
  std::map<std::string, std::vector<NdStrategy>> input_cache;
  std::map<std::string, int64_t> replicated_factories;  // "op meta" -> graph nodes computed whole on every rank
  for (PlanNode& node : plan.nodes) {
    auto rep = static_cast<size_t>(node.members.front());
    auto copies = static_cast<double>(node.members.size());
    if (node.kind == PlanNode::Kind::Input) {
      const TensorMeta& meta = graph.meta(graph.inputs()[rep]);
      auto found = input_cache.find(meta.str());
      if (found == input_cache.end()) {
        found = input_cache.emplace(meta.str(), detail::input_strategies(meta, plan.mesh)).first;
      }
      node.strategies = found->second;
      node.compute_seconds.assign(node.strategies.size(), 0.0);
      for (const NdStrategy& strategy : node.strategies) {
        Shape local = dist::padded_local_shape(meta.shape, strategy.outputs.front(), plan.mesh);
        node.local_bytes.push_back(static_cast<double>(numel(local) * dtype_size(meta.dtype)));
      }
      continue;
    }
    const ir::Node& graph_node = graph.nodes()[rep];
    const detail::OpEntry* entry = nullptr;
    try {
      entry = &cache.entry(graph_node, metas_of(graph, graph_node.inputs), metas_of(graph, graph_node.outputs));
    } catch (const UnsupportedOp& error) {
      error.rethrow_with_context("build_problem: node " + std::to_string(rep) + ", " + node_name(graph_node) + ": ");
    }
    if (!graph_node.op->sharding && graph_node.inputs.empty()) {
      std::string key = graph_node.op->name;
      for (ir::ValueId output : graph_node.outputs) key += " " + graph.meta(output).str();
      replicated_factories[key] += static_cast<int64_t>(node.members.size());
    }
    if (entry->strategies.empty()) {
      throw UnsupportedOp("build_problem: node " + std::to_string(rep) + ", " + node_name(graph_node) +
                          ": no sound strategy on " + plan.mesh.str());
    }
    node.strategies = entry->strategies;
    node.local_bytes = entry->bytes;
    for (double seconds : entry->seconds) node.compute_seconds.push_back(seconds * copies);
  }
  if (!replicated_factories.empty()) {
    std::string note = "computed whole on every device (factories without a sharding rule):";
    const char* separator = " ";
    for (const auto& [op, count] : replicated_factories) {
      note += separator + op + (count > 1 ? " x" + std::to_string(count) : "");
      separator = ", ";
    }
    plan.notes.push_back(note);
  }
}

// Intervals (compressed time) and live_copies of every problem node; sets problem node intervals.
void fill_liveness(PlanProblem& plan, const JointProgram& program, const Clustering& clustering,
                   const Gradients& gradients) {
  const ir::Graph& graph = program.graph;
  std::vector<bool> persistent(graph.inputs().size());
  for (size_t i = 0; i < persistent.size(); ++i) persistent[i] = program.inputs[i].is_model_state();
  detail::Liveness live = detail::compute_liveness(program, persistent, gradients.grad_only);
  std::vector<bool> kept(static_cast<size_t>(live.steps), false);
  kept[0] = true;
  for (size_t n = 0; n < graph.nodes().size(); ++n) kept[n + 1] = clustering.node_rep[n] == static_cast<int64_t>(n);
  detail::TimeCompression time(kept);
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    PlanNode& node = plan.nodes[p];
    std::vector<std::pair<int64_t, int64_t>> real;
    for (int64_t member : node.members) {
      auto m = static_cast<size_t>(member);
      if (node.kind == PlanNode::Kind::Input) {
        real.emplace_back(0, live.input_end[m]);
      } else {
        real.emplace_back(member + 1, live.node_end[m]);
      }
    }
    int64_t start = 0, end = 0;
    bool any = false;
    for (const auto& [a, b] : real) {
      int64_t s = 0, e = 0;
      if (!time.map(a, b, s, e)) continue;
      start = any ? std::min(start, s) : s;
      end = any ? std::max(end, e) : e;
      any = true;
    }
    node.live_copies = std::max<int64_t>(1, detail::max_overlap(real));
    plan.problem.nodes[p].start = start;
    plan.problem.nodes[p].end = end;
  }
  // Where each parameter's gradient is made, in compressed time (see predicted_peak).
  std::unordered_map<ir::ValueId, int64_t> made_at;
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (ir::ValueId output : graph.nodes()[n].outputs) made_at[output] = static_cast<int64_t>(n) + 1;
  }
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    PlanNode& node = plan.nodes[p];
    if (node.kind != PlanNode::Kind::Input) continue;
    for (int64_t member : node.members) {
      const int64_t grad = gradients.of_input[static_cast<size_t>(member)];
      if (grad < 0) continue;
      auto made = made_at.find(graph.outputs()[static_cast<size_t>(grad)]);
      int64_t from = 0, to = 0;
      if (made == made_at.end()) {
        from = plan.problem.nodes[p].start;  // a gradient that is an input: there from the start
      } else if (!time.map(made->second, live.steps, from, to)) {
        from = plan.problem.nodes[p].end;  // made after the last step the problem keeps
      }
      node.gradient_from.push_back(from);
    }
  }
}

}  // namespace

PlanProblem build_problem(const JointProgram& program, const dist::DeviceMesh& mesh, const PlanOptions& options) {
  auto started = std::chrono::steady_clock::now();
  const ir::Graph& graph = program.graph;
  PlanProblem plan;
  plan.mesh = mesh;
  plan.options = options;
  plan.topology = options.topology.links.empty() ? cluster_topology(mesh, options.device) : options.topology;
  check_program(program, mesh, plan.topology, options);
  plan.problem.name = options.name.empty() ? graph.name() + " on " + mesh.str() : options.name;
  plan.problem.usage_limit = options.memory_limit_bytes;

  Clustering clustering = detail::cluster_layers(program, options.cluster_layers);
  plan.layer_groups = clustering.groups;
  Gradients gradients = find_gradients(program);
  create_nodes(plan, program, clustering);
  fill_strategies(plan, program);
  plan.problem.nodes.resize(plan.nodes.size());
  fill_liveness(plan, program, clustering, gradients);
  detail::add_recompute_strategies(plan, program, clustering);

  // Edges: every graph transfer priced between the problem nodes of its ends.
  std::unordered_map<ir::ValueId, ValueSource> producer;
  for (size_t i = 0; i < graph.inputs().size(); ++i) producer[graph.inputs()[i]] = {plan.input_node[i], 0};
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const auto& outputs = graph.nodes()[n].outputs;
    for (size_t o = 0; o < outputs.size(); ++o) producer[outputs[o]] = {plan.op_node[n], static_cast<int64_t>(o)};
  }
  for (ir::ValueId output : graph.outputs()) plan.outputs.push_back(producer.at(output));
  // (u, output, v, input) -> how many graph transfers it stands for, and the value's meta.
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, std::pair<int64_t, TensorMeta>> transfers;
  auto count = [&](ir::ValueId value, int64_t v, int64_t input) {
    const ValueSource& from = producer.at(value);
    auto it = transfers.try_emplace({from.node, from.output, v, input}, 0, graph.meta(value)).first;
    ++it->second.first;
  };
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const auto& inputs = graph.nodes()[n].inputs;
    for (size_t j = 0; j < inputs.size(); ++j) count(inputs[j], plan.op_node[n], static_cast<int64_t>(j));
  }
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    if (gradients.of_input[i] < 0) continue;
    count(graph.outputs()[static_cast<size_t>(gradients.of_input[i])], plan.input_node[i], -1);
  }
  std::vector<std::vector<double>> folded(plan.nodes.size());
  for (size_t p = 0; p < plan.nodes.size(); ++p) folded[p].assign(plan.nodes[p].strategies.size(), 0.0);
  EdgeBuilder edges(plan, folded);
  for (const auto& [key, counted] : transfers) {
    const auto& [u, output, v, input] = key;
    edges.add(u, output, v, input, counted.second, static_cast<double>(counted.first));
  }
  edges.finish();
  detail::place_gradient_reductions(plan, program, gradients.of_input);

  // Node costs, usages and names.
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    PlanNode& node = plan.nodes[p];
    ProblemNode& out = plan.problem.nodes[p];
    auto rep = static_cast<size_t>(node.members.front());
    double factor = 1.0;  // bytes held per byte of the tensor itself
    if (node.kind == PlanNode::Kind::Input) {
      const InputDescriptor& input = program.inputs[rep];
      node.has_gradient = gradients.of_input[rep] >= 0;
      if (node.has_gradient) {
        DType dtype = graph.meta(graph.inputs()[rep]).dtype;
        const DType state_dtype = options.optimizer_state_dtype.value_or(dtype);
        double state = static_cast<double>(dtype_size(state_dtype)) / static_cast<double>(dtype_size(dtype));
        factor = 2.0 + static_cast<double>(options.optimizer_states) * state;
        for (size_t s = 0; s < node.strategies.size(); ++s) {
          const auto numel = static_cast<int64_t>(node.local_bytes[s]) / dtype_size(dtype);
          node.compute_seconds[s] +=
              priced_seconds(kOptimizerUpdateOp,
                             optimizer_update_cost(numel, dtype, state_dtype, options.optimizer_states), false, dtype,
                             options.device) *
              static_cast<double>(node.members.size());
        }
      }
      out.name = input.str();
    } else {
      out.name = node_name(graph.nodes()[rep]);
    }
    if (node.members.size() > 1) out.name += " x" + std::to_string(node.members.size());
    for (size_t s = 0; s < node.strategies.size(); ++s) {
      const bool recomputed = !node.recompute.empty() && node.recompute[s];
      out.costs.push_back(node.compute_seconds[s] + folded[p][s]);
      out.usages.push_back(node.local_bytes[s] * factor *
                           static_cast<double>(recomputed ? node.recompute_copies : node.live_copies));
      const NdStrategy& strategy = node.strategies[s];
      out.strategy_names.push_back(node.kind == PlanNode::Kind::Input ? placements_str(strategy.outputs.front())
                                   : recomputed                       ? nd_strategy_str(strategy) + " recompute"
                                                                      : nd_strategy_str(strategy));
    }
  }
  plan.problem.validate();
  plan.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return plan;
}

}  // namespace px::plan
