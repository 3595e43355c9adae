#pragma once
// The shape family's functional API: thin wrappers over the dispatcher, so
// every call traces like any op. The Tensor methods (x.view(...), x.permute(...))
// call the same ops.

#include <cstdint>
#include <vector>

#include "parallax/core/tensor.h"

namespace px {

// --- views: share the input's storage ---
Tensor view(const Tensor& x, Shape shape);     // -1 infers one dim; ShapeError if the strides do not allow a view
Tensor reshape(const Tensor& x, Shape shape);  // a view when the strides allow, else a contiguous copy
Tensor permute(const Tensor& x, std::vector<int64_t> dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
// Python-style x[start:end:step] along `dim` (negative start/end count from the end, out-of-range clamps).
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor expand(const Tensor& x, Shape shape);                      // -1 keeps a dim; size-1 dims broadcast with stride 0
Tensor squeeze(const Tensor& x, std::vector<int64_t> dims = {});  // empty: every size-1 dim
Tensor unsqueeze(const Tensor& x, int64_t dim);
// Views along `dim` whose sizes add up to x.size(dim).
std::vector<Tensor> split(const Tensor& x, std::vector<int64_t> sizes, int64_t dim = 0);
// torch.chunk: up to `chunks` views of ceil(size / chunks) along `dim` (the last may be smaller).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);

// --- copies ---
Tensor contiguous(const Tensor& x);  // x itself when already contiguous
Tensor clone(const Tensor& x);
Tensor cast(const Tensor& x, DType dtype);
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);
// Keeps the elements on and above (triu) or on and below (tril) the `diagonal`-th
// diagonal of the last two dims; zeroes the rest.
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
// Zeros of `shape` with `grad` written into slice(dim, start, end, step): the VJP of slice.
Tensor slice_backward(const Tensor& grad, Shape shape, int64_t dim, int64_t start, int64_t end, int64_t step = 1);

}  // namespace px
