#include "parallax/ops/registry.h"

#include "parallax/core/error.h"

namespace px {

void Registry::add(OpDef def) {
  if (def.name.empty()) throw ValueError("Registry::add: an op needs a name");
  if (ops_.count(def.name)) throw ValueError("Registry::add: op '" + def.name + "' is already registered");
  if (!def.infer) throw ValueError("Registry::add: op '" + def.name + "' has no shape inference");
  if (!def.kernel) throw ValueError("Registry::add: op '" + def.name + "' has no kernel");
  if (!def.cost) throw ValueError("Registry::add: op '" + def.name + "' has no cost function");
  for (size_t i = 0; i + 1 < def.inputs.size(); ++i) {
    if (def.inputs[i].variadic)
      throw ValueError("Registry::add: op '" + def.name + "': only the last input may be variadic");
    if (def.inputs[i].optional && !def.inputs[i + 1].optional) {
      throw ValueError("Registry::add: op '" + def.name + "': optional inputs must come last");
    }
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(def)));
}

const OpDef* Registry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

const OpDef& Registry::get(std::string_view name) const {
  if (const OpDef* def = find(name)) return *def;
  throw UnsupportedOp("no op named '" + std::string(name) + "' is registered");
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  out.reserve(ops_.size());
  for (const auto& [name, def] : ops_) out.push_back(name);
  return out;
}

}  // namespace px
