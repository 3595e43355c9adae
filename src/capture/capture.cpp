#include "parallax/capture/capture.h"

#include <map>
#include <set>

#include "parallax/ir/interpreter.h"
#include "parallax/ir/provenance.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/shape.h"

namespace px {

namespace {

// Puts traced proxies into the module's slots for the trace and the module's own
// tensors back afterwards, also when forward throws.
class SlotSwap {
 public:
  SlotSwap() = default;
  SlotSwap(const SlotSwap&) = delete;
  SlotSwap& operator=(const SlotSwap&) = delete;
  ~SlotSwap() { restore(); }

  void put(Tensor* slot, Tensor value) {
    saved_.emplace_back(slot, *slot);
    *slot = std::move(value);
  }
  void restore() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) *it->first = std::move(it->second);
    saved_.clear();
  }

 private:
  std::vector<std::pair<Tensor*, Tensor>> saved_;
};

// The IR name of a user input: `x`, `batch.tokens`, `arg1.0`.
std::string input_value_name(const KeyPath& path, const std::vector<std::string>& names) {
  std::string name;
  for (size_t i = 0; i < path.entries.size(); ++i) {
    const KeyEntry& entry = path.entries[i];
    std::string part;
    if (i == 0 && entry.kind == KeyEntry::Kind::Index) {
      bool named = entry.index < names.size() && !names[entry.index].empty();
      part = named ? names[entry.index] : "arg" + std::to_string(entry.index);
    } else {
      part = entry.kind == KeyEntry::Kind::Index ? std::to_string(entry.index) : entry.name;
    }
    name += (name.empty() ? "" : ".") + part;
  }
  return name.empty() ? "input" : name;
}

