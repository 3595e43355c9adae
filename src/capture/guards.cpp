#include "parallax/capture/guards.h"

#include "parallax/core/float_identity.h"
#include "parallax/nn/module.h"
#include "parallax/subclass/subclass.h"

namespace px {

namespace {

bool same_value(const Tree& traced, const Tree& given) {
  if (traced.kind() != given.kind()) return false;
  switch (traced.kind()) {
    case Tree::Kind::Bool:
      return traced.as_bool() == given.as_bool();
    case Tree::Kind::Int:
      return traced.as_int() == given.as_int();
    case Tree::Kind::Double:
      return same_double(traced.as_double(), given.as_double());
    case Tree::Kind::String:
      return traced.as_string() == given.as_string();
    default:
      return false;  // value guards hold non-tensor leaves only
  }
}

std::string leaf_text(const Tree& leaf) {
  if (leaf.kind() == Tree::Kind::Tensor) {
    const Tensor& tensor = leaf.as_tensor();
    if (!tensor.defined()) return "an undefined tensor";
    if (tensor.is_subclass()) return SubclassSignature::of(tensor).str();
    return "a tensor " + tensor.meta_info().str();
  }
  return leaf.str();
}

// The subclass signature of a defined subclass tensor; empty for anything else.
std::vector<SubclassSignature> signature_if_subclass(const Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_subclass()) return {};
  return {SubclassSignature::of(tensor)};
}

void collect_leaves(const Tree& tree, std::vector<const Tree*>& leaves) {
  if (tree.is_leaf()) {
    leaves.push_back(&tree);
    return;
  }
  for (const Tree& child : tree.children()) collect_leaves(child, leaves);
}

}  // namespace

SubclassSignature SubclassSignature::of(const Tensor& subclass_tensor) {
  const TensorSubclass& instance = subclass_of(subclass_tensor);
  SubclassState state = instance.flatten();
  SubclassSignature signature;
  signature.type_name = instance.type_name();
  signature.metadata = std::move(state.metadata);
  for (const auto& [name, inner] : state.inner) {
    Attribute attribute;
    attribute.name = name;
    attribute.present = inner.defined();
    if (attribute.present) {
      attribute.meta = inner.meta_info();
      attribute.nested = signature_if_subclass(inner);
    }
    signature.attributes.push_back(std::move(attribute));
  }
  return signature;
}

std::string SubclassSignature::str() const {
  std::string out = type_name + "(";
  for (size_t i = 0; i < attributes.size(); ++i) {
    const Attribute& attribute = attributes[i];
    out += (i ? ", " : "") + attribute.name + ": ";
    out += !attribute.present         ? std::string("absent")
           : attribute.nested.empty() ? attribute.meta.str()
                                      : attribute.nested[0].str();
  }
  return out + "; " + metadata.str() + ")";
}

std::string LeafGuard::str() const {
  std::string where = path.entries.empty() ? "<root>" : path.str();
  switch (kind) {
    case Kind::Value:
      return where + " == " + value.str();
    case Kind::TensorMeta:
      return where + " is " + meta.str();
    case Kind::Subclass:
      return where + " is " + meta.str() + " " + subclass.at(0).str();
  }
  return where;
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
      guard.kind = leaves[i].as_tensor().is_subclass() ? LeafGuard::Kind::Subclass : LeafGuard::Kind::TensorMeta;
      guard.meta = leaves[i].as_tensor().meta_info();
      guard.subclass = signature_if_subclass(leaves[i].as_tensor());
    } else {
      guard.kind = LeafGuard::Kind::Value;
      guard.value = leaves[i];
    }
  }
  for (const nn::ParameterGroup& group : groups) {
    slots_.push_back({group.fqns, group.slots, group.tensor.meta_info(), signature_if_subclass(group.tensor)});
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
    if (guard.kind == LeafGuard::Kind::Value) {
      if (same_value(guard.value, given)) continue;
      return "input " + describe_path(guard.path) + ": traced as " + guard.value.str() + ", called with " +
             leaf_text(given);
    }
    bool tensor = given.kind() == Tree::Kind::Tensor && given.as_tensor().defined();
    bool subclass = tensor && given.as_tensor().is_subclass();
    if (guard.kind == LeafGuard::Kind::TensorMeta) {
      if (tensor && !subclass && given.as_tensor().meta_info() == guard.meta) continue;
      std::string called = tensor && !subclass ? given.as_tensor().meta_info().str() : leaf_text(given);
      std::string traced = tensor && !subclass ? guard.meta.str() : "a tensor " + guard.meta.str();
      return "input " + describe_path(guard.path) + ": traced as " + traced + ", called with " + called;
    }
    if (subclass && given.as_tensor().meta_info() == guard.meta &&
        SubclassSignature::of(given.as_tensor()) == guard.subclass.at(0)) {
      continue;
    }
    return "input " + describe_path(guard.path) + ": traced as " + guard.subclass.at(0).str() + " " + guard.meta.str() +
           ", called with " + (subclass ? given.as_tensor().meta_info().str() + " " : "") + leaf_text(given);
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
      if (!guard.subclass.empty() && (!tensor.is_subclass() || SubclassSignature::of(tensor) != guard.subclass[0])) {
        return "parameter " + guard.fqns[s] + ": traced as " + guard.subclass[0].str() + ", called with " +
               (tensor.is_subclass() ? SubclassSignature::of(tensor).str()
                                     : "a plain tensor " + tensor.meta_info().str());
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
  for (const LeafGuard& guard : leaves_) {
    out += "input " + describe_path(guard.path);
    out += guard.kind == LeafGuard::Kind::Value ? " == " + guard.value.str() : " is " + guard.meta.str();
    if (guard.kind == LeafGuard::Kind::Subclass) out += " " + guard.subclass[0].str();
    out += "\n";
  }
  for (const SlotGuard& guard : slots_) {
    std::string names;
    for (size_t i = 0; i < guard.fqns.size(); ++i) names += (i ? " = " : "") + guard.fqns[i];
    out += "parameter " + names + " is " + guard.meta.str();
    if (!guard.subclass.empty()) out += " " + guard.subclass[0].str();
    out += "\n";
  }
  return out;
}

}  // namespace px
