#include "ops/defs/defs.h"

namespace px::defs {

void register_elementwise_ops(Registry& registry) { (void)registry; }

}  // namespace px::defs
