// slice and narrow (strided views along one dim) and slice_backward, their VJP:
// zeros with the gradient written into the sliced region.

#include <algorithm>

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/kernels/factory.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

SliceRange resolve_slice(std::string_view op, int64_t size, int64_t start, int64_t end, int64_t step) {
  if (step <= 0) throw ValueError(std::string(op) + ": step must be positive, got " + std::to_string(step));
  auto clamp_index = [size](int64_t index) {
    if (index < 0) index += size;  // no overflow: size >= 0
    return std::clamp<int64_t>(index, 0, size);
  };
  start = clamp_index(start);
  end = clamp_index(end);
  // (end - start - 1) / step + 1 rather than a ceil-div that could overflow for a huge step.
  int64_t length = end > start ? (end - start - 1) / step + 1 : 0;
  return {start, length, step};
}

namespace {

struct SliceArgs {
  int64_t dim;
  SliceRange range;
};

SliceArgs slice_args(std::string_view op, const Shape& shape, const Attrs& attrs) {
  require_rank_at_least(op, TensorMeta{shape, DType::Float32}, 1);
  int64_t dim = normalize_dim(attrs.get_int("dim"), static_cast<int64_t>(shape.size()), op);
  return {dim, resolve_slice(op, shape[dim], attrs.get_int("start"), attrs.get_int("end"), attrs.get_int("step"))};
}

// The strided view of `base` that a slice selects.
Tensor slice_view(const Tensor& base, int64_t dim, const SliceRange& range) {
  Shape shape = base.shape();
  Strides strides = base.strides();
  int64_t offset = base.offset() + range.start * strides[dim];
  shape[dim] = range.length;
  // With two or more elements step < size, so this stays inside the storage; a
  // single element keeps its stride (any is valid) so a huge step cannot overflow.
  if (range.length > 1) strides[dim] *= range.step;
  return Tensor::alias(base, std::move(shape), std::move(strides), offset);
}

std::vector<TensorMeta> infer_slice(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  auto [dim, range] = slice_args("slice", in[0].shape, attrs);
  TensorMeta out = in[0];
  out.shape[dim] = range.length;
  return {out};
}

std::vector<Tensor> slice_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  auto [dim, range] = slice_args("slice", in[0].shape(), attrs);
  return {slice_view(in[0], dim, range)};
}

std::vector<Tensor> vjp_slice(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  return {slice_backward(ctx.grad_outputs[0], ctx.inputs[0].shape(), ctx.attrs.get_int("dim"),
                         ctx.attrs.get_int("start"), ctx.attrs.get_int("end"), ctx.attrs.get_int("step"))};
}

// narrow's start (made non-negative) after checking that [start, start + length) fits.
SliceArgs narrow_args(const TensorMeta& input, const Attrs& attrs) {
  require_rank_at_least("narrow", input, 1);
  int64_t dim = normalize_dim(attrs.get_int("dim"), input.ndim(), "narrow");
  int64_t size = input.shape[dim];
  int64_t start = attrs.get_int("start");
  int64_t length = attrs.get_int("length");
  if (start < 0) start += size;
  if (start < 0 || start > size || length < 0 || length > size - start) {
    throw ValueError("narrow: start " + std::to_string(attrs.get_int("start")) + " and length " +
                     std::to_string(length) + " are out of range for dim " + std::to_string(dim) + " (size " +
                     std::to_string(size) + ") of " + input.str());
  }
  return {dim, {start, length, 1}};
}

std::vector<TensorMeta> infer_narrow(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  auto [dim, range] = narrow_args(in[0], attrs);
  TensorMeta out = in[0];
  out.shape[dim] = range.length;
  return {out};
}

std::vector<Tensor> narrow_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  auto [dim, range] = narrow_args(in[0].meta_info(), attrs);
  return {slice_view(in[0], dim, range)};
}

std::vector<Tensor> vjp_narrow(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  auto [dim, range] = narrow_args(ctx.inputs[0].meta_info(), ctx.attrs);
  return {slice_backward(ctx.grad_outputs[0], ctx.inputs[0].shape(), dim, range.start, range.start + range.length)};
}

