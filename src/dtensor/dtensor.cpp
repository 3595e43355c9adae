#include "parallax/dtensor/dtensor.h"

#include <algorithm>
#include <limits>

#include "dtensor/redistribute_exec.h"
#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/dtensor/strategy.h"
#include "parallax/ops/dispatch.h"

namespace px {

namespace {

Tree ints_tree(const std::vector<int64_t>& values) {
  std::vector<Tree> items;
  for (int64_t value : values) items.push_back(Tree::integer(value));
  return Tree::list(std::move(items));
}

std::vector<int64_t> tree_ints(const Tree& tree) {
  std::vector<int64_t> values;
  for (const Tree& item : tree.children()) values.push_back(item.as_int());
  return values;
}

bool has_mask_placement(const DTensorSpec& spec) {
  for (const Placement& placement : spec.placements) {
    if (std::holds_alternative<MaskPartial>(placement)) return true;
  }
  return false;
}

const std::shared_ptr<const dist::MeshGroups>& checked_groups(const std::shared_ptr<const dist::MeshGroups>& groups,
                                                              const char* what) {
  if (!groups) throw ValueError(std::string(what) + ": no MeshGroups given");
  return groups;
}

}  // namespace

DTensor::DTensor(std::shared_ptr<const dist::MeshGroups> groups, DTensorSpec spec, Tensor local, Tensor mask)
    : groups_(checked_groups(groups, "DTensor")),
      spec_(spec.normalized()),
      local_(std::move(local)),
      mask_(std::move(mask)) {
  if (!(spec_.mesh == groups_->mesh())) {
    throw ValueError("DTensor: the spec's mesh " + spec_.mesh.str() + " is not the bound mesh " +
                     groups_->mesh().str());
  }
  if (!local_.defined()) throw ValueError("DTensor: no local tensor for " + spec_.str());
  TensorMeta expected = spec_.local_meta(groups_->coordinate());
  if (local_.meta_info() != expected) {
    throw ValueError("DTensor: local tensor " + local_.meta_info().str() + " on rank " +
                     std::to_string(groups_->rank()) + " does not match " + spec_.str() + ", whose shard here is " +
                     expected.str());
  }
  if (mask_.defined()) {
    if (!has_mask_placement(spec_)) {
      throw ValueError("DTensor: a mask was given but " + spec_.str() + " has no MaskPartial placement");
    }
    if (mask_.dtype() != DType::Bool)
      throw ValueError("DTensor: the mask must be bool, got " + mask_.meta_info().str());
  }
}

SubclassState DTensor::flatten() const {
  std::vector<Tree> placements;
  for (const Placement& placement : spec_.placements) placements.push_back(Tree::string(placement_str(placement)));
  std::vector<Tree> names;
  for (const std::string& name : spec_.mesh.dim_names()) names.push_back(Tree::string(name));
  std::vector<int64_t> ranks(spec_.mesh.ranks().begin(), spec_.mesh.ranks().end());
  Tree metadata = Tree::dict({{"mesh_shape", ints_tree(spec_.mesh.shape())},
                              {"mesh_dims", Tree::list(std::move(names))},
                              {"mesh_ranks", ints_tree(ranks)},
                              {"placements", Tree::list(std::move(placements))},
                              {"shape", ints_tree(spec_.meta.shape)},
                              {"dtype", Tree::string(std::string(dtype_name(spec_.meta.dtype)))}});
  return SubclassState{{{"local", local_}, {"mask", mask_}}, std::move(metadata)};
}

std::shared_ptr<TensorSubclass> DTensor::unflatten(const SubclassState& state) const {
  const Tree& meta = state.metadata;
  std::vector<std::string> names;
  for (const Tree& name : meta.at("mesh_dims").children()) names.push_back(name.as_string());
  std::vector<int64_t> rank_values = tree_ints(meta.at("mesh_ranks"));
  DTensorSpec spec;
  spec.mesh = dist::DeviceMesh(tree_ints(meta.at("mesh_shape")), names,
                               std::vector<int>(rank_values.begin(), rank_values.end()));
  for (const Tree& placement : meta.at("placements").children()) {
    spec.placements.push_back(parse_placement(placement.as_string()));
  }
  spec.meta = {tree_ints(meta.at("shape")), parse_dtype(meta.at("dtype").as_string())};
  Tensor mask = state.has("mask") ? state.at("mask") : Tensor();
  return std::make_shared<DTensor>(groups_, std::move(spec), state.at("local"), std::move(mask));
}

dist::MeshTopology DTensor::topology() const {
  dist::LinkProfile link = groups_->world().backend() == "mpi" ? mpi_backend_profile() : threads_backend_profile();
  return dist::MeshTopology::uniform(spec_.mesh.ndim(), link);
}

std::vector<Tensor> DTensor::dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) {
  // Every input's spec: DTensors as they are, plain tensors as Replicate (implicit replication).
  std::vector<TensorMeta> metas;
  std::vector<DTensorSpec> specs;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& arg = args[i];
    if (!arg.defined()) throw ValueError(op.name + ": input " + std::to_string(i) + " is undefined");
    metas.push_back(arg.meta_info());
    if (DTensor* dt = subclass_as<DTensor>(arg)) {
      if (!(dt->spec().mesh == spec_.mesh)) {
        throw ValueError(op.name + ": inputs live on different meshes: " + dt->spec().mesh.str() + " and " +
                         spec_.mesh.str());
      }
      specs.push_back(dt->spec());
    } else if (arg.is_subclass()) {
      throw ValueError(op.name + ": input " + std::to_string(i) + " is a " + subclass_of(arg).type_name() +
                       ", which DTensor cannot take");
    } else {
      specs.push_back(DTensorSpec{spec_.mesh, std::vector<Placement>(spec_.mesh.ndim(), Replicate{}), metas.back()});
    }
  }

  // Rank the candidates by what their inputs' redistributions cost (ties keep rule order), then
  // take the first sound one: checking soundness at every coordinate is the expensive part.
  std::vector<NdStrategy> candidates = candidate_strategies(op, metas, attrs, spec_.mesh);
  dist::MeshTopology links = topology();
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t c = 0; c < candidates.size(); ++c) {
    double cost = 0;
    for (size_t i = 0; i < specs.size(); ++i) cost += redistribute_cost(specs[i], candidates[c].inputs[i], links);
    ranked.emplace_back(cost, c);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const NdStrategy* best = nullptr;
  for (const auto& [cost, index] : ranked) {
    if (is_sound(op, metas, attrs, candidates[index], spec_.mesh)) {
      best = &candidates[index];
      break;
    }
  }
  if (best == nullptr) {
    throw UnsupportedOp(op.name + ": no sharding strategy fits inputs on " + spec_.mesh.str());
  }

  std::vector<Tensor> locals;
  for (size_t i = 0; i < args.size(); ++i) {
    RedistributePlan plan = plan_redistribute(specs[i], best->inputs[i], links);
    DTensor* dt = subclass_as<DTensor>(args[i]);
    Tensor local = dt ? dt->local() : args[i];
    Tensor mask = dt ? dt->mask() : Tensor();
    locals.push_back(detail::run_redistribute(local, mask, plan, *groups_));
    if (dt && has_mask_placement(dt->spec()) && !plan.steps.empty()) dt->release_mask();
  }
  LocalCallPlan call_plan = plan_local_call(op, metas, attrs, *best, spec_.mesh, groups_->coordinate());
  LocalResult result = run_local(op, locals, call_plan);
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < result.outputs.size(); ++o) {
    DTensorSpec spec{spec_.mesh, best->outputs[o], call_plan.global_outputs[o]};
    outputs.push_back(make_dtensor(groups_, std::move(spec), result.outputs[o], result.masks[o]));
  }
  return outputs;
}

