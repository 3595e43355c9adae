#include "ops/defs/defs.h"

namespace px::defs {

void register_factory_ops(Registry& registry) { (void)registry; }

}  // namespace px::defs