std::string joined(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

// The caller's subclass objects before capture: restored when capture ends, however it ends,
// so that capture never leaves a caller's object changed.
class SubclassSnapshot {
 public:
  SubclassSnapshot() = default;
  SubclassSnapshot(const SubclassSnapshot&) = delete;
  SubclassSnapshot& operator=(const SubclassSnapshot&) = delete;
  ~SubclassSnapshot() {
    for (Entry& entry : entries_) {
      try {
        restore(entry);
      } catch (...) {  // a destructor must not throw; the state was taken from this very object
      }
    }
  }

  void take(const Tensor& tensor) {
    if (!tensor.defined() || !tensor.is_subclass()) return;
    for (const Entry& entry : entries_) {
      if (entry.tensor.same(tensor)) return;
    }
    std::shared_ptr<TensorSubclass> instance = shared_subclass_of(tensor);
    entries_.push_back({tensor, instance, instance->flatten()});
  }

 private:
  struct Entry {
    Tensor tensor;
    std::shared_ptr<TensorSubclass> instance;
    SubclassState state;
  };
  static bool same_state(const SubclassState& a, const SubclassState& b) {
    if (a.inner.size() != b.inner.size() || !(a.metadata == b.metadata)) return false;
    for (size_t i = 0; i < a.inner.size(); ++i) {
      if (a.inner[i].first != b.inner[i].first || a.inner[i].second.impl() != b.inner[i].second.impl()) return false;
    }
    return true;
  }
  static void restore(Entry& entry) {
    entry.tensor.impl()->subclass = entry.instance;
    if (!same_state(entry.instance->flatten(), entry.state)) set_subclass_state(entry.tensor, entry.state);
  }
  std::vector<Entry> entries_;
};

// A subclass input's twin during the trace: what it started as, and where the caller's object is.
struct TrackedSubclass {
  Tensor twin;
  SubclassState before;
  InputSource target;
  InputDescriptor owner;
};

struct TraceState {
  ir::Tracer tracer;
  CapturedGraph& entry;
  std::map<ir::ValueId, InputSource> value_sources;  // graph input value -> where its tensor comes from
  std::vector<TrackedSubclass> tracked;
  std::set<ir::ValueId> precision_casts;  // outputs of the casts the mixed-precision policy added
};

// A graph input for `tensor` (plain), or, for a subclass tensor, graph inputs for its present
// inner tensors (recursively) and a twin instance over them, tracked for mutations when
// `track` (every subclass level is). Returns what forward sees.
Tensor desugar(TraceState& trace, const Tensor& tensor, const std::string& name, const InputDescriptor& owner,
               const InputSource& source, bool track) {
  if (!tensor.is_subclass()) {
    Tensor proxy = trace.tracer.add_input(name, tensor.meta_info());
    bool inner = !source.inner.empty();
    trace.entry.inputs.push_back(inner ? InputDescriptor::subclass_inner(owner, joined(source.inner, ".")) : owner);
    trace.entry.sources.push_back(source);
    trace.value_sources.emplace(trace.tracer.value_of(proxy), source);
    return proxy;
  }
  const TensorSubclass& instance = subclass_of(tensor);
  SubclassState state = instance.flatten();
  SubclassState traced{{}, state.metadata};
  for (const auto& [attribute, inner] : state.inner) {
    if (!inner.defined()) {
      traced.inner.emplace_back(attribute, Tensor());
      continue;
    }
    InputSource inner_source = source;
    inner_source.inner.push_back(attribute);
    traced.inner.emplace_back(attribute, desugar(trace, inner, name + "." + attribute, owner, inner_source, true));
  }
  std::shared_ptr<TensorSubclass> twin_instance = instance.unflatten(traced);
  if (!twin_instance) throw ValueError("capture: unflatten of " + instance.type_name() + " returned nothing");
  Tensor twin = make_subclass_tensor(std::move(twin_instance), tensor.meta_info());
  if (track) trace.tracked.push_back({twin, std::move(traced), source, owner});
  return twin;
}

// Records what the dispatch code did to each tracked twin; tensors computed in the graph join `graph_outputs`.
void record_mutations(TraceState& trace, std::vector<Tensor>& graph_outputs) {
  for (const TrackedSubclass& tracked : trace.tracked) {
    SubclassState after = subclass_of(tracked.twin).flatten();
    const SubclassState& before = tracked.before;
    std::string where = tracked.owner.kind == InputDescriptor::Kind::UserInput
                            ? "input " + tracked.owner.path.str_or_root()
                            : "parameter " + tracked.owner.fqns.at(0);
    bool same_attributes = after.inner.size() == before.inner.size();
    for (size_t i = 0; same_attributes && i < after.inner.size(); ++i) {
      same_attributes = after.inner[i].first == before.inner[i].first;
    }
    if (!same_attributes) {
      throw TraceError("capture: the attributes that flatten() reports for " + where + " (" +
                       subclass_of(tracked.twin).type_name() +
                       ") changed during the trace; flatten() must list the same attributes, absent or not");
    }
    for (size_t i = 0; i < after.inner.size(); ++i) {
      const std::string& attribute = after.inner[i].first;
      const Tensor& now = after.inner[i].second;
      const Tensor& was = before.inner[i].second;
      AttrMutation mutation;
      mutation.target = tracked.target;
      mutation.attribute = attribute;
      if (!now.defined()) {
        if (!was.defined()) continue;
        mutation.kind = AttrMutation::Kind::Clear;
      } else if (was.defined() && now.same(was)) {
        continue;
      } else if (now.is_subclass()) {
        throw TraceError("capture: the dispatch code set attribute '" + attribute + "' of " + where +
                         " to a subclass tensor; capture tracks plain tensors as attributes only");
      } else if (trace.tracer.owns(now)) {
        ir::ValueId id = trace.tracer.value_of(now);
        auto source = trace.value_sources.find(id);
        if (source != trace.value_sources.end()) {
          mutation.kind = AttrMutation::Kind::SetAlias;
          mutation.alias = source->second;
        } else {
          mutation.kind = AttrMutation::Kind::SetComputed;
          mutation.graph_output = graph_outputs.size();
          graph_outputs.push_back(now);
          std::string qualified =
              tracked.target.inner.empty() ? attribute : joined(tracked.target.inner, ".") + "." + attribute;
          trace.entry.outputs.push_back(OutputDescriptor::attr_mutation(tracked.owner, qualified));
        }
      } else if (now.is_proxy()) {
        throw TraceError("capture: attribute '" + attribute + "' of " + where + " was set to a proxy of another trace");
      } else {
        mutation.kind = AttrMutation::Kind::SetConstant;
        mutation.constant = now;
      }
      trace.entry.mutations.push_back(std::move(mutation));
    }
    if (!(after.metadata == before.metadata)) {
      AttrMutation mutation;
      mutation.kind = AttrMutation::Kind::SetMetadata;
      mutation.target = tracked.target;
      mutation.metadata = after.metadata;
      trace.entry.mutations.push_back(std::move(mutation));
    }
  }
}

// Removes the plain user inputs that no node reads and no output returns; keeps the
// descriptors and sources in step.
void drop_unused_user_inputs(CapturedGraph& entry) {
  ir::Graph& graph = entry.graph;
  std::map<ir::ValueId, std::vector<size_t>> users = graph.users();
  std::set<ir::ValueId> returned(graph.outputs().begin(), graph.outputs().end());
  std::vector<ir::ValueId> inputs;
  std::vector<InputDescriptor> descriptors;
  std::vector<InputSource> sources;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    ir::ValueId id = graph.inputs()[i];
    if (entry.inputs[i].kind == InputDescriptor::Kind::UserInput && !users.count(id) && !returned.count(id)) {
      graph.erase_value(id);
      continue;
    }
    inputs.push_back(id);
    descriptors.push_back(entry.inputs[i]);
    sources.push_back(entry.sources[i]);
  }
  graph.mutable_inputs() = std::move(inputs);
  entry.inputs = std::move(descriptors);
  entry.sources = std::move(sources);
}

