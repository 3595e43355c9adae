#include "ops/defs/defs.h"
#include "ops/defs/nn_defs.h"

namespace px::defs {

void register_nn_ops(Registry& registry) {
  registry.add(def_softmax());
  registry.add(def_log_softmax());
  registry.add(def_softmax_backward());
  registry.add(def_log_softmax_backward());
  registry.add(def_layer_norm());
  registry.add(def_layer_norm_backward());
  registry.add(def_rms_norm());
  registry.add(def_rms_norm_backward());
  registry.add(def_embedding());
  registry.add(def_embedding_backward());
  registry.add(def_one_hot());
  registry.add(def_nll_loss());
  registry.add(def_cross_entropy());
  registry.add(def_scaled_dot_product_attention());
  registry.add(def_scaled_dot_product_attention_backward());
  registry.add(def_rope());
  registry.add(def_dropout());
}

}  // namespace px::defs
