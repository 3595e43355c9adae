// select: the view at one index of a dim, with that dim removed.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

struct SelectArgs {
  int64_t dim;
  int64_t index;  // non-negative
};

SelectArgs select_args(const TensorMeta& input, const Attrs& attrs) {
  require_rank_at_least("select", input, 1);
  int64_t dim = normalize_dim(attrs.get_int("dim"), input.ndim(), "select");
  int64_t size = input.shape[dim];
  int64_t index = attrs.get_int("index");
  if (index < -size || index >= size) {
    throw ValueError("select: index " + std::to_string(index) + " is out of range for dim " + std::to_string(dim) +
                     " (size " + std::to_string(size) + ") of " + input.str());
  }
  return {dim, index < 0 ? index + size : index};
}

std::vector<TensorMeta> infer_select(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  auto [dim, index] = select_args(in[0], attrs);
  TensorMeta out = in[0];
  out.shape.erase(out.shape.begin() + dim);
  return {out};
}

std::vector<Tensor> select_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  auto [dim, index] = select_args(x.meta_info(), attrs);
  Shape shape = x.shape();
  Strides strides = x.strides();
  int64_t offset = x.offset() + index * strides[dim];
  shape.erase(shape.begin() + dim);
  strides.erase(strides.begin() + dim);
  return {Tensor::alias(x, std::move(shape), std::move(strides), offset)};
}

// The selected dim must be whole; the dims after it move down by one.
std::vector<ShardingStrategy> select_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  int64_t dim = select_args(in[0], attrs).dim;
  std::vector<int64_t> map(in[0].shape.size());
  for (int64_t d = 0; d < in[0].ndim(); ++d) map[d] = d < dim ? d : d == dim ? -1 : d - 1;
  return data_movement_rule(1, 1, map, in[0].dtype);
}

std::vector<Tensor> vjp_select(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  auto [dim, index] = select_args(ctx.inputs[0].meta_info(), ctx.attrs);
  Tensor grad = unsqueeze(ctx.grad_outputs[0], dim);
  return {slice_backward(grad, ctx.inputs[0].shape(), dim, index, index + 1)};
}

}  // namespace

OpDef def_select() {
  return {.name = "select",
          .inputs = {{"x"}},
          .attrs = {{"dim", AttrType::Int, std::nullopt}, {"index", AttrType::Int, std::nullopt}},
          .infer = infer_select,
          .kernel = select_kernel,
          .vjp = vjp_select,
          .cost = free_cost,
          .sharding = select_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

}  // namespace defs

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  return call1(op::select(), {x}, {{"dim", dim}, {"index", index}});
}

}  // namespace px