std::vector<TensorMeta> infer_slice_backward(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  for (int64_t extent : shape) {
    if (extent < 0) throw ShapeError("slice_backward: negative extent in shape " + shape_str(shape));
  }
  auto [dim, range] = slice_args("slice_backward", shape, attrs);
  Shape expected = shape;
  expected[dim] = range.length;
  if (in[0].shape != expected) {
    throw ShapeError("slice_backward: grad " + in[0].str() + " does not match the slice " + shape_str(expected) +
                     " of shape " + shape_str(shape) + " (dim " + std::to_string(dim) + ")");
  }
  return {{shape, in[0].dtype}};
}

std::vector<Tensor> slice_backward_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  auto [dim, range] = slice_args("slice_backward", shape, attrs);
  Tensor out = Tensor::empty(shape, in[0].dtype());
  kernels::fill(out.raw_data(), out.dtype(), out.numel(), 0.0);
  copy_into(in[0], slice_view(out, dim, range));
  return {out};
}

std::vector<Tensor> vjp_slice_backward(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  return {slice(ctx.grad_outputs[0], ctx.attrs.get_int("dim"), ctx.attrs.get_int("start"), ctx.attrs.get_int("end"),
                ctx.attrs.get_int("step"))};
}

// Every dim but the sliced one keeps its Shard; the sliced one must be whole.
std::vector<ShardingStrategy> keep_other_dims(int64_t rank, int64_t sliced, DType dtype) {
  std::vector<int64_t> map(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) map[d] = d == sliced ? -1 : d;
  return data_movement_rule(1, 1, map, dtype);
}

std::vector<ShardingStrategy> slice_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return keep_other_dims(in[0].ndim(), slice_args("slice", in[0].shape, attrs).dim, in[0].dtype);
}

std::vector<ShardingStrategy> narrow_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return keep_other_dims(in[0].ndim(), narrow_args(in[0], attrs).dim, in[0].dtype);
}

// The zeros around the region stay zero under every reduction, so Partial passes too.
std::vector<ShardingStrategy> slice_backward_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return keep_other_dims(in[0].ndim(), slice_args("slice_backward", attrs.get_ints("shape"), attrs).dim, in[0].dtype);
}

Attrs localize_slice_backward(const Attrs& attrs, const LocalContext& ctx) {
  Attrs local = attrs;
  local.set("shape", ctx.local_outputs[0].shape);
  return local;
}

std::vector<AttrSpec> slice_attrs() {
  return {{"dim", AttrType::Int, std::nullopt},
          {"start", AttrType::Int, std::nullopt},
          {"end", AttrType::Int, std::nullopt},
          {"step", AttrType::Int, int64_t{1}}};
}

}  // namespace

OpDef def_slice() {
  return {.name = "slice",
          .inputs = {{"x"}},
          .attrs = slice_attrs(),
          .infer = infer_slice,
          .kernel = slice_kernel,
          .vjp = vjp_slice,
          .cost = free_cost,
          .sharding = slice_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

OpDef def_narrow() {
  return {.name = "narrow",
          .inputs = {{"x"}},
          .attrs = {{"dim", AttrType::Int, std::nullopt},
                    {"start", AttrType::Int, std::nullopt},
                    {"length", AttrType::Int, std::nullopt}},
          .infer = infer_narrow,
          .kernel = narrow_kernel,
          .vjp = vjp_narrow,
          .cost = free_cost,
          .sharding = narrow_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

OpDef def_slice_backward() {
  std::vector<AttrSpec> attrs = slice_attrs();
  attrs.insert(attrs.begin(), {"shape", AttrType::Ints, std::nullopt});
  return {.name = "slice_backward",
          .inputs = {{"grad"}},
          .attrs = std::move(attrs),
          .infer = infer_slice_backward,
          .kernel = slice_backward_kernel,
          .vjp = vjp_slice_backward,
          .cost = copy_cost,
          .sharding = slice_backward_rule,
          .localize_attrs = localize_slice_backward,
          .local = {},
          .traits = {}};
}

}  // namespace defs

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return call1(op::slice(), {x}, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  return call1(op::narrow(), {x}, {{"dim", dim}, {"start", start}, {"length", length}});
}

Tensor slice_backward(const Tensor& grad, Shape shape, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return call1(op::slice_backward(), {grad},
               {{"shape", std::move(shape)}, {"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}

}  // namespace px
