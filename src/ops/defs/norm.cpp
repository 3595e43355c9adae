// layer_norm and rms_norm over the last `ndims` dims, and their backward ops
// (layer_norm_backward, rms_norm_backward: grad, x [, weight] -> dx [, dweight]): fused row
// kernels (kernels/norm.h), the backward recomputing each row's statistics. The backward ops have
// no VJP of their own (second derivatives through a norm are refused, as for fused attention).

#include "parallax/kernels/norm.h"

#include "ops/defs/common.h"
#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_rules.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/reduction.h"

namespace px {
namespace defs {

namespace {

// The trailing dims that get normalized; checks ndims against the rank of x.
Shape normalized_shape(std::string_view op, const TensorMeta& x, const Attrs& attrs) {
  int64_t ndims = attrs.get_int("ndims");
  if (ndims < 1 || ndims > x.ndim()) {
    throw ValueError(std::string(op) + ": ndims " + std::to_string(ndims) + " is out of range for " + named("x", x) +
                     " (expected 1.." + std::to_string(x.ndim()) + ")");
  }
  return Shape(x.shape.end() - ndims, x.shape.end());
}

void check_param(std::string_view op, std::string_view name, const TensorMeta& param, const TensorMeta& x,
                 const Shape& normalized) {
  if (param.shape != normalized) {
    throw ShapeError(std::string(op) + ": " + named(name, param) + " does not match the normalized shape " +
                     shape_str(normalized) + " (the last " + std::to_string(normalized.size()) + " dims of " +
                     named("x", x) + ")");
  }
}

std::vector<TensorMeta> infer_norm(std::string_view op, const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  const TensorMeta& x = inputs[0];
  require_floating(op, x);
  require_same_dtype(op, inputs);
  Shape normalized = normalized_shape(op, x, attrs);
  const char* names[] = {"x", "weight", "bias"};
  for (size_t i = 1; i < inputs.size(); ++i) check_param(op, names[i], inputs[i], x, normalized);
  return {x};
}

// Rows and row length of x for the row kernels.
std::pair<int64_t, int64_t> rows_and_length(const Tensor& x, const Attrs& attrs) {
  int64_t n = numel(normalized_shape("norm", x.meta_info(), attrs));
  return {n == 0 ? 0 : x.numel() / n, n};
}

std::vector<Tensor> run_layer_norm(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const Tensor& x = inputs[0];
  Tensor in = contiguous_input(x);
  Tensor weight = inputs.size() > 1 ? contiguous_input(inputs[1]) : Tensor();
  Tensor bias = inputs.size() > 2 ? contiguous_input(inputs[2]) : Tensor();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  auto [rows, n] = rows_and_length(x, attrs);
  visit_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::layer_norm<T>(in.data<T>(), weight.defined() ? weight.data<T>() : nullptr,
                           bias.defined() ? bias.data<T>() : nullptr, out.data<T>(), rows, n, attrs.get_float("eps"));
  });
  return {out};
}

std::vector<Tensor> run_rms_norm(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const Tensor& x = inputs[0];
  Tensor in = contiguous_input(x);
  Tensor weight = inputs.size() > 1 ? contiguous_input(inputs[1]) : Tensor();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  auto [rows, n] = rows_and_length(x, attrs);
  visit_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::rms_norm<T>(in.data<T>(), weight.defined() ? weight.data<T>() : nullptr, out.data<T>(), rows, n,
                         attrs.get_float("eps"));
  });
  return {out};
}

// --- the backward ops ---

std::vector<TensorMeta> infer_norm_backward(std::string_view op, const std::vector<TensorMeta>& inputs,
                                            const Attrs& attrs) {
  const TensorMeta& x = inputs[1];
  require_gradient_of(op, inputs, x, "x");
  Shape normalized = normalized_shape(op, x, attrs);
  std::vector<TensorMeta> outputs{x};
  if (inputs.size() > 2) {
    check_param(op, "weight", inputs[2], x, normalized);
    outputs.push_back(inputs[2]);
  }
  return outputs;
}

std::vector<Tensor> run_norm_backward(const std::vector<Tensor>& inputs, const Attrs& attrs, bool center) {
  const Tensor& x = inputs[1];
  Tensor grad = contiguous_input(inputs[0]);
  Tensor in = contiguous_input(x);
  Tensor weight = inputs.size() > 2 ? contiguous_input(inputs[2]) : Tensor();
  std::vector<Tensor> outputs{Tensor::empty(x.shape(), x.dtype())};
  if (weight.defined()) outputs.push_back(Tensor::empty(weight.shape(), weight.dtype()));
  auto [rows, n] = rows_and_length(x, attrs);
  visit_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::norm_backward<T>(grad.data<T>(), in.data<T>(), weight.defined() ? weight.data<T>() : nullptr,
                              outputs[0].data<T>(), weight.defined() ? outputs[1].data<T>() : nullptr, rows, n,
                              attrs.get_float("eps"), center);
  });
  return outputs;
}

