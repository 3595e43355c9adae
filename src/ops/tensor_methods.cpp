// The Tensor methods that make new tensors are ops: each goes through the
// dispatcher (via the functional API), so it traces, runs on meta tensors, and
// checks its arguments like any op call.

#include "parallax/core/tensor.h"
#include "parallax/ops/shape.h"

namespace px {

Tensor Tensor::view(Shape shape) const { return px::view(*this, std::move(shape)); }
Tensor Tensor::reshape(Shape shape) const { return px::reshape(*this, std::move(shape)); }
Tensor Tensor::permute(std::vector<int64_t> dims) const { return px::permute(*this, std::move(dims)); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return px::transpose(*this, dim0, dim1); }
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return px::slice(*this, dim, start, end, step);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return px::narrow(*this, dim, start, length);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return px::select(*this, dim, index); }
Tensor Tensor::expand(Shape shape) const { return px::expand(*this, std::move(shape)); }
Tensor Tensor::squeeze() const { return px::squeeze(*this, {}); }
Tensor Tensor::squeeze(int64_t dim) const { return px::squeeze(*this, {dim}); }
Tensor Tensor::unsqueeze(int64_t dim) const { return px::unsqueeze(*this, dim); }
Tensor Tensor::contiguous() const { return px::contiguous(*this); }
Tensor Tensor::clone() const { return px::clone(*this); }
// Like torch: converting to the dtype it already has returns the tensor itself.
Tensor Tensor::to(DType dtype) const { return dtype == this->dtype() ? *this : px::cast(*this, dtype); }

}  // namespace px
