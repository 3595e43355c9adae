// stack: same-shape inputs joined along a new dim.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

// The normalized new dim, after checking that every input has one shape.
int64_t stack_dim(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  require_same_dtype("stack", in);
  for (const TensorMeta& meta : in) {
    if (meta.shape != in[0].shape) {
      throw ShapeError("stack: inputs " + metas_str(in) + " must all have the same shape");
    }
  }
  return normalize_dim(attrs.get_int("dim"), in[0].ndim() + 1, "stack");
}

std::vector<TensorMeta> infer_stack(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  int64_t dim = stack_dim(in, attrs);
  TensorMeta out = in[0];
  out.shape.insert(out.shape.begin() + dim, static_cast<int64_t>(in.size()));
  return {out};
}

// Same-shape inputs split alike on one dim give the output split on that dim (past the new one).
std::vector<ShardingStrategy> stack_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  int64_t dim = stack_dim(in, attrs);
  std::vector<int64_t> map(in[0].shape.size());
  for (int64_t d = 0; d < in[0].ndim(); ++d) map[d] = d < dim ? d : d + 1;
  return data_movement_rule(in.size(), 1, map, in[0].dtype);
}

std::vector<Tensor> stack_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  std::vector<TensorMeta> metas;
  for (const Tensor& x : in) metas.push_back(x.meta_info());
  int64_t dim = stack_dim(metas, attrs);
  TensorMeta out_meta = infer_stack(metas, attrs)[0];
  Tensor out = Tensor::empty(out_meta.shape, out_meta.dtype);
  Strides part_strides = out.strides();
  part_strides.erase(part_strides.begin() + dim);
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t offset = static_cast<int64_t>(i) * out.strides()[dim];
    copy_into(in[i], Tensor::alias(out, in[i].shape(), part_strides, offset));
  }
  return {out};
}

std::vector<Tensor> vjp_stack(const VjpContext& ctx) {
  std::vector<Tensor> grads(ctx.inputs.size());
  const Tensor& grad = ctx.grad_outputs[0];
  if (!grad.defined()) return grads;
  int64_t dim = normalize_dim(ctx.attrs.get_int("dim"), grad.dim(), "stack");
  for (size_t i = 0; i < ctx.inputs.size(); ++i) grads[i] = select(grad, dim, static_cast<int64_t>(i));
  return grads;
}

}  // namespace

OpDef def_stack() {
  return {.name = "stack",
          .inputs = {{.name = "xs", .optional = false, .variadic = true}},
          .attrs = {{"dim", AttrType::Int, int64_t{0}}},
          .infer = infer_stack,
          .kernel = stack_kernel,
          .vjp = vjp_stack,
          .cost = copy_cost,
          .sharding = stack_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

}  // namespace defs

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) { return call1(op::stack(), xs, {{"dim", dim}}); }

}  // namespace px
