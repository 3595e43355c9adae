#include "ops/defs/defs.h"

namespace px {

void register_tensor_ops(Registry& registry) {
  defs::register_elementwise_ops(registry);
  defs::register_reduction_ops(registry);
  defs::register_linalg_ops(registry);
  defs::register_nn_ops(registry);
  defs::register_shape_ops(registry);
  defs::register_factory_ops(registry);
}

}  // namespace px
