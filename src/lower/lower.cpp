#include "parallax/lower/lower.h"

#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "dtensor/redistribute_exec.h"
#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "parallax/dtensor/redistribute.h"
#include "parallax/dtensor/strategy.h"
#include "parallax/ir/provenance.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/dispatch.h"

namespace px::lower {

namespace {

// A joint graph value on this rank while lowering: its local shard (a proxy of the trace), its
// mask when MaskPartial, and where it lives.
struct Placed {
  Tensor local;
  Tensor mask;
  DTensorSpec spec;
};

// Placements with every Partial and MaskPartial dim made Replicate: what a user reads.
std::vector<Placement> reduced(std::vector<Placement> placements) {
  for (Placement& placement : placements) {
    if (std::holds_alternative<Partial>(placement) || std::holds_alternative<MaskPartial>(placement)) {
      placement = Replicate{};
    }
  }
  return placements;
}

void check_plan(const JointProgram& program, const plan::DecodedPlan& plan, const dist::DeviceMesh& mesh) {
  const ir::Graph& graph = program.graph;
  if (plan.inputs.size() != graph.inputs().size() || plan.nodes.size() != graph.nodes().size()) {
    throw ValueError("lower: the plan places " + std::to_string(plan.inputs.size()) + " inputs and " +
                     std::to_string(plan.nodes.size()) + " nodes, but graph '" + graph.name() + "' has " +
                     std::to_string(graph.inputs().size()) + " inputs and " + std::to_string(graph.nodes().size()) +
                     " nodes (a plan for another program?)");
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (static_cast<int64_t>(plan.inputs[i].size()) != mesh.ndim()) {
      throw ValueError("lower: input " + std::to_string(i) + " of graph '" + graph.name() + "' has " +
                       std::to_string(plan.inputs[i].size()) + " placements for a mesh of " +
                       std::to_string(mesh.ndim()) + " dims");
    }
  }
}

void check_strategy(const ir::Node& node, const NdStrategy& strategy) {
  if (strategy.inputs.size() != node.inputs.size() || strategy.outputs.size() != node.outputs.size()) {
    throw ValueError("its strategy " + nd_strategy_str(strategy) + " does not match its " +
                     std::to_string(node.inputs.size()) + " inputs and " + std::to_string(node.outputs.size()) +
                     " outputs");
  }
}

// Per graph node: recomputed in the backward (the plan's choice, and views of recomputed values,
// which would otherwise keep their base alive). Empty when the plan recomputes nothing.
std::vector<bool> recomputed_nodes(const ir::Graph& graph, const plan::DecodedPlan& plan) {
  if (plan.recompute.empty()) return {};
  if (plan.recompute.size() != graph.nodes().size()) {
    throw ValueError("lower: the plan has " + std::to_string(plan.recompute.size()) + " recompute flags for " +
                     std::to_string(graph.nodes().size()) + " nodes of graph '" + graph.name() + "'");
  }
  std::vector<bool> recompute = plan.recompute;
  std::map<ir::ValueId, size_t> producer;
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const ir::Node& node = graph.nodes()[n];
    if (node.provenance.phase != ir::Phase::Forward) {
      if (recompute[n]) throw ValueError("lower: node " + std::to_string(n) + " of the backward cannot recompute");
      continue;
    }
    if (node.op->traits.view && !node.inputs.empty()) {
      auto base = producer.find(node.inputs[0]);
      if (base != producer.end() && recompute[base->second]) recompute[n] = true;
    }
    for (ir::ValueId output : node.outputs) producer[output] = n;
  }
  return recompute;
}

std::string node_label(const ir::Node& node, size_t index) {
  std::string label = "node " + std::to_string(index) + " (" + node.op->name;
  if (!node.provenance.module_path.empty()) label += " @" + node.provenance.module_path;
  return label + ")";
}

}  // namespace

std::vector<std::vector<Placement>> output_placements(const JointProgram& program, const plan::DecodedPlan& plan,
                                                      const dist::DeviceMesh& mesh) {
  check_plan(program, plan, mesh);
  const ir::Graph& graph = program.graph;
  // Where each value is produced: graph inputs by their placements, node outputs by their strategy.
  std::map<ir::ValueId, std::vector<Placement>> produced;
  for (size_t i = 0; i < graph.inputs().size(); ++i) produced[graph.inputs()[i]] = plan.inputs[i];
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const ir::Node& node = graph.nodes()[n];
    for (size_t o = 0; o < node.outputs.size(); ++o) produced[node.outputs[o]] = plan.nodes[n].outputs[o];
  }
  std::vector<std::vector<Placement>> result(graph.outputs().size());
  for (size_t j = 0; j < graph.outputs().size(); ++j) result[j] = reduced(produced.at(graph.outputs()[j]));
  // A gradient goes where the input it differentiates lives.
  for (size_t d = 0; d < program.outputs.size(); ++d) {
    const OutputDescriptor& descriptor = program.outputs[d];
    const int64_t j = program.graph_output[d];
    if (j < 0 || descriptor.kind != OutputDescriptor::Kind::Grad) continue;
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      if (program.inputs[i] == descriptor.of.front()) result[static_cast<size_t>(j)] = plan.inputs[i];
    }
  }
  return result;
}

