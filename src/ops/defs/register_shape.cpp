#include "ops/defs/defs.h"

namespace px::defs {

void register_shape_ops(Registry& registry) { (void)registry; }

}  // namespace px::defs
