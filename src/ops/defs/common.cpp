#include "ops/defs/common.h"

#include <numeric>

#include "parallax/ops/op_handles.h"

namespace px::defs {

Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.shape()[d] != 1)) dims.push_back(d);
  }
  Tensor summed = dims.empty() ? grad : call1(op::sum(), {grad}, {{"dims", dims}, {"keepdim", true}});
  return call1(op::reshape(), {summed}, {{"shape", shape}});
}

void require_same_dtype(std::string_view op, const std::vector<TensorMeta>& metas) {
  for (const TensorMeta& meta : metas) {
    if (meta.dtype != metas.front().dtype) {
      std::string listed;
      for (size_t i = 0; i < metas.size(); ++i) listed += (i ? ", " : "") + metas[i].str();
      throw DTypeError(std::string(op) + ": inputs must share one dtype, got " + listed +
                       " (convert with .to(dtype) first)");
    }
  }
}

void require_floating(std::string_view op, const TensorMeta& meta) {
  if (!is_floating(meta.dtype)) {
    throw DTypeError(std::string(op) + ": expects a floating-point tensor, got " + meta.str());
  }
}

OpCost elementwise_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                        double flops_per_element) {
  OpCost cost;
  for (const TensorMeta& input : inputs) cost.bytes_read += static_cast<double>(input.nbytes());
  for (const TensorMeta& output : outputs) {
    cost.bytes_written += static_cast<double>(output.nbytes());
    cost.flops += flops_per_element * static_cast<double>(output.numel());
  }
  return cost;
}

OpCost free_cost(const std::vector<TensorMeta>&, const std::vector<TensorMeta>&, const Attrs&) { return {}; }

}  // namespace px::defs
