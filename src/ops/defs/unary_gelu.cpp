// gelu(x; approximate) and gelu_backward(grad, x; approximate), its fused VJP.
//   exact ("none"): gelu(x) = x Phi(x), Phi the standard normal CDF;
//   "tanh":         gelu(x) = 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
// gelu_backward is differentiable too (second derivatives written with ops), so
// gradients of gradients work.
#include "ops/defs/common.h"
#include "ops/defs/elementwise.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/kernels/elementwise.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/op_handles.h"

namespace px::defs {

namespace {

using kernels::GeluApprox;

constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)
constexpr double kTanhC = 0.79788456080286535588;       // sqrt(2/pi)
constexpr double kTanhK = 0.044715;

GeluApprox parse_approx(const std::string& op, const Attrs& attrs) {
  const std::string& approximate = attrs.get_string("approximate");
  if (approximate == "none") return GeluApprox::Erf;
  if (approximate == "tanh") return GeluApprox::Tanh;
  throw ValueError(op + ": approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
}

AttrSpec approximate_attr() { return {"approximate", AttrType::String, AttrValue(std::string("none"))}; }

std::vector<TensorMeta> infer_gelu(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  parse_approx("gelu", attrs);
  require_floating("gelu", in[0]);
  return {in[0]};
}

std::vector<Tensor> gelu_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  auto op = parse_approx("gelu", attrs) == GeluApprox::Erf ? kernels::UnaryOp::GeluErf : kernels::UnaryOp::GeluTanh;
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (out.numel() > 0) kernels::unary(op, x.dtype(), out.raw_data(), x.shape(), x.raw_data(), x.strides());
  return {out};
}

Tensor gelu_backward_call(const Tensor& grad, const Tensor& x, const Attrs& attrs) {
  return call1(op::gelu_backward(), {grad, x}, {{"approximate", attrs.get_string("approximate")}});
}

// gelu_backward(grad, x) = grad * gelu'(x): the inputs must agree in shape (the
// gradient of gelu's output has its shape) and dtype.
std::vector<TensorMeta> infer_gelu_backward(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  parse_approx("gelu_backward", attrs);
  require_same_dtype("gelu_backward", in);
  require_floating("gelu_backward", in[0]);
  if (in[0].shape != in[1].shape) {
    throw ShapeError("gelu_backward: grad " + in[0].str() + " and x " + in[1].str() + " must have the same shape");
  }
  return {in[1]};
}

std::vector<Tensor> gelu_backward_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& grad = in[0];
  const Tensor& x = in[1];
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  if (out.numel() > 0) {
    kernels::gelu_backward(parse_approx("gelu_backward", attrs), x.dtype(), out.raw_data(), x.shape(), grad.raw_data(),
                           grad.strides(), x.raw_data(), x.strides());
  }
  return {out};
}

// gelu''(x) = phi(x) (2 - x^2), phi the standard normal density.
Tensor gelu_erf_second_derivative(const Tensor& x) {
  Tensor x2 = mul(x, x);
  Tensor phi = mul(exp(mul(x2, -0.5)), kInvSqrt2Pi);
  return mul(phi, sub(2.0, x2));
}

// With v = 2u, s = sigmoid(v), q = s (1 - s): gelu' = s + x q v', and
// gelu'' = q (2 v' + x v'^2 (1 - 2 s) + x v'').
Tensor gelu_tanh_second_derivative(const Tensor& x) {
  Tensor x2 = mul(x, x);
  Tensor s = sigmoid(mul(add(x, mul(mul(x2, x), kTanhK)), 2 * kTanhC));
  Tensor q = mul(s, sub(1.0, s));
  Tensor dv = add(mul(x2, 6 * kTanhC * kTanhK), 2 * kTanhC);
  Tensor ddv = mul(x, 12 * kTanhC * kTanhK);
  Tensor curvature = mul(mul(x, mul(dv, dv)), sub(1.0, mul(s, 2.0)));
  return mul(q, add(add(mul(dv, 2.0), curvature), mul(x, ddv)));
}

std::vector<Tensor> vjp_gelu_backward(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor(), Tensor()};
  const Tensor& grad = ctx.inputs[0];
  const Tensor& x = ctx.inputs[1];
  Tensor second = parse_approx("gelu_backward", ctx.attrs) == GeluApprox::Erf ? gelu_erf_second_derivative(x)
                                                                              : gelu_tanh_second_derivative(x);
  return {gelu_backward_call(g, x, ctx.attrs), mul(mul(g, grad), second)};
}

}  // namespace

OpDef def_gelu() {
  OpDef def;
  def.name = "gelu";
  def.inputs = {{"x"}};
  def.attrs = {approximate_attr()};
  def.infer = infer_gelu;
  def.kernel = gelu_kernel;
  def.vjp = single_input_vjp(
      [](const Tensor& g, const VjpContext& ctx) { return gelu_backward_call(g, ctx.inputs[0], ctx.attrs); });
  def.cost = flops_per_element(15);
  def.sharding = pointwise_rule("gelu");
  def.traits.elementwise = true;
  return def;
}

OpDef def_gelu_backward() {
  OpDef def;
  def.name = "gelu_backward";
  def.inputs = {{"grad"}, {"x"}};
  def.attrs = {approximate_attr()};
  def.infer = infer_gelu_backward;
  def.kernel = gelu_backward_kernel;
  def.vjp = vjp_gelu_backward;
  def.cost = flops_per_element(25);
  // Linear in grad for a fixed x: a partial gradient stays partial.
  def.sharding =
      pointwise_rule("gelu_backward",
                     std::vector<ShardingStrategy>{{{Partial{ReduceOp::Sum}, Replicate{}}, {Partial{ReduceOp::Sum}}},
                                                   {{Partial{ReduceOp::Avg}, Replicate{}}, {Partial{ReduceOp::Avg}}}});
  def.traits.elementwise = true;
  return def;
}

}  // namespace px::defs