// How output leaf `leaf` (at `path`) is rebuilt; tensors computed in the graph join `graph_outputs`.
OutputLeaf sort_output(TraceState& trace, const Tree& leaf, const KeyPath& path, size_t index,
                       const std::map<ir::ValueId, size_t>& leaf_of_input_value,
                       const std::map<const TensorImpl*, size_t>& leaf_of_twin, std::vector<Tensor>& graph_outputs) {
  OutputLeaf rebuilt;
  bool tensor = leaf.kind() == Tree::Kind::Tensor && leaf.as_tensor().defined();
  if (!tensor) {
    rebuilt.constant = leaf;
    return rebuilt;
  }
  const Tensor& value = leaf.as_tensor();
  if (value.is_subclass()) {
    auto twin = leaf_of_twin.find(value.impl().get());
    if (twin != leaf_of_twin.end()) {
      rebuilt.kind = OutputLeaf::Kind::PassThrough;
      rebuilt.index = twin->second;
      return rebuilt;
    }
    rebuilt.kind = OutputLeaf::Kind::Subclass;
    rebuilt.prototype = shared_subclass_of(value);
    rebuilt.meta = value.meta_info();
    SubclassState state = rebuilt.prototype->flatten();
    rebuilt.metadata = state.metadata;
    for (const auto& [attribute, inner] : state.inner) {
      if (!inner.defined()) {
        rebuilt.inner_outputs.emplace_back(attribute, -1);
        continue;
      }
      if (inner.is_subclass() || !trace.tracer.owns(inner)) {
        throw TraceError("capture: output " + path.str_or_root() + " is a " + rebuilt.prototype->type_name() +
                         " whose attribute '" + attribute + "' is not a tensor computed in the graph (" +
                         inner.meta_info().str() + "); capture rebuilds subclass outputs from graph outputs only");
      }
      rebuilt.inner_outputs.emplace_back(attribute, static_cast<int64_t>(graph_outputs.size()));
      graph_outputs.push_back(inner);
      trace.entry.outputs.push_back(OutputDescriptor::user_output_inner(path, index, attribute));
    }
    return rebuilt;
  }
  if (trace.tracer.owns(value)) {
    auto input = leaf_of_input_value.find(trace.tracer.value_of(value));
    if (input != leaf_of_input_value.end()) {
      rebuilt.kind = OutputLeaf::Kind::PassThrough;
      rebuilt.index = input->second;
    } else {
      rebuilt.kind = OutputLeaf::Kind::GraphOutput;
      rebuilt.index = graph_outputs.size();
      graph_outputs.push_back(value);
      trace.entry.outputs.push_back(OutputDescriptor::user_output(path, index));
    }
    return rebuilt;
  }
  if (value.is_proxy()) throw TraceError("capture: output " + path.str_or_root() + " is a proxy of another trace");
  rebuilt.constant = leaf;
  return rebuilt;
}

