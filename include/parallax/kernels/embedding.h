#pragma once
// Index kernels: row gather (embedding), its dense scatter-add backward, and
// one-hot encoding. Buffers are contiguous. An index outside its range throws
// ValueError naming the op, the index, its position and the valid range.

#include <cstdint>

namespace px::kernels {

// out[i, :] = weight[indices[i], :] for weight [vocab, dim].
// Instantiated for float, double, BFloat16, int64_t and bool.
template <class T>
void embedding(const T* weight, int64_t vocab, int64_t dim, const int64_t* indices, int64_t count, T* out);

// out[indices[i], :] += grad[i, :] for out [vocab, dim], which the caller zero-fills; repeated indices
// accumulate (in float32 for BFloat16). Instantiated for float, double and BFloat16.
template <class T>
void embedding_backward(const T* grad, const int64_t* indices, int64_t count, int64_t dim, int64_t vocab, T* out);

// out[i, indices[i]] = 1 for out [count, classes], which the caller zero-fills.
// Instantiated for float, double, BFloat16, int64_t and bool.
template <class T>
void one_hot(const int64_t* indices, int64_t count, int64_t classes, T* out);

}  // namespace px::kernels
