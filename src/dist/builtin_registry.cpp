// The built-in registry is assembled here, in the top layer that defines ops, so that the ops
// layer (which declares it) includes nothing from the layers above it.

#include "parallax/dist/comm_ops.h"
#include "parallax/ops/registry.h"

namespace px {

void register_builtin_ops(Registry& registry) {
  register_tensor_ops(registry);
  dist::register_collective_ops(registry);
}

const Registry& builtin_registry() {
  // Built once, thread-safely, on first use; never modified afterwards.
  static const Registry registry = [] {
    Registry built;
    register_builtin_ops(built);
    return built;
  }();
  return registry;
}

}  // namespace px
