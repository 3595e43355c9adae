#include "parallax/nn/module.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "parallax/core/edit_distance.h"
#include "parallax/core/error.h"
#include "parallax/core/generator.h"

namespace px::nn {

namespace {

std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string where(const std::string& module_name) {
  return module_name.empty() ? "a root module (or one not yet registered under a parent)"
                             : "module '" + module_name + "'";
}

void check_local_name(const std::string& what, const std::string& name, const std::string& module_name) {
  if (name.empty()) throw ValueError(what + ": empty name in " + where(module_name));
  if (name.find('.') != std::string::npos) {
    throw ValueError(what + ": name '" + name + "' in " + where(module_name) +
                     " contains '.', which separates the parts of a fully-qualified name");
  }
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Up to three names worth suggesting for a missing `fqn`: a module path's own slots
// first (the user named the module, not the tensor), else the nearest by edit distance.
std::vector<std::string> closest_names(std::string_view fqn, const std::vector<SlotRef>& slots) {
  constexpr size_t kMaxSuggestions = 3;
  std::vector<std::string> out;
  std::string module_prefix = std::string(fqn) + ".";
  for (const SlotRef& slot : slots) {
    if (slot.fqn.starts_with(module_prefix) && out.size() < kMaxSuggestions) out.push_back(slot.fqn);
  }
  if (!out.empty()) return out;
  std::vector<std::pair<size_t, size_t>> ranked;  // (distance, slot index): stable on ties
  for (size_t i = 0; i < slots.size(); ++i) ranked.emplace_back(edit_distance(fqn, slots[i].fqn), i);
  std::sort(ranked.begin(), ranked.end());
  for (size_t i = 0; i < ranked.size() && i < kMaxSuggestions; ++i) out.push_back(slots[ranked[i].second].fqn);
  return out;
}

template <class T>
void fill(Tensor& out, const Init& init, uint64_t key) {
  T* data = out.data<T>();
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) data[i] = T(static_cast<float>(init_value(init, key, static_cast<uint64_t>(i))));
}

template <>
void fill<double>(Tensor& out, const Init& init, uint64_t key) {
  double* data = out.data<double>();
  int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) data[i] = init_value(init, key, static_cast<uint64_t>(i));
}

// Integer and bool tensors take only the deterministic initializers.
template <class T>
void fill_exact(Tensor& out, const Init& init, const std::string& fqn) {
  double value = 0.0;
  switch (init.kind) {
    case Init::Kind::Zeros:
      value = 0.0;
      break;
    case Init::Kind::Ones:
      value = 1.0;
      break;
    case Init::Kind::Constant:
      value = init.a;
      break;
    case Init::Kind::Normal:
    case Init::Kind::Uniform:
    case Init::Kind::Given:
      throw ValueError("materialize: '" + fqn + "' is " + std::string(dtype_name(out.dtype())) +
                       ", which takes only zeros, ones or a constant initializer, not a random one");
  }
  if (value != std::trunc(value)) {
    throw ValueError("materialize: '" + fqn + "' is " + std::string(dtype_name(out.dtype())) +
                     " but its constant initializer " + std::to_string(value) + " is not an integer");
  }
  T* data = out.data<T>();
  std::fill(data, data + out.numel(), static_cast<T>(value));
}

Tensor draw(const TensorMeta& meta, const Init& init, uint64_t key, const std::string& fqn) {
  Tensor out = Tensor::empty(meta.shape, meta.dtype);
  switch (meta.dtype) {
    case DType::Float32:
      fill<float>(out, init, key);
      break;
    case DType::Float64:
      fill<double>(out, init, key);
      break;
    case DType::BFloat16:
      fill<BFloat16>(out, init, key);
      break;
    case DType::Int64:
      fill_exact<int64_t>(out, init, fqn);
      break;
    case DType::Bool:
      fill_exact<bool>(out, init, fqn);
      break;
  }
  return out;
}

}  // namespace

uint64_t init_stream_key(uint64_t seed, std::string_view fqn) {
  uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a
  for (char c : fqn) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ull;
  }
  return splitmix64(splitmix64(hash) ^ splitmix64(seed ^ 0x5EED5EED5EED5EEDull));
}