// A floating parameter's (or input's, as FSDP2 casts the root's inputs) compute copy under the
// policy: a cast recorded at the parameter's module path ("model.layers.3.attention.wq" for
// "model.layers.3.attention.wq.weight"; the root for an input).
Tensor cast_for_compute(TraceState& trace, const Tensor& traced, const std::string& fqn,
                        const MixedPrecisionPolicy& precision) {
  if (!precision.param_dtype || traced.is_subclass() || !is_floating(traced.dtype()) ||
      traced.dtype() == *precision.param_dtype) {
    return traced;
  }
  const size_t dot = fqn.rfind('.');
  ir::ProvenanceScope where(
      ir::Provenance{dot == std::string::npos ? std::string() : fqn.substr(0, dot), ir::Phase::Forward});
  InterceptScope scope(trace.tracer);
  Tensor compute = cast(traced, *precision.param_dtype);
  trace.precision_casts.insert(trace.tracer.value_of(compute));
  return compute;
}

// Moves each policy cast to just before its first reader. Recorded at the start, before the
// forward, its backward (the cast back) would come last: every layer's gradient would wait in
// the compute dtype until the whole backward is done. Next to its reader, the cast back follows
// the layer's own backward, where the gradient can be reduced, as FSDP2 does.
void sink_precision_casts(ir::Graph& graph, const std::set<ir::ValueId>& casts) {
  if (casts.empty()) return;
  std::vector<ir::Node>& nodes = graph.mutable_nodes();
  std::map<ir::ValueId, size_t> deferred;  // cast output -> its node index
  std::vector<bool> is_deferred(nodes.size(), false), placed(nodes.size(), false);
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].outputs.size() != 1 || !casts.count(nodes[n].outputs[0])) continue;
    deferred[nodes[n].outputs[0]] = n;
    is_deferred[n] = true;
  }
  std::vector<ir::Node> order;
  order.reserve(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (is_deferred[n]) continue;
    for (ir::ValueId input : nodes[n].inputs) {
      auto found = deferred.find(input);
      if (found == deferred.end() || placed[found->second]) continue;
      placed[found->second] = true;
      order.push_back(nodes[found->second]);
    }
    order.push_back(nodes[n]);
  }
  for (const auto& [value, n] : deferred) {
    if (!placed[n]) order.push_back(nodes[n]);  // read by nothing but the graph outputs
  }
  nodes = std::move(order);
}

// The floating tensor leaves of `result` cast to `dtype` (the tracer is intercepting).
Tree cast_outputs(const Tree& result, DType dtype) {
  FlatTree flat = flatten(result);
  for (Tree& leaf : flat.leaves) {
    if (leaf.kind() != Tree::Kind::Tensor) continue;
    const Tensor& tensor = leaf.as_tensor();
    if (tensor.is_subclass() || !is_floating(tensor.dtype()) || tensor.dtype() == dtype) continue;
    leaf = Tree::tensor(cast(tensor, dtype));
  }
  return unflatten(flat.spec, std::move(flat.leaves));
}

