#pragma once
// Fused scaled dot-product attention on contiguous [batch, T, D] buffers, forward and backward,
// tiled by blocks of queries: each block's scores S = scale · Q Kᵀ and probabilities
// P = softmax(S) live in a [block, Tk] scratch only (never a [Tq, Tk] matrix per batch entry),
// and the backward recomputes them per block instead of keeping them from the forward, as
// FlashAttention does. GEMMs go to OpenBLAS with transposes as flags (kernels/gemm.h).
//
// Causal: query i (numbered from `first_query`, so a rank holding a block of the queries numbers
// them globally) sees keys j <= i; a block stops at the last key any of its queries sees.
// Instantiated for float and double (bfloat16 callers use the composed ops).

#include <cstdint>

namespace px::kernels {

struct AttentionShape {
  int64_t batch = 1;  // batch entries (heads included), each with its own q, k, v
  int64_t tq = 0;
  int64_t tk = 0;
  int64_t d = 0;   // q and k head dim
  int64_t dv = 0;  // v head dim
  double scale = 1;
  bool causal = false;
  int64_t first_query = 0;
};

// Scores (query-key products) the kernels compute per batch entry: each block of queries times
// the keys it sees, so under a causal mask a block's hidden scores count too (at tq = tk = 128,
// 1.5 times the tq·(tq + 1)/2 a query-by-query count gives). What the op's cost facet prices.
int64_t attention_scores(const AttentionShape& shape);

// out [batch, tq, dv] = softmax(scale · q kᵀ [masked]) v.
template <class T>
void attention_forward(const T* q, const T* k, const T* v, T* out, const AttentionShape& shape);

// With P as above and g = dL/dout [batch, tq, dv]: dv = Pᵀ g, dS = P ∘ (g vᵀ − rowsum(P ∘ g vᵀ)) · scale,
// dq = dS k, dk = dSᵀ q. dq, dk and dv are overwritten.
template <class T>
void attention_backward(const T* q, const T* k, const T* v, const T* g, T* dq, T* dk, T* dv,
                        const AttentionShape& shape);

extern template void attention_forward<float>(const float*, const float*, const float*, float*, const AttentionShape&);
extern template void attention_forward<double>(const double*, const double*, const double*, double*,
                                               const AttentionShape&);
extern template void attention_backward<float>(const float*, const float*, const float*, const float*, float*, float*,
                                               float*, const AttentionShape&);
extern template void attention_backward<double>(const double*, const double*, const double*, const double*, double*,
                                                double*, double*, const AttentionShape&);

}  // namespace px::kernels
