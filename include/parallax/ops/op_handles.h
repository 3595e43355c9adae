#pragma once
// Typed handles to the built-in ops: code that calls an op by name writes `call1(op::matmul(), ...)`,
// so a misspelt op is a compile error, and each handle resolves its OpDef once (the registry is
// built once and never changes). PX_BUILTIN_OPS lists every built-in op; the test
// OpHandles.CoverTheRegistryExactly checks the list against builtin_registry() both ways, so an
// op added to the registry without a handle fails at test time, not at a user's call.

#include <string_view>

#include "parallax/ops/registry.h"

// X(name) for every built-in op, in name order.
#define PX_BUILTIN_OPS(X)                  \
  X(abs)                                   \
  X(add)                                   \
  X(add_scalar)                            \
  X(all_gather)                            \
  X(all_reduce)                            \
  X(all_to_all)                            \
  X(amax)                                  \
  X(amin)                                  \
  X(arange)                                \
  X(argmax)                                \
  X(cast)                                  \
  X(cat)                                   \
  X(chunk)                                 \
  X(clone)                                 \
  X(contiguous)                            \
  X(cross_entropy)                         \
  X(div)                                   \
  X(div_scalar)                            \
  X(dropout)                               \
  X(embedding)                             \
  X(embedding_backward)                    \
  X(eq)                                    \
  X(exp)                                   \
  X(expand)                                \
  X(full)                                  \
  X(ge)                                    \
  X(gelu)                                  \
  X(gelu_backward)                         \
  X(gt)                                    \
  X(layer_norm)                            \
  X(layer_norm_backward)                   \
  X(le)                                    \
  X(linear)                                \
  X(log)                                   \
  X(log_softmax)                           \
  X(log_softmax_backward)                  \
  X(lt)                                    \
  X(matmul)                                \
  X(maximum)                               \
  X(mean)                                  \
  X(minimum)                               \
  X(mul)                                   \
  X(mul_scalar)                            \
  X(narrow)                                \
  X(ne)                                    \
  X(neg)                                   \
  X(nll_loss)                              \
  X(normal)                                \
  X(one_hot)                               \
  X(permute)                               \
  X(pow)                                   \
  X(rdiv_scalar)                           \
  X(reduce_scatter)                        \
  X(relu)                                  \
  X(reshape)                               \
  X(rms_norm)                              \
  X(rms_norm_backward)                     \
  X(rope)                                  \
  X(rsqrt)                                 \
  X(rsub_scalar)                           \
  X(scaled_dot_product_attention)          \
  X(scaled_dot_product_attention_backward) \
  X(select)                                \
  X(sigmoid)                               \
  X(silu)                                  \
  X(slice)                                 \
  X(slice_backward)                        \
  X(softmax)                               \
  X(softmax_backward)                      \
  X(split)                                 \
  X(sqrt)                                  \
  X(squeeze)                               \
  X(stack)                                 \
  X(sub)                                   \
  X(sub_scalar)                            \
  X(sum)                                   \
  X(tanh)                                  \
  X(transpose)                             \
  X(tril)                                  \
  X(triu)                                  \
  X(uniform)                               \
  X(unsqueeze)                             \
  X(view)                                  \
  X(where)

namespace px::op {

#define PX_OP_HANDLE(name)                                   \
  inline const OpDef& name() {                               \
    static const OpDef& def = builtin_registry().get(#name); \
    return def;                                              \
  }
PX_BUILTIN_OPS(PX_OP_HANDLE)
#undef PX_OP_HANDLE

// Every handle's name, for the coverage test.
#define PX_OP_NAME(name) std::string_view(#name),
inline constexpr std::string_view kBuiltinOpNames[] = {PX_BUILTIN_OPS(PX_OP_NAME)};
#undef PX_OP_NAME

}  // namespace px::op
