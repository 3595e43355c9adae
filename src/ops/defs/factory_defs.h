#pragma once
// Private: the factory family's op definitions (factory.cpp). Factories take no
// tensor inputs and are not differentiable.

#include "ops/defs/common.h"

namespace px::defs {

OpDef def_full();
OpDef def_arange();
OpDef def_uniform();
OpDef def_normal();

}  // namespace px::defs