// Rows split alike (grad and x on a leading dim, the weight whole): dx split, dweight a partial sum.
ShardingRuleFn norm_backward_sharding(std::string op) {
  return [op = std::move(op)](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    const bool weighted = inputs.size() > 2;
    int64_t leading = inputs[1].ndim() - static_cast<int64_t>(normalized_shape(op, inputs[1], attrs).size());
    StrategyList list(inputs.size(), weighted ? 2 : 1);
    for (int64_t d = 0; d < leading; ++d) {
      if (weighted) {
        list.add({shard(d), shard(d), rep()}, {shard(d), partial(ReduceOp::Sum)});
      } else {
        list.add({shard(d), shard(d)}, {shard(d)});
      }
    }
    return list.take();
  };
}

// Per element of x: the statistics again (3 flops), the two row means (4), dx (4), and its share
// of dweight (2), so dweight's own elements cost nothing more.
OpCost cost_norm_backward(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  OpCost cost = elementwise_cost(inputs, outputs, 0);
  cost.flops = 13.0 * static_cast<double>(inputs[1].numel());  // inputs: grad, x[, weight]
  return cost;
}

OpDef def_norm_backward(std::string name, double eps, bool center) {
  OpDef def;
  def.name = name;
  def.inputs = {{"grad"}, {"x"}, {"weight", /*optional=*/true}};
  def.attrs = {{"eps", AttrType::Float, eps}, {"ndims", AttrType::Int, int64_t{1}}};
  def.infer = [name](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return infer_norm_backward(name, inputs, attrs);
  };
  def.kernel = [center](const std::vector<Tensor>& inputs, const Attrs& attrs) {
    return run_norm_backward(inputs, attrs, center);
  };
  def.cost = cost_norm_backward;
  def.sharding = norm_backward_sharding(name);
  return def;
}

// The forward's VJP: the backward op for x (and the weight), the bias's gradient a sum over the rows.
VjpFn norm_vjp(const OpDef& (*backward)()) {
  return [backward](const VjpContext& ctx) {
    const Tensor& g = ctx.grad_outputs[0];
    if (!g.defined()) return std::vector<Tensor>(ctx.inputs.size());
    std::vector<Tensor> inputs{g, ctx.inputs[0]};
    if (ctx.inputs.size() > 1) inputs.push_back(ctx.inputs[1]);
    std::vector<Tensor> grads = call(backward(), inputs, ctx.attrs);
    if (ctx.inputs.size() > 2) grads.push_back(sum_to_shape(g, ctx.inputs[2].shape()));
    return grads;
  };
}

// Per element: mean and variance passes (3 flops), normalize (2), affine (2).
OpCost cost_norm(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 7);
}

// Each row of the normalized trailing dims is normalized on its own: x shards on a leading dim
// with weight and bias replicated (the backward ops then give the weight's gradient P(sum)).
ShardingRuleFn norm_sharding(std::string op) {
  return [op = std::move(op)](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    int64_t leading = inputs[0].ndim() - static_cast<int64_t>(normalized_shape(op, inputs[0], attrs).size());
    return independent_dims_strategies(inputs.size(), dim_range(0, leading));
  };
}

}  // namespace

OpDef def_layer_norm() {
  OpDef def;
  def.name = "layer_norm";
  def.inputs = {{"x"}, {"weight", /*optional=*/true}, {"bias", /*optional=*/true}};
  def.attrs = {{"eps", AttrType::Float, 1e-5}, {"ndims", AttrType::Int, int64_t{1}}};
  def.infer = [](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return infer_norm("layer_norm", inputs, attrs);
  };
  def.kernel = run_layer_norm;
  def.vjp = norm_vjp(op::layer_norm_backward);
  def.cost = cost_norm;
  def.sharding = norm_sharding("layer_norm");
  return def;
}

OpDef def_rms_norm() {
  OpDef def;
  def.name = "rms_norm";
  def.inputs = {{"x"}, {"weight", /*optional=*/true}};
  def.attrs = {{"eps", AttrType::Float, 1e-6}, {"ndims", AttrType::Int, int64_t{1}}};
  def.infer = [](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return infer_norm("rms_norm", inputs, attrs);
  };
  def.kernel = run_rms_norm;
  def.vjp = norm_vjp(op::rms_norm_backward);
  def.cost = cost_norm;
  def.sharding = norm_sharding("rms_norm");
  return def;
}

OpDef def_layer_norm_backward() { return def_norm_backward("layer_norm_backward", 1e-5, /*center=*/true); }
OpDef def_rms_norm_backward() { return def_norm_backward("rms_norm_backward", 1e-6, /*center=*/false); }

}  // namespace defs

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, int64_t ndims) {
  Attrs attrs{{"eps", eps}, {"ndims", ndims}};
  if (!bias.defined()) {
    return weight.defined() ? call1(op::layer_norm(), {x, weight}, attrs) : call1(op::layer_norm(), {x}, attrs);
  }
  // Optional inputs are positional: a bias alone needs a weight of ones before it.
  Tensor scale = weight.defined() ? weight : ones(bias.shape(), bias.dtype(), /*meta=*/bias.is_meta());
  return call1(op::layer_norm(), {x, scale, bias}, attrs);
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, int64_t ndims) {
  Attrs attrs{{"eps", eps}, {"ndims", ndims}};
  return weight.defined() ? call1(op::rms_norm(), {x, weight}, attrs) : call1(op::rms_norm(), {x}, attrs);
}

}  // namespace px
