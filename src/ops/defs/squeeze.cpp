// squeeze and unsqueeze: views that remove or insert size-1 dims.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

// Which dims squeeze removes: the size-1 dims among `dims` (all dims when empty).
std::vector<bool> squeezed_dims(const TensorMeta& input, const std::vector<int64_t>& dims) {
  std::vector<bool> chosen(input.shape.size(), dims.empty());
  std::vector<bool> seen(input.shape.size(), false);
  for (int64_t dim : dims) {
    int64_t d = normalize_dim(dim, input.ndim(), "squeeze");
    if (input.ndim() == 0) continue;  // a scalar has no dims to squeeze
    if (seen[d]) throw ValueError("squeeze: dim " + std::to_string(d) + " appears twice in " + shape_str(dims));
    seen[d] = true;
    chosen[d] = true;
  }
  for (size_t d = 0; d < chosen.size(); ++d) chosen[d] = chosen[d] && input.shape[d] == 1;
  return chosen;
}

std::vector<TensorMeta> infer_squeeze(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  std::vector<bool> removed = squeezed_dims(in[0], attrs.get_ints("dims"));
  TensorMeta out{{}, in[0].dtype};
  for (size_t d = 0; d < removed.size(); ++d) {
    if (!removed[d]) out.shape.push_back(in[0].shape[d]);
  }
  return {out};
}

std::vector<Tensor> squeeze_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  std::vector<bool> removed = squeezed_dims(x.meta_info(), attrs.get_ints("dims"));
  Shape shape;
  Strides strides;
  for (size_t d = 0; d < removed.size(); ++d) {
    if (removed[d]) continue;
    shape.push_back(x.shape()[d]);
    strides.push_back(x.strides()[d]);
  }
  return {Tensor::alias(x, std::move(shape), std::move(strides), x.offset())};
}

int64_t unsqueeze_dim(const TensorMeta& input, const Attrs& attrs) {
  return normalize_dim(attrs.get_int("dim"), input.ndim() + 1, "unsqueeze");
}

// Kept dims move down past the removed ones; a removed dim has size 1 and carries no Shard.
std::vector<ShardingStrategy> squeeze_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  std::vector<bool> removed = squeezed_dims(in[0], attrs.get_ints("dims"));
  std::vector<int64_t> map(removed.size(), -1);
  int64_t next = 0;
  for (size_t d = 0; d < removed.size(); ++d) {
    if (!removed[d]) map[d] = next++;
  }
  return data_movement_rule(1, 1, map, in[0].dtype);
}

// A sharded dim can be locally of size 1 (or become so on an uneven split), and squeeze
// would drop it there: name exactly the globally removed dims instead. When none is removed,
// name a dim whose local size is not 1 (squeeze then removes nothing); with no such dim the
// attributes stay, and the strategy check rejects the coordinate if they misbehave.
Attrs localize_squeeze(const Attrs& attrs, const LocalContext& ctx) {
  std::vector<bool> removed = squeezed_dims(ctx.global_inputs[0], attrs.get_ints("dims"));
  std::vector<int64_t> dims;
  for (size_t d = 0; d < removed.size(); ++d) {
    if (removed[d]) dims.push_back(static_cast<int64_t>(d));
  }
  const Shape& local_shape = ctx.local_inputs[0].shape;
  for (size_t d = 0; dims.empty() && d < local_shape.size(); ++d) {
    if (local_shape[d] != 1) dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return attrs;
  Attrs local = attrs;
  local.set("dims", dims);
  return local;
}

// Input dims at or after the new one move up by one.
std::vector<ShardingStrategy> unsqueeze_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  int64_t dim = unsqueeze_dim(in[0], attrs);
  std::vector<int64_t> map(in[0].shape.size());
  for (int64_t d = 0; d < in[0].ndim(); ++d) map[d] = d < dim ? d : d + 1;
  return data_movement_rule(1, 1, map, in[0].dtype);
}

std::vector<Tensor> vjp_reshape_to_input(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  return {reshape(ctx.grad_outputs[0], ctx.inputs[0].shape())};
}

std::vector<TensorMeta> infer_unsqueeze(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  TensorMeta out = in[0];
  out.shape.insert(out.shape.begin() + unsqueeze_dim(in[0], attrs), 1);
  return {out};
}

std::vector<Tensor> unsqueeze_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  int64_t dim = unsqueeze_dim(x.meta_info(), attrs);
  Shape shape = x.shape();
  Strides strides = x.strides();
  // Any stride is valid for a size-1 dim; this one keeps contiguous inputs contiguous.
  int64_t stride = dim >= x.dim() ? 1 : shape[dim] * strides[dim];
  shape.insert(shape.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return {Tensor::alias(x, std::move(shape), std::move(strides), x.offset())};
}

}  // namespace

OpDef def_squeeze() {
  return {.name = "squeeze",
          .inputs = {{"x"}},
          .attrs = {{"dims", AttrType::Ints, std::vector<int64_t>{}}},
          .infer = infer_squeeze,
          .kernel = squeeze_kernel,
          .vjp = vjp_reshape_to_input,
          .cost = free_cost,
          .sharding = squeeze_rule,
          .localize_attrs = localize_squeeze,
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

OpDef def_unsqueeze() {
  return {.name = "unsqueeze",
          .inputs = {{"x"}},
          .attrs = {{"dim", AttrType::Int, std::nullopt}},
          .infer = infer_unsqueeze,
          .kernel = unsqueeze_kernel,
          .vjp = vjp_reshape_to_input,
          .cost = free_cost,
          .sharding = unsqueeze_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

}  // namespace defs

Tensor squeeze(const Tensor& x, std::vector<int64_t> dims) {
  return call1(op::squeeze(), {x}, {{"dims", std::move(dims)}});
}
Tensor unsqueeze(const Tensor& x, int64_t dim) { return call1(op::unsqueeze(), {x}, {{"dim", dim}}); }

}  // namespace px
