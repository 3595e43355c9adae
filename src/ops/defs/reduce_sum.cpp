// sum and mean over any set of dims.

#include "ops/defs/reduce.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/reduction.h"

namespace px {

namespace defs {

namespace {

std::vector<TensorMeta> infer_sum(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  require_numeric("sum", in[0]);
  return {infer_reduction("sum", in[0], attrs)};
}

std::vector<Tensor> sum_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  return {run_reduction(kernels::ReduceOp::Sum, in[0], attrs)};
}

// Every input element receives the gradient of the output element it was summed into.
Tensor broadcast_grad(const Tensor& grad, const Tensor& x, const Attrs& attrs) {
  Tensor kept = grad_with_kept_dims(grad, x.shape(), attrs);
  if (kept.shape() == x.shape()) return kept;
  return call1(op::expand(), {kept}, {{"shape", x.shape()}});
}

std::vector<Tensor> vjp_sum(const VjpContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  if (!ctx.grad_outputs[0].defined() || !is_floating(x.dtype())) return {Tensor()};
  return {broadcast_grad(ctx.grad_outputs[0], x, ctx.attrs)};
}

std::vector<TensorMeta> infer_mean(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  require_floating("mean", in[0]);
  return {infer_reduction("mean", in[0], attrs)};
}

double mean_scale(const Shape& shape, const Attrs& attrs) {
  std::vector<int64_t> dims = reduce_dims("mean", attrs.get_ints("dims"), static_cast<int64_t>(shape.size()));
  return 1.0 / static_cast<double>(reduced_count(shape, dims));  // 1/0 = inf: the mean of nothing is NaN
}

std::vector<Tensor> mean_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  return {run_reduction(kernels::ReduceOp::Sum, in[0], attrs, mean_scale(in[0].shape(), attrs))};
}

std::vector<Tensor> vjp_mean(const VjpContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  Tensor scaled = call1(op::mul_scalar(), {ctx.grad_outputs[0]}, {{"scalar", mean_scale(x.shape(), ctx.attrs)}});
  return {broadcast_grad(scaled, x, ctx.attrs)};
}

// A Shard on a reduced dim leaves each rank a part of every sum; sums and averages of parts pass.
ReductionSharding sum_sharding() { return {ReduceOp::Sum, {ReduceOp::Sum, ReduceOp::Avg}}; }

// On local shards a mean divides by the GLOBAL count, so the parts of an unevenly sharded
// reduced dim add up to the mean exactly (the local mean would weigh the shards equally).
LocalResult mean_local(const std::vector<Tensor>& in, const Attrs& attrs, const LocalContext& ctx) {
  const Shape& global_shape = ctx.global_inputs[0].shape;
  std::vector<int64_t> dims = reduce_dims("mean", attrs.get_ints("dims"), static_cast<int64_t>(global_shape.size()));
  int64_t global_count = reduced_count(global_shape, dims);
  if (reduced_count(in[0].shape(), dims) == global_count) return {{call1(op::mean(), {in[0]}, attrs)}, {}};
  Tensor local_sum = call1(op::sum(), {in[0]}, attrs);
  return {{call1(op::mul_scalar(), {local_sum}, {{"scalar", 1.0 / static_cast<double>(global_count)}})}, {}};
}

}  // namespace

OpDef def_sum() {
  return {.name = "sum",
          .inputs = {{"x"}},
          .attrs = reduction_attrs(),
          .infer = infer_sum,
          .kernel = sum_kernel,
          .vjp = vjp_sum,
          .cost = reduction_cost,
          .sharding = reduction_rule("sum", sum_sharding()),
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

OpDef def_mean() {
  return {.name = "mean",
          .inputs = {{"x"}},
          .attrs = reduction_attrs(),
          .infer = infer_mean,
          .kernel = mean_kernel,
          .vjp = vjp_mean,
          .cost = reduction_cost,
          .sharding = reduction_rule("mean", sum_sharding()),
          .localize_attrs = {},
          .local = mean_local,
          .traits = {}};
}

}  // namespace defs

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return call1(op::sum(), {x}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return call1(op::mean(), {x}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}

}  // namespace px