bool is_dtensor(const Tensor& tensor) { return subclass_as<DTensor>(tensor) != nullptr; }

DTensor& dtensor_of(const Tensor& tensor, std::string_view what) {
  DTensor* dt = subclass_as<DTensor>(tensor);
  if (dt == nullptr) {
    throw ValueError(std::string(what) + " is not a DTensor" +
                     (tensor.defined() ? " (it is " + tensor.meta_info().str() + ")" : " (it is undefined)"));
  }
  return *dt;
}

const DTensorSpec& dtensor_spec(const Tensor& tensor) { return dtensor_of(tensor).spec(); }

Tensor make_dtensor(std::shared_ptr<const dist::MeshGroups> groups, DTensorSpec spec, Tensor local, Tensor mask) {
  TensorMeta meta = spec.meta;
  return make_subclass_tensor(
      std::make_shared<DTensor>(std::move(groups), std::move(spec), std::move(local), std::move(mask)), meta);
}

Tensor distribute_tensor(const Tensor& global, std::shared_ptr<const dist::MeshGroups> groups,
                         std::vector<Placement> placements) {
  checked_groups(groups, "distribute_tensor");
  if (global.is_subclass())
    throw ValueError("distribute_tensor: the tensor is already a " + subclass_of(global).type_name());
  DTensorSpec replicated{groups->mesh(), std::vector<Placement>(groups->mesh().ndim(), Replicate{}),
                         global.meta_info()};
  dist::MeshTopology links = dist::MeshTopology::uniform(groups->mesh().ndim(), threads_backend_profile());
  RedistributePlan plan = plan_redistribute(replicated, placements, links);
  Tensor local = detail::run_redistribute(global, Tensor(), plan, *groups);
  return make_dtensor(groups, DTensorSpec{groups->mesh(), std::move(placements), global.meta_info()}, local);
}

