#include "ops/defs/defs.h"
#include "ops/defs/shape_defs.h"

namespace px::defs {

void register_shape_ops(Registry& registry) {
  for (OpDef (*def)() :
       {def_view,   def_reshape, def_permute, def_transpose, def_slice,      def_narrow, def_slice_backward,
        def_select, def_expand,  def_squeeze, def_unsqueeze, def_contiguous, def_clone,  def_cast,
        def_cat,    def_stack,   def_split,   def_chunk,     def_triu,       def_tril}) {
    registry.add(def());
  }
}

}  // namespace px::defs
