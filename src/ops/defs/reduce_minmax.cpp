// amax and amin over any set of dims. Their VJP splits the gradient evenly among
// the elements that tie for the extreme (as torch.amax does), so it stays a
// valid subgradient and is symmetric in the tied elements.

#include "ops/defs/reduce.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/reduction.h"

namespace px {

namespace defs {

namespace {

TensorMeta infer_extreme(std::string_view op, const TensorMeta& input, const Attrs& attrs) {
  require_numeric(op, input);
  require_nonempty_reduction(op, input, reduce_dims(op, attrs.get_ints("dims"), input.ndim()));
  return infer_reduction(op, input, attrs);
}

std::vector<Tensor> vjp_extreme(const VjpContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  if (!ctx.grad_outputs[0].defined() || !is_floating(x.dtype())) return {Tensor()};
  Tensor extreme = grad_with_kept_dims(ctx.outputs[0], x.shape(), ctx.attrs);
  Tensor grad = grad_with_kept_dims(ctx.grad_outputs[0], x.shape(), ctx.attrs);
  Tensor mask = call1(op::cast(), {call1(op::eq(), {x, extreme})}, {{"dtype", x.dtype()}});
  Tensor ties = call1(op::sum(), {mask}, {{"dims", ctx.attrs.get_ints("dims")}, {"keepdim", true}});
  return {call1(op::mul(), {mask, call1(op::div(), {grad, ties})})};
}

// `op` is Max for amax, Min for amin: a Shard on a reduced dim leaves each rank the extreme of
// its part, and partial extremes of the same kind pass. An empty local part has no extreme:
// expand_strategies drops the shardings that leave one.
OpDef def_extreme(std::string name, ReduceOp op, InferFn infer, KernelFn kernel) {
  ShardingRuleFn sharding = reduction_rule(name, {op, {op}});
  return {.name = std::move(name),
          .inputs = {{"x"}},
          .attrs = reduction_attrs(),
          .infer = std::move(infer),
          .kernel = std::move(kernel),
          .vjp = vjp_extreme,
          .cost = reduction_cost,
          .sharding = std::move(sharding),
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

}  // namespace

OpDef def_amax() {
  return def_extreme(
      "amax", ReduceOp::Max,
      [](const std::vector<TensorMeta>& in, const Attrs& attrs) {
        return std::vector<TensorMeta>{infer_extreme("amax", in[0], attrs)};
      },
      [](const std::vector<Tensor>& in, const Attrs& attrs) {
        return std::vector<Tensor>{run_reduction(kernels::ReduceOp::Max, in[0], attrs)};
      });
}

OpDef def_amin() {
  return def_extreme(
      "amin", ReduceOp::Min,
      [](const std::vector<TensorMeta>& in, const Attrs& attrs) {
        return std::vector<TensorMeta>{infer_extreme("amin", in[0], attrs)};
      },
      [](const std::vector<Tensor>& in, const Attrs& attrs) {
        return std::vector<Tensor>{run_reduction(kernels::ReduceOp::Min, in[0], attrs)};
      });
}

}  // namespace defs

Tensor amax(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return call1(op::amax(), {x}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}

Tensor amin(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return call1(op::amin(), {x}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}

}  // namespace px
