#include "ops/defs/defs.h"
#include "ops/defs/matmul.h"

namespace px::defs {

void register_linalg_ops(Registry& registry) {
  registry.add(def_matmul());
  registry.add(def_linear());
}

}  // namespace px::defs
