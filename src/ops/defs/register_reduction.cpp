#include "ops/defs/defs.h"
#include "ops/defs/reduce.h"

namespace px::defs {

void register_reduction_ops(Registry& registry) {
  registry.add(def_sum());
  registry.add(def_mean());
  registry.add(def_amax());
  registry.add(def_amin());
  registry.add(def_argmax());
}

}  // namespace px::defs
