#pragma once
// The op registry: a name -> OpDef table, filled from an explicit list at
// construction and read-only afterwards.

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/ops/op_def.h"

namespace px {

class Registry {
 public:
  Registry() = default;
  // Adds an op; throws ValueError if the name is taken or a required facet is missing.
  void add(OpDef def);
  // nullptr when absent.
  const OpDef* find(std::string_view name) const;
  // Throws UnsupportedOp naming the op when absent.
  const OpDef& get(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted
  size_t size() const { return ops_.size(); }

 private:
  // unique_ptr: OpDef addresses stay valid as the map grows (graph nodes hold them).
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

// Fills `registry` with the ops this layer defines: every tensor op (src/ops/defs/).
void register_tensor_ops(Registry& registry);

// Fills `registry` with every built-in op: the tensor ops and the collectives, which the dist
// layer defines because their kernels need process groups. Both this and builtin_registry() are
// defined there (src/dist/builtin_registry.cpp), the top layer that defines ops, so that this
// layer includes nothing from the layers above it.
void register_builtin_ops(Registry& registry);

// The built-in ops, built once on first use and immutable afterwards.
const Registry& builtin_registry();

}  // namespace px
