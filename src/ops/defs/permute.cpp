// permute and transpose: views that reorder dims by reordering strides.

#include <algorithm>

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

// The normalized permutation, or ValueError naming the op and the input.
std::vector<int64_t> checked_permutation(const TensorMeta& input, const std::vector<int64_t>& dims) {
  int64_t rank = input.ndim();
  auto fail = [&] {
    return ValueError("permute: dims " + shape_str(dims) + " are not a permutation of the " + std::to_string(rank) +
                      " dims of " + input.str());
  };
  if (static_cast<int64_t>(dims.size()) != rank) throw fail();
  std::vector<int64_t> out(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < -rank || dims[i] >= rank) throw fail();
    out[i] = dims[i] < 0 ? dims[i] + rank : dims[i];
    if (seen[out[i]]) throw fail();
    seen[out[i]] = true;
  }
  return out;
}

std::vector<TensorMeta> infer_permute(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  std::vector<int64_t> perm = checked_permutation(in[0], attrs.get_ints("dims"));
  Shape shape(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) shape[i] = in[0].shape[perm[i]];
  return {{shape, in[0].dtype}};
}

std::vector<Tensor> permute_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  std::vector<int64_t> perm = checked_permutation(x.meta_info(), attrs.get_ints("dims"));
  Shape shape(perm.size());
  Strides strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    shape[i] = x.shape()[perm[i]];
    strides[i] = x.strides()[perm[i]];
  }
  return {Tensor::alias(x, std::move(shape), std::move(strides), x.offset())};
}

std::vector<Tensor> vjp_permute(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  std::vector<int64_t> perm = checked_permutation(ctx.inputs[0].meta_info(), ctx.attrs.get_ints("dims"));
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return {permute(ctx.grad_outputs[0], inverse)};
}

// Both dims normalized; a scalar accepts 0 and -1 and transposes to itself.
std::pair<int64_t, int64_t> transpose_dims(const TensorMeta& input, const Attrs& attrs) {
  return {normalize_dim(attrs.get_int("dim0"), input.ndim(), "transpose"),
          normalize_dim(attrs.get_int("dim1"), input.ndim(), "transpose")};
}

std::vector<TensorMeta> infer_transpose(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  auto [dim0, dim1] = transpose_dims(in[0], attrs);
  TensorMeta out = in[0];
  if (out.ndim() > 0) std::swap(out.shape[dim0], out.shape[dim1]);
  return {out};
}

std::vector<Tensor> transpose_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  auto [dim0, dim1] = transpose_dims(x.meta_info(), attrs);
  Shape shape = x.shape();
  Strides strides = x.strides();
  if (x.dim() > 0) {
    std::swap(shape[dim0], shape[dim1]);
    std::swap(strides[dim0], strides[dim1]);
  }
  return {Tensor::alias(x, std::move(shape), std::move(strides), x.offset())};
}

// Output dim i holds input dim perm[i]: a Shard follows its dim.
std::vector<ShardingStrategy> permute_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  std::vector<int64_t> perm = checked_permutation(in[0], attrs.get_ints("dims"));
  std::vector<int64_t> map(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) map[perm[i]] = static_cast<int64_t>(i);
  return data_movement_rule(1, 1, map, in[0].dtype);
}

std::vector<ShardingStrategy> transpose_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  std::vector<int64_t> map(in[0].shape.size());
  for (size_t d = 0; d < map.size(); ++d) map[d] = static_cast<int64_t>(d);
  if (!map.empty()) {
    auto [dim0, dim1] = transpose_dims(in[0], attrs);
    std::swap(map[dim0], map[dim1]);
  }
  return data_movement_rule(1, 1, map, in[0].dtype);
}

std::vector<Tensor> vjp_transpose(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  return {transpose(ctx.grad_outputs[0], ctx.attrs.get_int("dim0"), ctx.attrs.get_int("dim1"))};
}

}  // namespace

OpDef def_permute() {
  return {.name = "permute",
          .inputs = {{"x"}},
          .attrs = {{"dims", AttrType::Ints, std::nullopt}},
          .infer = infer_permute,
          .kernel = permute_kernel,
          .vjp = vjp_permute,
          .cost = free_cost,
          .sharding = permute_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

OpDef def_transpose() {
  return {.name = "transpose",
          .inputs = {{"x"}},
          .attrs = {{"dim0", AttrType::Int, std::nullopt}, {"dim1", AttrType::Int, std::nullopt}},
          .infer = infer_transpose,
          .kernel = transpose_kernel,
          .vjp = vjp_transpose,
          .cost = free_cost,
          .sharding = transpose_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

}  // namespace defs

Tensor permute(const Tensor& x, std::vector<int64_t> dims) {
  return call1(op::permute(), {x}, {{"dims", std::move(dims)}});
}
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  return call1(op::transpose(), {x}, {{"dim0", dim0}, {"dim1", dim1}});
}

}  // namespace px