Tensor from_local(const Tensor& local, std::shared_ptr<const dist::MeshGroups> groups,
                  std::vector<Placement> placements, std::optional<Shape> global_shape) {
  checked_groups(groups, "from_local");
  if (!local.defined()) throw ValueError("from_local: the local tensor is undefined");
  Shape shape = local.shape();
  if (global_shape) {
    shape = *global_shape;
  } else {
    for (size_t i = 0; i < placements.size() && i < static_cast<size_t>(groups->mesh().ndim()); ++i) {
      if (const auto* shard = std::get_if<Shard>(&placements[i])) {
        int64_t dim = normalize_dim(shard->dim, local.dim(), "from_local " + placement_str(placements[i]));
        shape[static_cast<size_t>(dim)] *= groups->mesh().size(static_cast<int64_t>(i));
      }
    }
  }
  return make_dtensor(groups, DTensorSpec{groups->mesh(), std::move(placements), {shape, local.dtype()}}, local);
}

Tensor to_local(const Tensor& dtensor) { return dtensor_of(dtensor, "to_local: the tensor").local(); }

Tensor full_tensor(const Tensor& dtensor) {
  const DTensorSpec& spec = dtensor_of(dtensor, "full_tensor: the tensor").spec();
  return to_local(redistribute(dtensor, std::vector<Placement>(spec.mesh.ndim(), Replicate{})));
}

Tensor redistribute(const Tensor& dtensor, std::vector<Placement> placements) {
  DTensor& source = dtensor_of(dtensor, "redistribute: the tensor");
  RedistributePlan plan = plan_redistribute(source.spec(), placements, source.topology());
  if (plan.steps.empty()) {
    // Nothing moves (the same placements, or changes only on mesh dims of one device): the
    // same local tensor under the new placements.
    if (plan.to == source.spec().normalized().placements) return dtensor;
    return make_dtensor(source.groups(), DTensorSpec{source.spec().mesh, plan.to, source.spec().meta}, source.local());
  }
  Tensor local = detail::run_redistribute(source.local(), source.mask(), plan, *source.groups());
  if (has_mask_placement(source.spec())) source.release_mask();
  return make_dtensor(source.groups(), DTensorSpec{source.spec().mesh, std::move(placements), source.spec().meta},
                      local);
}

}  // namespace px
