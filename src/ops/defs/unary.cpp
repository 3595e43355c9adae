// neg, abs, exp, log, sqrt, rsqrt, tanh, sigmoid, relu, silu: one tensor in, same shape and dtype out.
#include "ops/defs/common.h"
#include "ops/defs/elementwise.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/kernels/elementwise.h"
#include "parallax/ops/elementwise.h"

namespace px::defs {

namespace {

using kernels::UnaryOp;

constexpr ReduceOp kSum = ReduceOp::Sum, kAvg = ReduceOp::Avg, kMax = ReduceOp::Max, kMin = ReduceOp::Min;

// log and sqrt are non-decreasing on their domain [0, inf) only: a minimum's parts all lie at or
// above it (inside the domain when it is), but a maximum's parts may fall below 0 and give NaN.
std::vector<ShardingStrategy> min_only_partials() { return unary_partials({{kMin, kMin}}); }

// integer_ok: the op also takes int64 (neg, abs, relu); the others are floating only.
// `partials`: the partial strategies that are exact for this op (see sharding_rules.h).
OpDef unary_def(std::string name, UnaryOp op, bool integer_ok, double flops, VjpFn vjp,
                std::vector<ShardingStrategy> partials = {}) {
  OpDef def;
  def.name = name;
  def.inputs = {{"x"}};
  def.infer = [name, integer_ok](const std::vector<TensorMeta>& in, const Attrs&) {
    if (integer_ok) {
      require_dtype_in(name, in[0], kArithmeticDTypes);
    } else {
      require_floating(name, in[0]);
    }
    return std::vector<TensorMeta>{in[0]};
  };
  def.kernel = [op](const std::vector<Tensor>& in, const Attrs&) {
    const Tensor& x = in[0];
    Tensor out = Tensor::empty(x.shape(), x.dtype());
    if (out.numel() > 0) kernels::unary(op, x.dtype(), out.raw_data(), x.shape(), x.raw_data(), x.strides());
    return std::vector<Tensor>{out};
  };
  def.vjp = std::move(vjp);
  def.cost = flops_per_element(flops);
  def.sharding = pointwise_rule(name, std::move(partials));
  def.traits.elementwise = true;
  return def;
}

const Tensor& x_of(const VjpContext& ctx) { return ctx.inputs[0]; }
const Tensor& y_of(const VjpContext& ctx) { return ctx.outputs[0]; }

}  // namespace

OpDef def_neg() {
  return unary_def("neg", UnaryOp::Neg, true, 1,
                   single_input_vjp([](const Tensor& g, const VjpContext&) { return neg(g); }),
                   unary_partials({{kSum, kSum}, {kAvg, kAvg}, {kMax, kMin}, {kMin, kMax}}));
}

// d|x| = sign(x); at x = 0 the gradient passes through unchanged (a subgradient).
OpDef def_abs() {
  return unary_def("abs", UnaryOp::Abs, true, 1, single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                     return where(lt(x_of(ctx), scalar_tensor(0.0, g.dtype())), neg(g), g);
                   }));
}

OpDef def_exp() {
  return unary_def("exp", UnaryOp::Exp, false, 10,
                   single_input_vjp([](const Tensor& g, const VjpContext& ctx) { return mul(g, y_of(ctx)); }),
                   monotone_partials(true));
}

OpDef def_log() {
  return unary_def("log", UnaryOp::Log, false, 10,
                   single_input_vjp([](const Tensor& g, const VjpContext& ctx) { return div(g, x_of(ctx)); }),
                   min_only_partials());
}

// d sqrt(x) = 1 / (2 sqrt(x)) = 0.5 / y.
OpDef def_sqrt() {
  return unary_def("sqrt", UnaryOp::Sqrt, false, 1,
                   single_input_vjp([](const Tensor& g, const VjpContext& ctx) { return div(mul(g, 0.5), y_of(ctx)); }),
                   min_only_partials());
}

// d x^(-1/2) = -0.5 x^(-3/2) = -0.5 y / x.
OpDef def_rsqrt() {
  return unary_def("rsqrt", UnaryOp::Rsqrt, false, 2, single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                     return mul(div(mul(g, y_of(ctx)), x_of(ctx)), -0.5);
                   }),
                   // Non-increasing on [0, inf): the parts of a minimum stay in the domain (see log).
                   unary_partials({{kMin, kMax}}));
}

// d tanh = 1 - y^2.
OpDef def_tanh() {
  return unary_def("tanh", UnaryOp::Tanh, false, 10, single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                     const Tensor& y = y_of(ctx);
                     return mul(g, sub(1.0, mul(y, y)));
                   }),
                   monotone_partials(true));
}

// d sigmoid = y (1 - y).
OpDef def_sigmoid() {
  return unary_def("sigmoid", UnaryOp::Sigmoid, false, 12, single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                     const Tensor& y = y_of(ctx);
                     return mul(g, mul(y, sub(1.0, y)));
                   }),
                   monotone_partials(true));
}

// The gradient passes where x > 0 (0 at x = 0, as in PyTorch).
OpDef def_relu() {
  return unary_def("relu", UnaryOp::Relu, true, 1, single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                     Tensor zero = scalar_tensor(0.0, g.dtype());
                     return where(gt(x_of(ctx), zero), g, zero);
                   }),
                   monotone_partials(true));
}

// silu = x s(x): d silu = s (1 + x (1 - s)).
OpDef def_silu() {
  return unary_def("silu", UnaryOp::Silu, false, 13, single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                     const Tensor& x = x_of(ctx);
                     Tensor s = sigmoid(x);
                     return mul(g, mul(s, add(mul(x, sub(1.0, s)), 1.0)));
                   }));
}

}  // namespace px::defs