RankProgram lower_rank(const JointProgram& program, const plan::DecodedPlan& plan, const dist::DeviceMesh& mesh,
                       const dist::MeshTopology& topology, int rank) {
  if (!mesh.contains(rank)) {
    throw ValueError("lower: rank " + std::to_string(rank) + " is not in " + mesh.str());
  }
  const ir::Graph& graph = program.graph;
  RankProgram result;
  result.rank = rank;
  result.coordinate = mesh.coordinate(rank);
  result.input_placements = plan.inputs;
  result.output_placements = output_placements(program, plan, mesh);
  for (ir::ValueId id : graph.inputs()) result.global_inputs.push_back(graph.meta(id));
  for (ir::ValueId id : graph.outputs()) result.global_outputs.push_back(graph.meta(id));

  ir::Tracer tracer(graph.name() + ".rank" + std::to_string(rank));
  std::map<ir::ValueId, Placed> values;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const ir::ValueId id = graph.inputs()[i];
    const TensorMeta& global = graph.meta(id);
    const Shape local = dist::local_shape(global.shape, plan.inputs[i], mesh, result.coordinate);
    values[id] = Placed{tracer.add_input(graph.value(id).name, TensorMeta{local, global.dtype}), Tensor(),
                        DTensorSpec{mesh, plan.inputs[i], global}};
  }

  {
    InterceptScope scope(tracer);
    // (value, placements) -> its local shard so placed: one redistribution per value and target.
    // The forward and the backward keep separate caches: a weight FSDP gathers for the forward
    // is not kept alive until the backward reads it again, but gathered again there (the plan
    // prices both transfers and counts no memory for the copy in between).
    using MoveCache = std::map<std::pair<ir::ValueId, std::string>, Tensor>;
    MoveCache moved_forward;
    MoveCache moved_backward;
    MoveCache* moved = &moved_forward;
    auto place = [&](const Placed& value, ir::ValueId id, const std::vector<Placement>& target,
                     MoveCache& cache) -> Tensor {
      if (value.spec.placements == target) return value.local;
      const auto key = std::make_pair(id, placements_str(target));
      if (auto found = cache.find(key); found != cache.end()) return found->second;
      const RedistributePlan steps = plan_redistribute(value.spec, target, topology);
      Tensor local = detail::run_redistribute(value.local, value.mask, steps, rank);
      cache.emplace(key, local);
      return local;
    };
    auto placed_as = [&](ir::ValueId id, const std::vector<Placement>& target) -> Tensor {
      return place(values.at(id), id, target, *moved);
    };
    // Runs node n on its local inputs and records its outputs in `into`.
    auto run_node = [&](size_t n, const std::vector<Tensor>& locals, std::map<ir::ValueId, Placed>& into) {
      const ir::Node& node = graph.nodes()[n];
      const NdStrategy& strategy = plan.nodes[n];
      try {
        check_strategy(node, strategy);
        ir::ProvenanceScope provenance(node.provenance);
        std::vector<TensorMeta> global_inputs;
        for (ir::ValueId input : node.inputs) global_inputs.push_back(graph.meta(input));
        const LocalCallPlan call =
            plan_local_call(*node.op, global_inputs, node.attrs, strategy, mesh, result.coordinate);
        LocalResult local = run_local(*node.op, locals, call);
        for (size_t o = 0; o < node.outputs.size(); ++o) {
          into[node.outputs[o]] = Placed{local.outputs[o], o < local.masks.size() ? local.masks[o] : Tensor(),
                                         DTensorSpec{mesh, strategy.outputs[o], call.global_outputs[o]}};
        }
      } catch (const Error& error) {
        error.rethrow_with_context("lower: rank " + std::to_string(rank) + ", " + node_label(node, n) + " under " +
                                   nd_strategy_str(strategy) + ": ");
      }
    };

    // Activation checkpointing: a backward node reads the outputs of a recomputing node (or of a
    // view of one, which would keep its base alive) from a second run of it, traced just before
    // that first backward reader, with its inputs redistributed again (a separate cache, so
    // nothing the forward moved stays alive for it).
    const std::vector<bool> recompute = recomputed_nodes(graph, plan);
    std::map<ir::ValueId, size_t> producer;
    for (size_t n = 0; n < graph.nodes().size(); ++n) {
      for (ir::ValueId output : graph.nodes()[n].outputs) producer[output] = n;
    }
    std::map<ir::ValueId, Placed> again;
    std::map<std::pair<ir::ValueId, std::string>, Tensor> moved_again;
    std::function<const Placed&(ir::ValueId)> value_for_backward = [&](ir::ValueId id) -> const Placed& {
      auto made = producer.find(id);
      if (made == producer.end() || !recompute[made->second]) return values.at(id);
      if (auto found = again.find(id); found != again.end()) return found->second;
      const size_t n = made->second;
      const ir::Node& node = graph.nodes()[n];
      std::vector<Tensor> locals;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        const Placed& input = value_for_backward(node.inputs[k]);
        locals.push_back(place(input, node.inputs[k], plan.nodes[n].inputs[k], moved_again));
      }
      run_node(n, locals, again);
      return again.at(id);
    };

    // A parameter's gradient moves to its parameter's placement as soon as it is made (reduced
    // over the ranks that hold partial sums, as DDP and FSDP do during the backward), so that the
    // unreduced copy dies there instead of living to the end of the step; the plan counts the
    // gradient in the parameter's placement from then on.
    std::set<ir::ValueId> read;
    for (const ir::Node& node : graph.nodes()) read.insert(node.inputs.begin(), node.inputs.end());
    std::map<ir::ValueId, std::vector<size_t>> gradient_outputs;
    for (size_t d = 0; d < program.outputs.size(); ++d) {
      const int64_t j = program.graph_output[d];
      if (j < 0 || program.outputs[d].kind != OutputDescriptor::Kind::Grad) continue;
      const ir::ValueId id = graph.outputs()[static_cast<size_t>(j)];
      if (read.count(id) == 0) gradient_outputs[id].push_back(static_cast<size_t>(j));
    }
    auto reduce_gradients = [&](size_t n) {
      for (ir::ValueId output : graph.nodes()[n].outputs) {
        auto found = gradient_outputs.find(output);
        if (found == gradient_outputs.end()) continue;
        for (size_t j : found->second) placed_as(output, result.output_placements[j]);
      }
    };

    for (size_t n = 0; n < graph.nodes().size(); ++n) {
      const ir::Node& node = graph.nodes()[n];
      const NdStrategy& strategy = plan.nodes[n];
      moved = node.provenance.phase == ir::Phase::Forward ? &moved_forward : &moved_backward;
      if (!recompute.empty() && node.provenance.phase != ir::Phase::Forward) {
        std::vector<Tensor> locals;
        for (size_t k = 0; k < node.inputs.size(); ++k) {
          const Placed& input = value_for_backward(node.inputs[k]);
          locals.push_back(&input == &values.at(node.inputs[k])
                               ? placed_as(node.inputs[k], strategy.inputs[k])
                               : place(input, node.inputs[k], strategy.inputs[k], moved_again));
        }
        run_node(n, locals, values);
        reduce_gradients(n);
        continue;
      }
      std::vector<Tensor> locals;
      for (size_t k = 0; k < node.inputs.size() && k < strategy.inputs.size(); ++k) {
        try {
          locals.push_back(placed_as(node.inputs[k], strategy.inputs[k]));
        } catch (const Error& error) {
          error.rethrow_with_context("lower: rank " + std::to_string(rank) + ", " + node_label(node, n) + " under " +
                                     nd_strategy_str(strategy) + ": ");
        }
      }
      run_node(n, locals, values);
      reduce_gradients(n);
    }

    std::vector<Tensor> outputs;
    for (size_t j = 0; j < graph.outputs().size(); ++j) {
      outputs.push_back(placed_as(graph.outputs()[j], result.output_placements[j]));
    }
    tracer.set_outputs(outputs);
  }
  result.graph = tracer.finish();
  for (const ir::Node& node : result.graph.nodes()) result.collectives += node.op->traits.collective ? 1 : 0;
  return result;
}

std::vector<RankProgram> lower_all(const JointProgram& program, const plan::DecodedPlan& plan,
                                   const dist::DeviceMesh& mesh, const dist::MeshTopology& topology) {
  std::vector<RankProgram> programs;
  for (int rank : mesh.ranks()) programs.push_back(lower_rank(program, plan, mesh, topology, rank));
  return programs;
}

std::string dump(const std::vector<RankProgram>& programs) {
  std::ostringstream out;
  for (const RankProgram& program : programs) {
    out << "# rank " << program.rank << " at [";
    for (size_t i = 0; i < program.coordinate.size(); ++i) out << (i ? ", " : "") << program.coordinate[i];
    out << "]: " << program.graph.nodes().size() << " nodes, " << program.collectives << " collectives\n";
    for (size_t i = 0; i < program.input_placements.size(); ++i) {
      out << "#   input " << i << " " << program.global_inputs[i].str() << " "
          << placements_str(program.input_placements[i]) << "\n";
    }
    out << program.graph.str() << "\n";
  }
  return out.str();
}

}  // namespace px::lower
