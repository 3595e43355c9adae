// cast: a contiguous copy converted to another dtype (bf16 rounds to nearest
// even; to bool is != 0; float to int truncates toward zero).

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

std::vector<TensorMeta> infer_cast(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return {{in[0].shape, attrs.get_dtype("dtype")}};
}

std::vector<Tensor> cast_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  return {contiguous_copy(in[0], attrs.get_dtype("dtype"))};
}

// Gradients flow only between floating dtypes: integers and bools are not differentiable.
std::vector<Tensor> vjp_cast(const VjpContext& ctx) {
  const Tensor& grad = ctx.grad_outputs[0];
  DType from = ctx.inputs[0].dtype();
  if (!grad.defined() || !is_floating(from) || !is_floating(ctx.attrs.get_dtype("dtype"))) return {Tensor()};
  return {cast(grad, from)};
}

// Every value of `from` is exactly a value of `to` (bf16 -> f32 -> f64).
bool widens(DType from, DType to) {
  auto rank = [](DType dtype) { return dtype == DType::BFloat16 ? 0 : dtype == DType::Float32 ? 1 : 2; };
  return rank(to) > rank(from);
}

// Rounding between floating dtypes is monotone, so maxima and minima survive it. A sum of
// rounded parts is not the rounded sum, but a widening cast rounds nothing: the sum of widened
// parts is the sum, rounded only by the reduction itself, now in the wider dtype. That is what a
// mixed-precision policy's reduce dtype asks for (bf16 gradients summed across ranks in f32).
std::vector<ShardingStrategy> cast_partials(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  const DType to = attrs.get_dtype("dtype");
  if (!is_floating(in[0].dtype) || !is_floating(to)) return {};
  std::vector<ShardingStrategy> partials = monotone_partials(true);
  if (widens(in[0].dtype, to)) {
    add_all_unique(partials, unary_partials({{ReduceOp::Sum, ReduceOp::Sum}, {ReduceOp::Avg, ReduceOp::Avg}}));
  }
  return partials;
}

}  // namespace

OpDef def_cast() {
  return {.name = "cast",
          .inputs = {{"x"}},
          .attrs = {{"dtype", AttrType::DType, std::nullopt}},
          .infer = infer_cast,
          .kernel = cast_kernel,
          .vjp = vjp_cast,
          .cost = copy_cost,
          .sharding = pointwise_rule("cast", cast_partials),
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = true, .view = false}};
}

}  // namespace defs

Tensor cast(const Tensor& x, DType dtype) { return call1(op::cast(), {x}, {{"dtype", dtype}}); }

}  // namespace px
