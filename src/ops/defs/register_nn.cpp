#include "ops/defs/defs.h"

namespace px::defs {

void register_nn_ops(Registry& registry) { (void)registry; }

}  // namespace px::defs
