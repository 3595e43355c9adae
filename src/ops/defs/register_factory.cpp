#include "ops/defs/defs.h"
#include "ops/defs/factory_defs.h"

namespace px::defs {

void register_factory_ops(Registry& registry) {
  for (OpDef (*def)() : {def_full, def_arange, def_uniform, def_normal}) registry.add(def());
}

}  // namespace px::defs
