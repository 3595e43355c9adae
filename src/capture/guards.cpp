#include "parallax/capture/guards.h"

#include <cmath>

#include "parallax/nn/module.h"

namespace px {

namespace {

bool same_value(const Tree& traced, const Tree& given) {
  if (traced.kind() != given.kind()) return false;
  switch (traced.kind()) {
    case Tree::Kind::Bool:
      return traced.as_bool() == given.as_bool();
    case Tree::Kind::Int:
      return traced.as_int() == given.as_int();
    case Tree::Kind::Double: {
      double a = traced.as_double(), b = given.as_double();
      return a == b || (std::isnan(a) && std::isnan(b));
    }
    case Tree::Kind::String:
      return traced.as_string() == given.as_string();
    default:
      return false;  // value guards hold non-tensor leaves only
  }
}

std::string leaf_text(const Tree& leaf) {
  if (leaf.kind() == Tree::Kind::Tensor) {
    const Tensor& tensor = leaf.as_tensor();
    return tensor.defined() ? "a tensor " + tensor.meta_info().str() : "an undefined tensor";
  }
  return leaf.str();
}

void collect_leaves(const Tree& tree, std::vector<const Tree*>& leaves) {
  if (tree.is_leaf()) {
    leaves.push_back(&tree);
    return;
  }
  for (const Tree& child : tree.children()) collect_leaves(child, leaves);
}

}  // namespace

std::string LeafGuard::str() const {
  std::string where = path.entries.empty() ? "<root>" : path.str();
  return kind == Kind::Value ? where + " == " + value.str() : where + " is " + meta.str();
}

Guards::Guards(TreeSpec spec, const std::vector<Tree>& leaves, const std::vector<nn::ParameterGroup>& groups,
               std::vector<std::string> input_names)
    : spec_(std::move(spec)), input_names_(std::move(input_names)) {
  std::vector<KeyPath> paths = spec_.leaf_paths();
  PX_ASSERT(paths.size() == leaves.size());
  leaves_.reserve(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    // Filled in place: a local LeafGuard moved in trips g++ 12's -Wmaybe-uninitialized on the variant.
    LeafGuard& guard = leaves_.emplace_back();
    guard.path = std::move(paths[i]);
    if (leaves[i].kind() == Tree::Kind::Tensor) {
      if (!leaves[i].as_tensor().defined()) {
        throw ValueError("capture: input " + describe_path(guard.path) + " is an undefined tensor");
      }
      guard.kind = LeafGuard::Kind::TensorMeta;
      guard.meta = leaves[i].as_tensor().meta_info();
    } else {
      guard.kind = LeafGuard::Kind::Value;
      guard.value = leaves[i];
    }
  }
  for (const nn::ParameterGroup& group : groups) {
    slots_.push_back({group.fqns, group.slots, group.tensor.meta_info()});
  }
}

std::string Guards::describe_path(const KeyPath& path) const {
  if (path.entries.empty()) return "<root>";
  std::string text = path.str();
  const KeyEntry& top = path.entries.front();
  if (top.kind == KeyEntry::Kind::Index && top.index < input_names_.size() && !input_names_[top.index].empty()) {
    text += " (" + input_names_[top.index] + ")";
  }
  return text;
}

std::optional<std::string> Guards::check(const Tree& inputs, std::vector<const Tree*>& leaves) const {
  if (std::optional<StructureDifference> difference = find_structure_difference(spec_, inputs)) {
    std::string where = difference->path.entries.empty() ? "inputs" : "input " + describe_path(difference->path);
    return where + ": traced as " + difference->expected + ", called with " + difference->given;
  }
  leaves.clear();
  leaves.reserve(leaves_.size());
  collect_leaves(inputs, leaves);
  for (size_t i = 0; i < leaves_.size(); ++i) {
    const LeafGuard& guard = leaves_[i];
    const Tree& given = *leaves[i];
    bool holds = guard.kind == LeafGuard::Kind::Value
                     ? same_value(guard.value, given)
                     : given.kind() == Tree::Kind::Tensor && given.as_tensor().defined() &&
                           given.as_tensor().meta_info() == guard.meta;
    if (holds) continue;
    std::string traced = guard.kind == LeafGuard::Kind::Value ? guard.value.str() : guard.meta.str();
    std::string called =
        guard.kind == LeafGuard::Kind::TensorMeta && given.kind() == Tree::Kind::Tensor && given.as_tensor().defined()
            ? given.as_tensor().meta_info().str()
            : leaf_text(given);
    if (guard.kind == LeafGuard::Kind::Value && given.kind() == Tree::Kind::Tensor) called = leaf_text(given);
    if (guard.kind == LeafGuard::Kind::TensorMeta && given.kind() != Tree::Kind::Tensor) traced = "a tensor " + traced;
    return "input " + describe_path(guard.path) + ": traced as " + traced + ", called with " + called;
  }
  for (const SlotGuard& guard : slots_) {
    const Tensor& first = *guard.slots.front();
    for (size_t s = 0; s < guard.slots.size(); ++s) {
      const Tensor& tensor = *guard.slots[s];
      if (!tensor.defined())
        return "parameter " + guard.fqns[s] + ": traced as " + guard.meta.str() + ", now undefined";
      if (tensor.meta_info() != guard.meta) {
        return "parameter " + guard.fqns[s] + ": traced as " + guard.meta.str() + ", called with " +
               tensor.meta_info().str();
      }
      if (!tensor.same(first)) {
        return "parameters " + guard.fqns[0] + " and " + guard.fqns[s] +
               ": tied (one tensor) when traced, different tensors now";
      }
    }
  }
  return std::nullopt;
}

std::string Guards::str() const {
  std::string out = "structure " + spec_.str() + "\n";
  for (const LeafGuard& guard : leaves_)
    out += "input " + describe_path(guard.path) +
           (guard.kind == LeafGuard::Kind::Value ? " == " + guard.value.str() : " is " + guard.meta.str()) + "\n";
  for (const SlotGuard& guard : slots_) {
    std::string names;
    for (size_t i = 0; i < guard.fqns.size(); ++i) names += (i ? " = " : "") + guard.fqns[i];
    out += "parameter " + names + " is " + guard.meta.str() + "\n";
  }
  return out;
}

}  // namespace px
