#pragma once
// Private: the NN family's op definitions (one file per topic: softmax.cpp,
// norm.cpp, embedding.cpp, loss.cpp, attention.cpp, rope.cpp, dropout.cpp) and
// the small helpers their kernels and VJPs share.

#include <cstdint>
#include <string_view>
#include <vector>

#include "ops/defs/common.h"

namespace px::defs {

OpDef def_softmax();
OpDef def_log_softmax();
OpDef def_softmax_backward();
OpDef def_log_softmax_backward();
OpDef def_layer_norm();
OpDef def_layer_norm_backward();
OpDef def_rms_norm();
OpDef def_rms_norm_backward();
OpDef def_embedding();
OpDef def_embedding_backward();
OpDef def_one_hot();
OpDef def_nll_loss();
OpDef def_cross_entropy();
OpDef def_scaled_dot_product_attention();
OpDef def_scaled_dot_product_attention_backward();
OpDef def_rope();
OpDef def_dropout();

// Calls fn(T{}) with T the storage type of a floating dtype (inference has already rejected the others).
template <class Fn>
void visit_floating(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      fn(float{});
      return;
    case DType::Float64:
      fn(double{});
      return;
    case DType::BFloat16:
      fn(BFloat16{});
      return;
    case DType::Int64:
    case DType::Bool:
      break;
  }
  PX_ASSERT(false && "a floating dtype was checked by shape inference");
}

// `tensor` itself when its elements are laid out row-major, else a contiguous copy.
inline Tensor contiguous_input(const Tensor& tensor) { return tensor.is_contiguous() ? tensor : tensor.contiguous(); }

// "x f32[4,8]": how errors name an input.
inline std::string named(std::string_view name, const TensorMeta& meta) { return std::string(name) + " " + meta.str(); }

// The checks every fused backward starts with: `of` (named `of_name`) is floating, all inputs share
// its dtype, and the incoming gradient (inputs[0]) has its shape. `of_role` ends the shape error.
inline void require_gradient_of(std::string_view op, const std::vector<TensorMeta>& inputs, const TensorMeta& of,
                                std::string_view of_name, std::string_view of_role = "") {
  require_floating(op, of);
  require_same_dtype(op, inputs);
  if (inputs[0].shape != of.shape) {
    throw ShapeError(std::string(op) + ": " + named("grad", inputs[0]) + " must have the shape of " +
                     named(of_name, of) + std::string(of_role));
  }
}

}  // namespace px::defs