double init_value(const Init& init, uint64_t key, uint64_t index) {
  switch (init.kind) {
    case Init::Kind::Zeros:
      return 0.0;
    case Init::Kind::Ones:
      return 1.0;
    case Init::Kind::Constant:
      return init.a;
    case Init::Kind::Normal:
      return init.a + init.b * philox_normal(key, 0, index);
    case Init::Kind::Uniform:
      return init.a + (init.b - init.a) * philox_uniform(key, 0, index);
    case Init::Kind::Given:
      break;
  }
  throw ValueError("init_value: a Given initializer has no values to draw; the slot holds its own");
}

// --- registration ---

Tensor& Module::add_slot(std::string name, SlotKind kind, Tensor tensor, Init init) {
  std::string what = kind == SlotKind::Parameter ? "register_parameter" : "register_buffer";
  check_local_name(what, name, name_);
  if (!tensor.defined()) {
    throw ValueError(what + ": '" + name + "' in " + where(name_) + " was given an undefined tensor");
  }
  for (const Slot& slot : slots_) {
    if (slot.name == name) throw ValueError(what + ": duplicate name '" + name + "' in " + where(name_));
  }
  for (const auto& child : children_) {
    if (child->name_ == name) {
      throw ValueError(what + ": name '" + name + "' in " + where(name_) + " is already a submodule");
    }
  }
  slots_.push_back({std::move(name), kind, std::move(tensor), init});
  return slots_.back().tensor;
}

Tensor& Module::register_parameter(std::string name, Shape shape, Init init, DType dtype) {
  return add_slot(std::move(name), SlotKind::Parameter, Tensor::meta(std::move(shape), dtype), init);
}

Tensor& Module::register_parameter(std::string name, Tensor value) {
  return add_slot(std::move(name), SlotKind::Parameter, std::move(value), Init::given());
}

Tensor& Module::register_buffer(std::string name, Shape shape, Init init, DType dtype) {
  return add_slot(std::move(name), SlotKind::Buffer, Tensor::meta(std::move(shape), dtype), init);
}

Tensor& Module::register_buffer(std::string name, Tensor value) {
  return add_slot(std::move(name), SlotKind::Buffer, std::move(value), Init::given());
}

void Module::adopt(const std::string& name, std::shared_ptr<Module> module) {
  check_local_name("register_module", name, name_);
  if (!module) throw ValueError("register_module: '" + name + "' in " + where(name_) + " is a null module");
  for (const Slot& slot : slots_) {
    if (slot.name == name) {
      throw ValueError("register_module: name '" + name + "' in " + where(name_) + " is already a parameter or buffer");
    }
  }
  for (const auto& child : children_) {
    if (child->name_ == name) throw ValueError("register_module: duplicate name '" + name + "' in " + where(name_));
  }
  // A module knows one name, which its provenance scope uses: it can have one parent.
  if (!module->name_.empty()) {
    throw ValueError("register_module: '" + name + "' in " + where(name_) + " is already registered as '" +
                     module->name_ + "' elsewhere; a module has one parent (share its tensors instead)");
  }
  if (module->contains(this)) {
    throw ValueError("register_module: '" + name + "' in " + where(name_) + " would contain its own parent");
  }
  module->name_ = name;
  children_.push_back(std::move(module));
}

// --- traversal ---

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  // Explicit stack of (path, module), children pushed in reverse so they pop in order.
  std::vector<std::pair<std::string, Module*>> stack{{"", this}};
  while (!stack.empty()) {
    auto [path, module] = std::move(stack.back());
    stack.pop_back();
    for (auto it = module->children_.rbegin(); it != module->children_.rend(); ++it) {
      stack.emplace_back(join_path(path, (*it)->name_), it->get());
    }
    out.emplace_back(std::move(path), module);
  }
  return out;
}

bool Module::contains(const Module* target) const {
  if (this == target) return true;
  for (const auto& child : children_) {
    if (child->contains(target)) return true;
  }
  return false;
}

void Module::collect_tensors(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out,
                             SlotKind kind) const {
  for (const Slot& slot : slots_) {
    if (slot.kind == kind) out.emplace_back(join_path(prefix, slot.name), slot.tensor);
  }
  for (const auto& child : children_) child->collect_tensors(join_path(prefix, child->name_), out, kind);
}

