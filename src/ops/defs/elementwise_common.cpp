#include "ops/defs/common.h"
#include "ops/defs/elementwise.h"
#include "parallax/kernels/strided_iter.h"
#include "parallax/ops/op_handles.h"

namespace px::defs {

void require_dtype_in(std::string_view op, const TensorMeta& meta, std::span<const DType> allowed) {
  for (DType dtype : allowed) {
    if (meta.dtype == dtype) return;
  }
  std::string names;
  for (size_t i = 0; i < allowed.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + std::string(dtype_name(allowed[i]));
  }
  throw DTypeError(std::string(op) + ": expects " + names + " tensors, got " + meta.str());
}

Strides broadcast_strides_of(const Tensor& tensor, const Shape& out_shape) {
  return kernels::broadcast_strides(tensor.shape(), tensor.strides(), out_shape);
}

Tensor input_grad(const Tensor& input, const Tensor& grad) {
  if (!is_floating(input.dtype())) return {};
  return sum_to_shape(grad, input.shape());
}

Tensor scalar_tensor(double value, DType dtype) {
  return call1(op::full(), {}, {{"shape", std::vector<int64_t>{}}, {"value", value}, {"dtype", dtype}});
}

VjpFn single_input_vjp(std::function<Tensor(const Tensor& grad, const VjpContext& ctx)> grad_fn) {
  return [grad_fn = std::move(grad_fn)](const VjpContext& ctx) -> std::vector<Tensor> {
    const Tensor& grad = ctx.grad_outputs[0];
    if (!grad.defined() || !is_floating(ctx.inputs[0].dtype())) return {Tensor()};
    return {grad_fn(grad, ctx)};
  };
}

CostFn flops_per_element(double flops) {
  return [flops](const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
    return elementwise_cost(inputs, outputs, flops);
  };
}

}  // namespace px::defs