std::shared_ptr<CapturedGraph> trace(const TreeFunction& fn, nn::Module* module, const Tree& inputs,
                                     const CaptureOptions& options) {
  auto entry = std::make_shared<CapturedGraph>();
  FlatTree flat = flatten(inputs);
  std::vector<nn::ParameterGroup> groups;
  if (module) groups = module->parameter_groups();
  entry->guards = Guards(flat.spec, flat.leaves, groups, options.input_names);
  entry->in_spec = flat.spec;
  entry->input_names = options.input_names;

  SubclassSnapshot snapshot;  // declared first: restores the caller's objects last, after everything else
  for (const nn::ParameterGroup& group : groups) snapshot.take(group.tensor);
  for (const Tree& leaf : flat.leaves) {
    if (leaf.kind() == Tree::Kind::Tensor) snapshot.take(leaf.as_tensor());
  }

  TraceState trace{ir::Tracer(options.name), *entry, {}, {}, {}};
  SlotSwap swap;
  for (const nn::ParameterGroup& group : groups) {
    if (!group.tensor.defined()) throw ValueError("capture: parameter " + group.fqns[0] + " is undefined");
    bool param = group.kind == nn::SlotKind::Parameter;
    InputDescriptor owner = param ? InputDescriptor::param(group.fqns) : InputDescriptor::buffer(group.fqns);
    size_t before = entry->inputs.size();
    Tensor traced = desugar(trace, group.tensor, group.fqns[0], owner, InputSource{group.slots.front(), 0, {}}, true);
    if (param) traced = cast_for_compute(trace, traced, group.fqns[0], options.precision);
    for (Tensor* slot : group.slots) swap.put(slot, traced);
    (param ? entry->num_params : entry->num_buffers) += entry->inputs.size() - before;
  }

  std::vector<KeyPath> paths = flat.spec.leaf_paths();
  std::vector<Tree> traced_leaves = flat.leaves;
  std::map<ir::ValueId, size_t> leaf_of_input_value;
  std::map<const TensorImpl*, size_t> leaf_of_twin;
  for (size_t i = 0; i < flat.leaves.size(); ++i) {
    if (flat.leaves[i].kind() != Tree::Kind::Tensor) continue;
    const Tensor& tensor = flat.leaves[i].as_tensor();
    if (tensor.is_proxy()) {
      throw TraceError("capture: input " + paths[i].str_or_root() + " is a traced proxy " + tensor.meta_info().str() +
                       " (capture inside another trace takes concrete or meta tensors)");
    }
    Tensor traced = desugar(trace, tensor, input_value_name(paths[i], options.input_names),
                            InputDescriptor::user_input(paths[i], i), InputSource{nullptr, i, {}}, true);
    if (traced.is_subclass()) {
      leaf_of_twin[traced.impl().get()] = i;
    } else {
      leaf_of_input_value[trace.tracer.value_of(traced)] = i;
    }
    traced_leaves[i] = Tree::tensor(cast_for_compute(trace, traced, "", options.precision));
  }

  Tree result;
  {
    InterceptScope scope(trace.tracer);
    result = fn(unflatten(flat.spec, std::move(traced_leaves)));
    if (options.precision.output_dtype) result = cast_outputs(result, *options.precision.output_dtype);
  }
  swap.restore();

  FlatTree out = flatten(result);
  std::vector<KeyPath> out_paths = out.spec.leaf_paths();
  std::vector<Tensor> graph_outputs;
  for (size_t i = 0; i < out.leaves.size(); ++i) {
    entry->output_leaves.push_back(
        sort_output(trace, out.leaves[i], out_paths[i], i, leaf_of_input_value, leaf_of_twin, graph_outputs));
  }
  record_mutations(trace, graph_outputs);
  trace.tracer.set_outputs(graph_outputs);
  entry->graph = trace.tracer.finish();
  sink_precision_casts(entry->graph, trace.precision_casts);
  entry->out_spec = std::move(out.spec);
  drop_unused_user_inputs(*entry);
  return entry;
}

}  // namespace

Tensor InputSource::resolve(const std::vector<const Tree*>& leaves) const {
  Tensor tensor = slot ? *slot : leaves.at(leaf)->as_tensor();
  for (const std::string& attribute : inner) tensor = subclass_of(tensor).flatten().at(attribute);
  return tensor;
}

