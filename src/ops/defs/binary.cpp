// add, sub, mul, div, maximum, minimum: tensor-tensor arithmetic with broadcasting.
#include "ops/defs/common.h"
#include "ops/defs/elementwise.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/kernels/elementwise.h"
#include "parallax/ops/elementwise.h"

namespace px::defs {

namespace {

using kernels::BinaryOp;

std::vector<Tensor> no_grads() { return {Tensor(), Tensor()}; }

// Binary partial strategies: the inputs' placements and the output's.
ShardingStrategy partial2(Placement a, Placement b, ReduceOp out) { return {{a, b}, {Partial{out}}}; }

// Linear in both inputs together (add, sub): sum_r (a_r +- b_r) = a +- b, and likewise for averages.
std::vector<ShardingStrategy> additive_partials() {
  return {partial2(Partial{ReduceOp::Sum}, Partial{ReduceOp::Sum}, ReduceOp::Sum),
          partial2(Partial{ReduceOp::Avg}, Partial{ReduceOp::Avg}, ReduceOp::Avg)};
}

// Linear in each input alone (mul): a partial times a replicated factor.
std::vector<ShardingStrategy> multiplicative_partials() {
  std::vector<ShardingStrategy> strategies;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
    strategies.push_back(partial2(Partial{op}, Replicate{}, op));
    strategies.push_back(partial2(Replicate{}, Partial{op}, op));
  }
  return strategies;
}

// Linear in the numerator only.
std::vector<ShardingStrategy> division_partials() {
  return {partial2(Partial{ReduceOp::Sum}, Replicate{}, ReduceOp::Sum),
          partial2(Partial{ReduceOp::Avg}, Replicate{}, ReduceOp::Avg)};
}

// max(a, b) over the parts of both is the max of both maxima (and likewise for min).
std::vector<ShardingStrategy> extreme_partials(ReduceOp op) { return {partial2(Partial{op}, Partial{op}, op)}; }

// One binary op: equal dtypes (floating only for div), NumPy broadcasting, a contiguous output.
OpDef binary_def(std::string name, BinaryOp op, bool floating_only, VjpFn vjp, std::vector<ShardingStrategy> partials) {
  OpDef def;
  def.name = name;
  def.inputs = {{"a"}, {"b"}};
  def.infer = [name, floating_only](const std::vector<TensorMeta>& in, const Attrs&) {
    require_same_dtype(name, in);
    if (floating_only) {
      require_floating(name, in[0]);
    } else {
      require_dtype_in(name, in[0], kArithmeticDTypes);
    }
    return std::vector<TensorMeta>{{broadcast_shapes(in[0].shape, in[1].shape, name), in[0].dtype}};
  };
  def.kernel = [name, op](const std::vector<Tensor>& in, const Attrs&) {
    const Tensor& a = in[0];
    const Tensor& b = in[1];
    Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
    Tensor out = Tensor::empty(shape, a.dtype());
    if (out.numel() > 0) {
      kernels::binary(op, a.dtype(), out.raw_data(), shape, a.raw_data(), broadcast_strides_of(a, shape), b.raw_data(),
                      broadcast_strides_of(b, shape));
    }
    return std::vector<Tensor>{out};
  };
  def.vjp = std::move(vjp);
  def.cost = flops_per_element(1);
  def.sharding = pointwise_rule(name, std::move(partials));
  def.traits.elementwise = true;
  return def;
}

std::vector<Tensor> vjp_add(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return no_grads();
  return {input_grad(ctx.inputs[0], g), input_grad(ctx.inputs[1], g)};
}

std::vector<Tensor> vjp_sub(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined() || !is_floating(g.dtype())) return no_grads();
  return {input_grad(ctx.inputs[0], g), input_grad(ctx.inputs[1], neg(g))};
}

std::vector<Tensor> vjp_mul(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined() || !is_floating(g.dtype())) return no_grads();
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  return {input_grad(a, mul(g, b)), input_grad(b, mul(g, a))};
}

// d(a/b) = g/b for a and -g*a/b^2 = -(g*out)/b for b (reusing the output).
std::vector<Tensor> vjp_div(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return no_grads();
  const Tensor& b = ctx.inputs[1];
  return {input_grad(ctx.inputs[0], div(g, b)), input_grad(b, neg(div(mul(g, ctx.outputs[0]), b)))};
}

// The gradient goes to whichever input was selected; ties (a == b) go to a.
std::vector<Tensor> vjp_select(const VjpContext& ctx, bool is_max) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined() || !is_floating(g.dtype())) return no_grads();
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor a_selected = is_max ? ge(a, b) : le(a, b);
  Tensor zero = scalar_tensor(0.0, g.dtype());
  return {input_grad(a, where(a_selected, g, zero)), input_grad(b, where(a_selected, zero, g))};
}

}  // namespace

OpDef def_add() { return binary_def("add", BinaryOp::Add, false, vjp_add, additive_partials()); }
OpDef def_sub() { return binary_def("sub", BinaryOp::Sub, false, vjp_sub, additive_partials()); }
OpDef def_mul() { return binary_def("mul", BinaryOp::Mul, false, vjp_mul, multiplicative_partials()); }
OpDef def_div() { return binary_def("div", BinaryOp::Div, true, vjp_div, division_partials()); }

OpDef def_maximum() {
  return binary_def(
      "maximum", BinaryOp::Maximum, false, [](const VjpContext& ctx) { return vjp_select(ctx, true); },
      extreme_partials(ReduceOp::Max));
}

OpDef def_minimum() {
  return binary_def(
      "minimum", BinaryOp::Minimum, false, [](const VjpContext& ctx) { return vjp_select(ctx, false); },
      extreme_partials(ReduceOp::Min));
}

}  // namespace px::defs
