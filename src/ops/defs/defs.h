#pragma once
// Private: one registration function per op family, called from builtin.cpp.

#include "parallax/ops/registry.h"

namespace px::defs {

void register_elementwise_ops(Registry& registry);  // elementwise.cpp, compare.cpp, ...
void register_reduction_ops(Registry& registry);
void register_linalg_ops(Registry& registry);
void register_nn_ops(Registry& registry);
void register_shape_ops(Registry& registry);
void register_factory_ops(Registry& registry);

}  // namespace px::defs