std::string AttrMutation::str() const {
  switch (kind) {
    case Kind::SetComputed:
      return "set " + attribute + " = graph output " + std::to_string(graph_output);
    case Kind::SetAlias:
      return "set " + attribute + " = an input tensor (alias)";
    case Kind::SetConstant:
      return "set " + attribute + " = a constant " + constant.meta_info().str();
    case Kind::Clear:
      return "clear " + attribute;
    case Kind::SetMetadata:
      return "metadata = " + metadata.str();
  }
  return "?";
}

std::vector<Tensor> CapturedGraph::graph_inputs(const Tree& inputs) const {
  std::vector<const Tree*> leaves;
  if (std::optional<std::string> failure = guards.check(inputs, leaves)) throw GuardError(*failure);
  std::vector<Tensor> tensors;
  for (const InputSource& source : sources) tensors.push_back(source.resolve(leaves));
  return tensors;
}

std::vector<std::pair<KeyPath, Tree>> CapturedGraph::baked_inputs() const {
  std::vector<std::pair<KeyPath, Tree>> baked;
  for (const LeafGuard& guard : guards.leaves()) {
    if (guard.kind == LeafGuard::Kind::Value) baked.emplace_back(guard.path, guard.value);
  }
  return baked;
}

std::vector<std::pair<KeyPath, Tree>> CapturedGraph::constant_outputs() const {
  std::vector<std::pair<KeyPath, Tree>> constants;
  std::vector<KeyPath> paths = out_spec.leaf_paths();
  for (size_t i = 0; i < output_leaves.size(); ++i) {
    if (output_leaves[i].kind == OutputLeaf::Kind::Constant)
      constants.emplace_back(paths[i], output_leaves[i].constant);
  }
  return constants;
}

CapturedProgram::CapturedProgram(TreeFunction fn, nn::Module* module, CaptureOptions options)
    : fn_(std::move(fn)), module_(module), options_(std::move(options)) {
  if (!fn_) throw ValueError("capture: the function to capture is empty");
  if (options_.cache_size == 0) throw ValueError("capture: cache_size must be at least 1");
  options_.precision.validate("capture");
}

const CapturedGraph& CapturedProgram::primary() const {
  if (cache_.empty()) {
    throw ValueError("captured program '" + options_.name +
                     "' holds no graph (reset() cleared it); call it to capture again");
  }
  return *cache_.front();
}

Tree CapturedGraph::output_tree(const std::vector<const Tree*>& leaves, const std::vector<Tensor>& outputs) const {
  std::vector<Tree> out_leaves;
  out_leaves.reserve(output_leaves.size());
  for (const OutputLeaf& leaf : output_leaves) {
    switch (leaf.kind) {
      case OutputLeaf::Kind::GraphOutput:
        out_leaves.push_back(Tree::tensor(outputs[leaf.index]));
        break;
      case OutputLeaf::Kind::PassThrough:
        out_leaves.push_back(*leaves[leaf.index]);
        break;
      case OutputLeaf::Kind::Constant:
        out_leaves.push_back(leaf.constant);
        break;
      case OutputLeaf::Kind::Subclass: {
        SubclassState state{{}, leaf.metadata};
        for (const auto& [attribute, output] : leaf.inner_outputs) {
          state.inner.emplace_back(attribute, output < 0 ? Tensor() : outputs[static_cast<size_t>(output)]);
        }
        out_leaves.push_back(Tree::tensor(make_subclass_tensor(leaf.prototype->unflatten(state), leaf.meta)));
        break;
      }
    }
  }
  return unflatten(out_spec, std::move(out_leaves));
}

const CapturedGraph& CapturedProgram::capture_for(const Tree& inputs) {
  cache_.push_back(trace(fn_, module_, inputs, options_));
  return *cache_.back();
}

