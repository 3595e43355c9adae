#include "parallax/capture/capture.h"

#include <map>
#include <set>

#include "parallax/ir/interpreter.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/dispatch.h"

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

std::string path_text(const KeyPath& path) { return path.entries.empty() ? "<root>" : path.str(); }

// Removes the user inputs (after the first `first_user` graph inputs) that no node reads and no
// output returns; keeps the descriptors and the input-leaf table in step.
void drop_unused_user_inputs(CapturedGraph& entry, size_t first_user) {
  ir::Graph& graph = entry.graph;
  std::map<ir::ValueId, std::vector<size_t>> users = graph.users();
  std::set<ir::ValueId> returned(graph.outputs().begin(), graph.outputs().end());
  std::vector<ir::ValueId> inputs;
  std::vector<InputDescriptor> descriptors;
  std::vector<size_t> leaves;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    ir::ValueId id = graph.inputs()[i];
    bool user = i >= first_user;
    if (user && !users.count(id) && !returned.count(id)) {
      graph.erase_value(id);
      continue;
    }
    inputs.push_back(id);
    descriptors.push_back(entry.inputs[i]);
    if (user) leaves.push_back(entry.user_input_leaves[i - first_user]);
  }
  graph.mutable_inputs() = std::move(inputs);
  entry.inputs = std::move(descriptors);
  entry.user_input_leaves = std::move(leaves);
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

  ir::Tracer tracer(options.name);
  SlotSwap swap;
  for (const nn::ParameterGroup& group : groups) {
    if (!group.tensor.defined()) throw ValueError("capture: parameter " + group.fqns[0] + " is undefined");
    Tensor proxy = tracer.add_input(group.fqns[0], group.tensor.meta_info());
    for (Tensor* slot : group.slots) swap.put(slot, proxy);
    bool param = group.kind == nn::SlotKind::Parameter;
    entry->inputs.push_back(param ? InputDescriptor::param(group.fqns) : InputDescriptor::buffer(group.fqns));
    entry->slot_inputs.push_back(group.slots.front());
    (param ? entry->num_params : entry->num_buffers) += 1;
  }

  std::vector<KeyPath> paths = flat.spec.leaf_paths();
  std::vector<Tree> traced_leaves = flat.leaves;
  std::map<ir::ValueId, size_t> leaf_of_input_value;
  for (size_t i = 0; i < flat.leaves.size(); ++i) {
    if (flat.leaves[i].kind() != Tree::Kind::Tensor) continue;
    const Tensor& tensor = flat.leaves[i].as_tensor();
    if (tensor.is_proxy()) {
      throw TraceError("capture: input " + path_text(paths[i]) + " is a traced proxy " + tensor.meta_info().str() +
                       " (capture inside another trace takes concrete or meta tensors)");
    }
    Tensor proxy = tracer.add_input(input_value_name(paths[i], options.input_names), tensor.meta_info());
    traced_leaves[i] = Tree::tensor(proxy);
    entry->inputs.push_back(InputDescriptor::user_input(paths[i], i));
    entry->user_input_leaves.push_back(i);
    leaf_of_input_value[tracer.value_of(proxy)] = i;
  }

  Tree result;
  {
    InterceptScope scope(tracer);
    result = fn(unflatten(flat.spec, std::move(traced_leaves)));
  }
  swap.restore();

  FlatTree out = flatten(result);
  std::vector<KeyPath> out_paths = out.spec.leaf_paths();
  std::vector<Tensor> graph_outputs;
  for (size_t i = 0; i < out.leaves.size(); ++i) {
    const Tree& leaf = out.leaves[i];
    OutputLeaf rebuilt;
    bool tensor = leaf.kind() == Tree::Kind::Tensor && leaf.as_tensor().defined();
    if (tensor && tracer.owns(leaf.as_tensor())) {
      ir::ValueId id = tracer.value_of(leaf.as_tensor());
      auto input = leaf_of_input_value.find(id);
      if (input != leaf_of_input_value.end()) {
        rebuilt.kind = OutputLeaf::Kind::PassThrough;
        rebuilt.index = input->second;
      } else {
        rebuilt.kind = OutputLeaf::Kind::GraphOutput;
        rebuilt.index = graph_outputs.size();
        graph_outputs.push_back(leaf.as_tensor());
        entry->outputs.push_back(OutputDescriptor::user_output(out_paths[i], i));
      }
    } else if (tensor && leaf.as_tensor().is_proxy()) {
      throw TraceError("capture: output " + path_text(out_paths[i]) + " is a proxy of another trace");
    } else {
      rebuilt.kind = OutputLeaf::Kind::Constant;
      rebuilt.constant = leaf;
    }
    entry->output_leaves.push_back(std::move(rebuilt));
  }
  tracer.set_outputs(graph_outputs);
  entry->graph = tracer.finish();
  entry->out_spec = std::move(out.spec);
  drop_unused_user_inputs(*entry, groups.size());
  return entry;
}

}  // namespace

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
}

const CapturedGraph& CapturedProgram::primary() const {
  if (cache_.empty()) {
    throw ValueError("captured program '" + options_.name +
                     "' holds no graph (reset() cleared it); call it to capture again");
  }
  return *cache_.front();
}

const CapturedGraph& CapturedProgram::capture_for(const Tree& inputs) {
  cache_.push_back(trace(fn_, module_, inputs, options_));
  return *cache_.back();
}

Tree CapturedProgram::execute(const CapturedGraph& entry, const std::vector<const Tree*>& leaves) const {
  std::vector<Tensor> outputs;
  if (!entry.graph.outputs().empty()) {
    std::vector<Tensor> inputs;
    inputs.reserve(entry.slot_inputs.size() + entry.user_input_leaves.size());
    for (const Tensor* slot : entry.slot_inputs) inputs.push_back(*slot);
    for (size_t leaf : entry.user_input_leaves) inputs.push_back(leaves[leaf]->as_tensor());
    outputs = ir::interpret(entry.graph, inputs);
  }
  std::vector<Tree> out_leaves;
  out_leaves.reserve(entry.output_leaves.size());
  for (const OutputLeaf& leaf : entry.output_leaves) {
    switch (leaf.kind) {
      case OutputLeaf::Kind::GraphOutput:
        out_leaves.push_back(Tree::tensor(std::move(outputs[leaf.index])));
        break;
      case OutputLeaf::Kind::PassThrough:
        out_leaves.push_back(*leaves[leaf.index]);
        break;
      case OutputLeaf::Kind::Constant:
        out_leaves.push_back(leaf.constant);
        break;
    }
  }
  return unflatten(entry.out_spec, std::move(out_leaves));
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
