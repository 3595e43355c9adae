#include "parallax/dtensor/strategy.h"

#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "parallax/ops/dispatch.h"

namespace px {

namespace {

// Coordinates at which a combination must be sound (see strategy.h).
std::vector<std::vector<int64_t>> check_coordinates(const dist::DeviceMesh& mesh) {
  constexpr int64_t kExhaustiveLimit = 64;
  std::vector<std::vector<int64_t>> coordinates;
  if (mesh.size() <= kExhaustiveLimit) {
    for (int rank : mesh.ranks()) coordinates.push_back(mesh.coordinate(rank));
    return coordinates;
  }
  coordinates.push_back(mesh.coordinate(mesh.ranks().front()));
  coordinates.push_back(mesh.coordinate(mesh.ranks().back()));
  return coordinates;
}

bool has_mask_input(const NdStrategy& strategy) {
  for (const auto& placements : strategy.inputs) {
    for (const Placement& placement : placements) {
      if (std::holds_alternative<MaskPartial>(placement)) return true;
    }
  }
  return false;
}

bool has_double_mask_output(const NdStrategy& strategy) {
  for (const auto& placements : strategy.outputs) {
    int masks = 0;
    for (const Placement& placement : placements) masks += std::holds_alternative<MaskPartial>(placement) ? 1 : 0;
    if (masks > 1) return true;
  }
  return false;
}

std::string strategy_where(const OpDef& op, const NdStrategy& strategy, std::span<const int64_t> coordinate) {
  return op.name + " under " + nd_strategy_str(strategy) + " at mesh coordinate " + shape_str(coordinate);
}

// What the local call gives on these local metas: the op's shape inference, or, for an op with a
// `local` facet (whose inputs need not look like the op's), that function run on meta tensors,
// hidden from any active trace.
std::vector<TensorMeta> local_output_metas(const OpDef& op, const LocalCallPlan& plan) {
  if (!op.local) return infer_metas(op, plan.local_inputs, plan.attrs);
  SuspendInterceptScope hidden;
  std::vector<Tensor> metas;
  for (const TensorMeta& meta : plan.local_inputs) metas.push_back(Tensor::meta(meta.shape, meta.dtype));
  LocalResult result = op.local(metas, plan.attrs, plan.context());
  std::vector<TensorMeta> out;
  for (const Tensor& output : result.outputs) out.push_back(output.meta_info());
  return out;
}

// The call's attributes with the schema's defaults filled in (rules see every attribute).
Attrs filled_attrs(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  std::vector<Tensor> metas;
  for (const TensorMeta& meta : inputs) metas.push_back(Tensor::meta(meta.shape, meta.dtype));
  return check_call(op, metas, attrs);
}

}  // namespace

std::string nd_strategy_str(const NdStrategy& strategy) {
  auto join = [](const std::vector<std::vector<Placement>>& list) {
    std::string text;
    for (size_t i = 0; i < list.size(); ++i) text += (i ? ", " : "") + placements_str(list[i]);
    return text;
  };
  return join(strategy.inputs) + " -> " + join(strategy.outputs);
}

LocalContext LocalCallPlan::context() const {
  return LocalContext{global_inputs, global_outputs, local_inputs,    local_outputs,
                      input_offsets, output_offsets, strategy.inputs, strategy.outputs};
}

LocalCallPlan plan_local_call(const OpDef& op, const std::vector<TensorMeta>& global_inputs, const Attrs& attrs,
                              const NdStrategy& strategy, const dist::DeviceMesh& mesh,
                              std::span<const int64_t> coordinate) {
  LocalCallPlan plan;
  plan.global_inputs = global_inputs;
  plan.global_outputs = infer_metas(op, global_inputs, attrs);
  plan.strategy = strategy;
  if (strategy.inputs.size() != global_inputs.size() || strategy.outputs.size() != plan.global_outputs.size()) {
    throw ValueError(op.name + ": strategy " + nd_strategy_str(strategy) + " is for " +
                     std::to_string(strategy.inputs.size()) + " inputs and " + std::to_string(strategy.outputs.size()) +
                     " outputs; the call has " + std::to_string(global_inputs.size()) + " and " +
                     std::to_string(plan.global_outputs.size()));
  }
  auto place = [&](const std::vector<TensorMeta>& globals, const std::vector<std::vector<Placement>>& placements,
                   std::vector<TensorMeta>& locals, std::vector<Shape>& offsets) {
    for (size_t i = 0; i < globals.size(); ++i) {
      dist::LocalShard shard = dist::local_shard(globals[i].shape, placements[i], mesh, coordinate);
      locals.push_back({shard.shape, globals[i].dtype});
      offsets.push_back(shard.offset);
    }
  };
  std::vector<TensorMeta> inferred;
  try {
    place(plan.global_inputs, strategy.inputs, plan.local_inputs, plan.input_offsets);
    place(plan.global_outputs, strategy.outputs, plan.local_outputs, plan.output_offsets);
    plan.attrs = op.localize_attrs ? op.localize_attrs(attrs, plan.context()) : attrs;
    inferred = local_output_metas(op, plan);
  } catch (const Error& error) {
    throw UnsoundStrategy(strategy_where(op, strategy, coordinate) + ": the local op fails: " + error.what());
  }
  if (inferred != plan.local_outputs) {
    std::string got, want;
    for (size_t i = 0; i < inferred.size(); ++i) got += (i ? ", " : "") + inferred[i].str();
    for (size_t i = 0; i < plan.local_outputs.size(); ++i) want += (i ? ", " : "") + plan.local_outputs[i].str();
    throw UnsoundStrategy(strategy_where(op, strategy, coordinate) + ": the local op gives " + got +
                          " but the output placements need " + want);
  }
  return plan;
}

std::vector<NdStrategy> candidate_strategies(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs,
                                             const dist::DeviceMesh& mesh) {
  const ShardingRuleFn& rule = sharding_rule_of(op);
  std::vector<ShardingStrategy> single = rule(inputs, filled_attrs(op, inputs, attrs));
  std::vector<NdStrategy> candidates;
  if (single.empty()) return candidates;
  auto ndim = static_cast<size_t>(mesh.ndim());
  std::vector<size_t> pick(ndim, 0);
  while (true) {
    NdStrategy candidate;
    candidate.inputs.assign(inputs.size(), {});
    candidate.outputs.assign(single.front().outputs.size(), {});
    for (size_t d = 0; d < ndim; ++d) {
      const ShardingStrategy& chosen = single[pick[d]];
      for (size_t i = 0; i < chosen.inputs.size() && i < candidate.inputs.size(); ++i) {
        candidate.inputs[i].push_back(chosen.inputs[i]);
      }
      for (size_t o = 0; o < chosen.outputs.size() && o < candidate.outputs.size(); ++o) {
        candidate.outputs[o].push_back(chosen.outputs[o]);
      }
    }
    if (!has_mask_input(candidate) && !has_double_mask_output(candidate)) candidates.push_back(std::move(candidate));
    // Odometer with mesh dim 0 varying slowest.
    size_t d = ndim;
    while (d > 0) {
      --d;
      if (++pick[d] < single.size()) break;
      pick[d] = 0;
      if (d == 0) return candidates;
    }
    if (ndim == 0) return candidates;
  }
}

bool is_sound(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs, const NdStrategy& strategy,
              const dist::DeviceMesh& mesh) {
  const Attrs filled = filled_attrs(op, inputs, attrs);
  for (const auto& coordinate : check_coordinates(mesh)) {
    try {
      plan_local_call(op, inputs, filled, strategy, mesh, coordinate);
    } catch (const UnsoundStrategy&) {
      return false;
    }
  }
  return true;
}

std::vector<NdStrategy> expand_strategies(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs,
                                          const dist::DeviceMesh& mesh) {
  const Attrs filled = filled_attrs(op, inputs, attrs);
  std::vector<NdStrategy> sound;
  for (NdStrategy& candidate : candidate_strategies(op, inputs, filled, mesh)) {
    if (is_sound(op, inputs, filled, candidate, mesh)) sound.push_back(std::move(candidate));
  }
  return sound;
}

LocalResult run_local(const OpDef& op, const std::vector<Tensor>& local_inputs, const LocalCallPlan& plan) {
  LocalContext ctx = plan.context();
  LocalResult result;
  if (op.local) {
    result = op.local(local_inputs, plan.attrs, ctx);
  } else {
    result.outputs = call(op, local_inputs, plan.attrs);
  }
  result.masks.resize(result.outputs.size());
  if (result.outputs.size() != plan.local_outputs.size()) {
    throw ValueError(op.name + ": the local call returned " + std::to_string(result.outputs.size()) +
                     " outputs; expected " + std::to_string(plan.local_outputs.size()));
  }
  for (size_t o = 0; o < result.outputs.size(); ++o) {
    if (result.outputs[o].meta_info() != plan.local_outputs[o]) {
      throw ValueError(op.name + ": local output " + std::to_string(o) + " is " + result.outputs[o].meta_info().str() +
                       " but " + nd_strategy_str(plan.strategy) + " needs " + plan.local_outputs[o].str());
    }
    bool masked = false;
    for (const Placement& placement : plan.strategy.outputs[o])
      masked |= std::holds_alternative<MaskPartial>(placement);
    if (masked && !result.masks[o].defined()) {
      throw ValueError(op.name + ": output " + std::to_string(o) + " is MaskPartial under " +
                       nd_strategy_str(plan.strategy) + " but the local call gave no mask");
    }
  }
  return result;
}

}  // namespace px