Tree CapturedProgram::execute(const CapturedGraph& entry, const std::vector<const Tree*>& leaves) const {
  std::vector<Tensor> outputs;
  if (!entry.graph.outputs().empty()) {
    std::vector<Tensor> inputs;
    inputs.reserve(entry.sources.size());
    for (const InputSource& source : entry.sources) inputs.push_back(source.resolve(leaves));
    outputs = ir::interpret(entry.graph, inputs);
  }
  if (!entry.mutations.empty()) replay(entry, leaves, outputs);
  return entry.output_tree(leaves, outputs);
}

void CapturedProgram::replay(const CapturedGraph& entry, const std::vector<const Tree*>& leaves,
                             const std::vector<Tensor>& outputs) {
  // Resolve every tensor first: an alias names an input as the caller passed it, before any change.
  struct Change {
    Tensor target;
    const AttrMutation* mutation;
    Tensor value;
  };
  std::vector<Change> changes;
  changes.reserve(entry.mutations.size());
  for (const AttrMutation& mutation : entry.mutations) {
    Tensor value;
    switch (mutation.kind) {
      case AttrMutation::Kind::SetComputed:
        value = outputs.at(mutation.graph_output);
        break;
      case AttrMutation::Kind::SetAlias:
        value = mutation.alias.resolve(leaves);
        break;
      case AttrMutation::Kind::SetConstant:
        value = mutation.constant;
        break;
      case AttrMutation::Kind::Clear:
      case AttrMutation::Kind::SetMetadata:
        break;
    }
    changes.push_back({mutation.target.resolve(leaves), &mutation, std::move(value)});
  }
  // Then apply them, one new state per caller object (mutations of one target are adjacent).
  for (size_t i = 0; i < changes.size();) {
    const Tensor& target = changes[i].target;
    SubclassState state = subclass_of(target).flatten();
    size_t j = i;
    for (; j < changes.size() && changes[j].target.same(target); ++j) {
      const AttrMutation& mutation = *changes[j].mutation;
      if (mutation.kind == AttrMutation::Kind::SetMetadata) {
        state.metadata = mutation.metadata;
        continue;
      }
      for (auto& [attribute, tensor] : state.inner) {
        if (attribute == mutation.attribute) tensor = changes[j].value;  // undefined for Clear
      }
    }
    set_subclass_state(target, state);
    i = j;
  }
}

Tree CapturedProgram::run(const Tree& inputs) {
  std::vector<const Tree*> leaves;
  if (cache_.empty()) capture_for(inputs);
  std::optional<std::string> first_failure;
  for (const std::shared_ptr<const CapturedGraph>& entry : cache_) {
    std::optional<std::string> failure = entry->guards.check(inputs, leaves);
    if (!failure) return execute(*entry, leaves);
    if (!first_failure) first_failure = std::move(failure);
  }
  if (options_.on_guard_failure == CaptureOptions::OnGuardFailure::Raise) {
    throw GuardError(*first_failure + " (program '" + options_.name +
                     "'; capture again, or set on_guard_failure = Recompile)");
  }
  if (cache_.size() >= options_.cache_size) {
    std::string differing;
    for (size_t i = 0; i < cache_.size(); ++i) {
      differing += "\n  program " + std::to_string(i) + ": " + cache_[i]->guards.check(inputs, leaves).value_or("?");
    }
    throw GuardError("program '" + options_.name + "' reached its cache_size of " +
                     std::to_string(options_.cache_size) +
                     " captured programs and none fits this call; the guards that differ:" + differing);
  }
  const CapturedGraph& entry = capture_for(inputs);
  if (std::optional<std::string> failure = entry.guards.check(inputs, leaves)) {
    throw GuardError("program '" + options_.name + "' captured again but its guards still fail: " + *failure);
  }
  return execute(entry, leaves);
}

CapturedProgram capture(TreeFunction fn, nn::Module* module, const Tree& example_inputs, CaptureOptions options) {
  CapturedProgram program(std::move(fn), module, std::move(options));
  program.capture_for(example_inputs);
  return program;
}

}  // namespace px
