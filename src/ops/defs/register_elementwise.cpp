#include "ops/defs/defs.h"
#include "ops/defs/elementwise.h"

namespace px::defs {

void register_elementwise_ops(Registry& registry) {
  for (OpDef (*def)() : {
           def_add,        def_sub,         def_mul,        def_div,         def_maximum,
           def_minimum,    def_add_scalar,  def_sub_scalar, def_rsub_scalar, def_mul_scalar,
           def_div_scalar, def_rdiv_scalar, def_pow,        def_neg,         def_abs,
           def_exp,        def_log,         def_sqrt,       def_rsqrt,       def_tanh,
           def_sigmoid,    def_relu,        def_silu,       def_gelu,        def_gelu_backward,
           def_eq,         def_ne,          def_lt,         def_le,          def_gt,
           def_ge,         def_where,
       }) {
    registry.add(def());
  }
}

}  // namespace px::defs