void Module::collect_slots(const std::string& prefix, std::vector<SlotRef>& out, SlotKind kind) {
  for (Slot& slot : slots_) {
    if (slot.kind == kind) out.push_back({join_path(prefix, slot.name), kind, &slot.tensor, slot.init});
  }
  for (const auto& child : children_) child->collect_slots(join_path(prefix, child->name_), out, kind);
}

std::vector<SlotRef> Module::slots() {
  std::vector<SlotRef> out;
  collect_slots("", out, SlotKind::Parameter);
  collect_slots("", out, SlotKind::Buffer);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_tensors("", out, SlotKind::Parameter);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_tensors("", out, SlotKind::Buffer);
  return out;
}

std::vector<ParameterGroup> Module::parameter_groups() {
  std::vector<ParameterGroup> groups;
  std::unordered_map<const TensorImpl*, size_t> group_of;
  for (SlotRef& ref : slots()) {
    const TensorImpl* impl = ref.tensor->impl().get();
    auto found = impl ? group_of.find(impl) : group_of.end();
    if (found == group_of.end()) {
      if (impl) group_of.emplace(impl, groups.size());
      groups.push_back({{std::move(ref.fqn)}, ref.kind, *ref.tensor, {ref.tensor}});
      continue;
    }
    groups[found->second].fqns.push_back(std::move(ref.fqn));
    groups[found->second].slots.push_back(ref.tensor);
  }
  return groups;
}

Tensor& Module::slot(std::string_view fqn) {
  std::vector<SlotRef> refs = slots();
  for (const SlotRef& ref : refs) {
    if (ref.fqn == fqn) return *ref.tensor;
  }
  std::string message = "no parameter or buffer named '" + std::string(fqn) + "'";
  std::vector<std::string> near = closest_names(fqn, refs);
  for (size_t i = 0; i < near.size(); ++i) message += (i == 0 ? "; closest: '" : "', '") + near[i];
  if (!near.empty()) message += "'";
  if (refs.empty()) message += "; the module has no parameters or buffers";
  throw ValueError(message);
}

int64_t Module::num_parameters() const {
  std::unordered_set<const TensorImpl*> seen;
  int64_t total = 0;
  for (const auto& [fqn, tensor] : named_parameters()) {
    if (tensor.defined() && seen.insert(tensor.impl().get()).second) total += tensor.numel();
  }
  return total;
}

bool Module::is_meta() const {
  for (const Slot& slot : slots_) {
    if (slot.tensor.defined() && slot.tensor.is_meta()) return true;
  }
  return std::any_of(children_.begin(), children_.end(), [](const auto& child) { return child->is_meta(); });
}

void Module::materialize(uint64_t seed) {
  std::vector<SlotRef> refs = slots();
  std::vector<ParameterGroup> groups = parameter_groups();
  // parameter_groups keeps slot order, so a group's first slot is its first entry in `refs`.
  std::unordered_map<const Tensor*, const Init*> init_of;
  for (const SlotRef& ref : refs) init_of.emplace(ref.tensor, &ref.init);
  for (ParameterGroup& group : groups) {
    if (!group.tensor.defined() || !group.tensor.is_meta()) continue;
    // The first slot that asked for an initializer decides; a tensor that every name
    // registered as given stays as it is.
    const Init* init = nullptr;
    for (Tensor* slot : group.slots) {
      const Init* candidate = init_of.at(slot);
      if (candidate->kind != Init::Kind::Given) {
        init = candidate;
        break;
      }
    }
    if (!init) continue;
    const std::string& fqn = group.fqns.front();
    Tensor values = draw(group.tensor.meta_info(), *init, init_stream_key(seed, fqn), fqn);
    for (Tensor* slot : group.slots) *slot = values;
  }
}

// --- provenance ---

ModuleScope::ModuleScope(const Module& module) {
  if (!module.name().empty()) scope_ = std::make_unique<ir::ProvenanceScope>(module.name());
}

ModuleScope::~ModuleScope() = default;

}  // namespace px::nn
