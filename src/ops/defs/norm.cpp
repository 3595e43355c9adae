// layer_norm and rms_norm over the last `ndims` dims: fused row kernels
// (kernels/norm.h); VJPs recompute the statistics with ops.

#include "parallax/kernels/norm.h"

#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/nn.h"
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

// The normalized dims as indices into x.
std::vector<int64_t> norm_dims(const Tensor& x, const Attrs& attrs) {
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - attrs.get_int("ndims"); d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// Gradients of y = xhat * w (+ b) given xhat, rstd and g. `center` is true for layer_norm,
// whose mean subtraction adds the -mean(dxhat) term.
std::vector<Tensor> norm_grads(const VjpContext& ctx, const Tensor& xhat, const Tensor& rstd, bool center) {
  const Tensor& g = ctx.grad_outputs[0];
  const std::vector<Tensor>& in = ctx.inputs;
  std::vector<int64_t> dims = norm_dims(in[0], ctx.attrs);
  Tensor dxhat = in.size() > 1 ? g * in[1] : g;
  Tensor centered = center ? dxhat - mean(dxhat, dims, /*keepdim=*/true) : dxhat;
  std::vector<Tensor> grads{rstd * (centered - xhat * mean(dxhat * xhat, dims, /*keepdim=*/true))};
  if (in.size() > 1) grads.push_back(sum_to_shape(g * xhat, in[1].shape()));
  if (in.size() > 2) grads.push_back(sum_to_shape(g, in[2].shape()));
  return grads;
}

std::vector<Tensor> vjp_layer_norm(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return std::vector<Tensor>(ctx.inputs.size());
  const Tensor& x = ctx.inputs[0];
  std::vector<int64_t> dims = norm_dims(x, ctx.attrs);
  Tensor centered = x - mean(x, dims, /*keepdim=*/true);
  Tensor rstd = rsqrt(mean(centered * centered, dims, /*keepdim=*/true) + ctx.attrs.get_float("eps"));
  return norm_grads(ctx, centered * rstd, rstd, /*center=*/true);
}

std::vector<Tensor> vjp_rms_norm(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return std::vector<Tensor>(ctx.inputs.size());
  const Tensor& x = ctx.inputs[0];
  Tensor mean_square = mean(x * x, norm_dims(x, ctx.attrs), /*keepdim=*/true);
  Tensor rstd = rsqrt(mean_square + ctx.attrs.get_float("eps"));
  return norm_grads(ctx, x * rstd, rstd, /*center=*/false);
}

// Per element: mean and variance passes (3 flops), normalize (2), affine (2).
OpCost cost_norm(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 7);
}

// Each row of the normalized trailing dims is normalized on its own: x shards on a leading dim
// with weight and bias replicated. The VJP's ops (mean, sub, mul, rsqrt, add_scalar, sum) all
// have rules, so on a batch-sharded x the weight and bias gradients come out P(sum).
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
  def.vjp = vjp_layer_norm;
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
  def.vjp = vjp_rms_norm;
  def.cost = cost_norm;
  def.sharding = norm_sharding("rms_norm");
  return def;
}

}  // namespace defs

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, int64_t ndims) {
  Attrs attrs{{"eps", eps}, {"ndims", ndims}};
  if (!bias.defined()) {
    return weight.defined() ? call1("layer_norm", {x, weight}, attrs) : call1("layer_norm", {x}, attrs);
  }
  // Optional inputs are positional: a bias alone needs a weight of ones before it.
  Tensor scale = weight.defined() ? weight : ones(bias.shape(), bias.dtype(), /*meta=*/bias.is_meta());
  return call1("layer_norm", {x, scale, bias}, attrs);
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, int64_t ndims) {
  Attrs attrs{{"eps", eps}, {"ndims", ndims}};
  return weight.defined() ? call1("rms_norm", {x, weight}, attrs) : call1("rms_norm", {x}, attrs);
}

}  // namespace px
