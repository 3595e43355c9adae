// view and reshape: the same elements under a new shape. view never copies
// (ShapeError when the strides do not allow it); reshape copies only then.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

Shape infer_view_shape(std::string_view op, const TensorMeta& input, const Shape& shape) {
  Shape out = shape;
  int64_t known = 1;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && !inferred) {
      inferred = i;
    } else if (out[i] < 0) {
      throw ShapeError(std::string(op) + ": invalid shape " + shape_str(shape) + " for input " + input.str() +
                       " (only one -1 is allowed and extents must be >= 0)");
    } else {
      known *= out[i];
    }
  }
  int64_t count = input.numel();
  if (inferred) {
    if (known == 0 || count % known != 0) {
      throw ShapeError(std::string(op) + ": shape " + shape_str(shape) + " is invalid for input " + input.str() + " (" +
                       std::to_string(count) + " elements)");
    }
    out[*inferred] = count / known;
  } else if (known != count) {
    throw ShapeError(std::string(op) + ": shape " + shape_str(shape) + " is invalid for input " + input.str() + " (" +
                     std::to_string(count) + " elements, the shape holds " + std::to_string(known) + ")");
  }
  return out;
}

std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides, const Shape& new_shape) {
  if (numel(old_shape) == 0) {
    if (old_shape == new_shape) return old_strides;
    return contiguous_strides(new_shape);
  }
  if (old_shape.empty()) return contiguous_strides(new_shape);  // a scalar viewed as [1,1,...]
  // Walk the old dims from the inside out in "chunks" of dims that are contiguous
  // with each other; each chunk must be covered exactly by consecutive new dims.
  Strides out(new_shape.size());
  auto view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (auto tensor_d = static_cast<int64_t>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    bool chunk_ends = tensor_d == 0 ||
                      (old_shape[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

namespace {

std::vector<TensorMeta> infer_view(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return {{infer_view_shape("view", in[0], attrs.get_ints("shape")), in[0].dtype}};
}

std::vector<TensorMeta> infer_reshape(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return {{infer_view_shape("reshape", in[0], attrs.get_ints("shape")), in[0].dtype}};
}

std::vector<Tensor> view_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  Shape shape = infer_view_shape("view", x.meta_info(), attrs.get_ints("shape"));
  std::optional<Strides> strides = view_strides(x.shape(), x.strides(), shape);
  if (!strides) {
    throw ShapeError("view: cannot view " + x.meta_info().str() + " with strides " + shape_str(x.strides()) + " as " +
                     shape_str(shape) +
                     ": its strides do not allow it without a copy; use reshape (or contiguous first)");
  }
  return {Tensor::alias(x, std::move(shape), std::move(*strides), x.offset())};
}

std::vector<Tensor> reshape_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  Shape shape = infer_view_shape("reshape", x.meta_info(), attrs.get_ints("shape"));
  if (std::optional<Strides> strides = view_strides(x.shape(), x.strides(), shape)) {
    return {Tensor::alias(x, std::move(shape), std::move(*strides), x.offset())};
  }
  Tensor copy = contiguous_copy(x, x.dtype());
  Strides strides = contiguous_strides(shape);
  return {Tensor::alias(copy, std::move(shape), std::move(strides), 0)};
}

// A Shard moves to the output dim its group of elements starts (view_dim_map); the
// local op then needs the local output shape, since -1 and fixed extents are global.
ShardingRuleFn view_rule(std::string_view op) {
  return [op](const std::vector<TensorMeta>& in, const Attrs& attrs) {
    Shape out = infer_view_shape(op, in[0], attrs.get_ints("shape"));
    return data_movement_rule(1, 1, view_dim_map(in[0].shape, out), in[0].dtype);
  };
}

Attrs localize_view(const Attrs& attrs, const LocalContext& ctx) {
  Attrs local = attrs;
  local.set("shape", ctx.local_outputs[0].shape);
  return local;
}

std::vector<Tensor> vjp_reshape_back(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  return {reshape(ctx.grad_outputs[0], ctx.inputs[0].shape())};
}

}  // namespace

OpDef def_view() {
  return {.name = "view",
          .inputs = {{"x"}},
          .attrs = {{"shape", AttrType::Ints, std::nullopt}},
          .infer = infer_view,
          .kernel = view_kernel,
          .vjp = vjp_reshape_back,
          .cost = free_cost,
          .sharding = view_rule("view"),
          .localize_attrs = localize_view,
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

OpDef def_reshape() {
  return {.name = "reshape",
          .inputs = {{"x"}},
          .attrs = {{"shape", AttrType::Ints, std::nullopt}},
          .infer = infer_reshape,
          .kernel = reshape_kernel,
          .vjp = vjp_reshape_back,
          // Free in a graph, where values are contiguous; a copy only on odd strides.
          .cost = free_cost,
          .sharding = view_rule("reshape"),
          .localize_attrs = localize_view,
          .local = {},
          // Not a guaranteed alias: it copies when the strides do not allow a view.
          .traits = {}};
}

}  // namespace defs

Tensor view(const Tensor& x, Shape shape) { return call1(op::view(), {x}, {{"shape", std::move(shape)}}); }
Tensor reshape(const Tensor& x, Shape shape) { return call1(op::reshape(), {x}, {{"shape", std::move(shape)}}); }

}  // namespace px
