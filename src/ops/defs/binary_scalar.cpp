// add_scalar, sub_scalar, rsub_scalar, mul_scalar, div_scalar, rdiv_scalar, pow:
// a tensor and a scalar attribute. The result keeps the tensor's dtype. On int64
// tensors +, -, * accept integral scalars only (a fractional scalar would need a
// floating result, which these ops never silently produce); /, pow are floating only.
#include <cmath>

#include "ops/defs/common.h"
#include "ops/defs/elementwise.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/kernels/elementwise.h"
#include "parallax/ops/elementwise.h"

namespace px::defs {

namespace {

using kernels::ScalarOp;

constexpr double kTwoPow63 = 9223372036854775808.0;

// Throws DTypeError unless `x` can take `scalar` under `op`.
void check_scalar_dtype(const std::string& op, const TensorMeta& x, double scalar, bool integer_ok) {
  if (is_floating(x.dtype)) return;
  if (!integer_ok || x.dtype != DType::Int64) {
    require_dtype_in(
        op, x,
        integer_ok ? std::span<const DType>(kArithmeticDTypes) : std::span<const DType>(kArithmeticDTypes).first(3));
  }
  if (scalar != std::trunc(scalar) || !(std::abs(scalar) < kTwoPow63)) {
    throw DTypeError(op + ": an i64 tensor " + x.str() + " takes only integral scalars in the int64 range, got " +
                     attr_value_str(scalar) + " (cast the tensor to a floating dtype first)");
  }
}

constexpr ReduceOp kSum = ReduceOp::Sum, kAvg = ReduceOp::Avg, kMax = ReduceOp::Max, kMin = ReduceOp::Min;

// x + c, x - c: averages, maxima and minima shift with x (a sum would add c once per part).
std::vector<ShardingStrategy> shift_partials(const std::vector<TensorMeta>&, const Attrs&) {
  return unary_partials({{kAvg, kAvg}, {kMax, kMax}, {kMin, kMin}});
}

// c - x: averages follow x, the largest x gives the smallest result.
std::vector<ShardingStrategy> reflect_partials(const std::vector<TensorMeta>&, const Attrs&) {
  return unary_partials({{kAvg, kAvg}, {kMax, kMin}, {kMin, kMax}});
}

// x * k for a finite k (x / c is x * (1/c) with c nonzero): linear, and monotone in the sign of k.
// An infinite k or a zero divisor turns parts of mixed signs into inf - inf.
std::vector<ShardingStrategy> scale_partials(double factor_sign, bool exact) {
  if (!exact) return {};
  std::vector<ShardingStrategy> strategies = unary_partials({{kSum, kSum}, {kAvg, kAvg}});
  add_all_unique(strategies, monotone_partials(factor_sign >= 0));
  return strategies;
}

std::vector<ShardingStrategy> mul_partials(const std::vector<TensorMeta>&, const Attrs& attrs) {
  double scalar = attrs.get_float("scalar");
  return scale_partials(scalar, std::isfinite(scalar));
}

std::vector<ShardingStrategy> div_partials(const std::vector<TensorMeta>&, const Attrs& attrs) {
  double scalar = attrs.get_float("scalar");
  return scale_partials(scalar, std::isfinite(scalar) && scalar != 0.0);
}

// `attr` names the scalar: "scalar", or "exponent" for pow. `partials` may be empty (none pass).
OpDef scalar_def(std::string name, ScalarOp op, std::string attr, bool integer_ok, double flops, VjpFn vjp,
                 PartialStrategiesFn partials = {}) {
  OpDef def;
  def.name = name;
  def.inputs = {{"x"}};
  def.attrs = {{attr, AttrType::Float, std::nullopt}};
  def.infer = [name, attr, integer_ok](const std::vector<TensorMeta>& in, const Attrs& attrs) {
    check_scalar_dtype(name, in[0], attrs.get_float(attr), integer_ok);
    return std::vector<TensorMeta>{in[0]};
  };
  def.kernel = [op, attr](const std::vector<Tensor>& in, const Attrs& attrs) {
    const Tensor& x = in[0];
    Tensor out = Tensor::empty(x.shape(), x.dtype());
    if (out.numel() > 0) {
      kernels::scalar_op(op, x.dtype(), out.raw_data(), x.shape(), x.raw_data(), x.strides(), attrs.get_float(attr));
    }
    return std::vector<Tensor>{out};
  };
  def.vjp = std::move(vjp);
  def.cost = flops_per_element(flops);
  def.sharding = pointwise_rule(name, std::move(partials));
  def.traits.elementwise = true;
  return def;
}

double scalar_of(const VjpContext& ctx) { return ctx.attrs.get_float("scalar"); }

}  // namespace

OpDef def_add_scalar() {
  return scalar_def("add_scalar", ScalarOp::Add, "scalar", true, 1,
                    single_input_vjp([](const Tensor& g, const VjpContext&) { return g; }), shift_partials);
}

OpDef def_sub_scalar() {
  return scalar_def("sub_scalar", ScalarOp::Sub, "scalar", true, 1,
                    single_input_vjp([](const Tensor& g, const VjpContext&) { return g; }), shift_partials);
}

OpDef def_rsub_scalar() {
  return scalar_def("rsub_scalar", ScalarOp::RSub, "scalar", true, 1,
                    single_input_vjp([](const Tensor& g, const VjpContext&) { return neg(g); }), reflect_partials);
}

OpDef def_mul_scalar() {
  return scalar_def("mul_scalar", ScalarOp::Mul, "scalar", true, 1,
                    single_input_vjp([](const Tensor& g, const VjpContext& ctx) { return mul(g, scalar_of(ctx)); }),
                    mul_partials);
}

OpDef def_div_scalar() {
  return scalar_def("div_scalar", ScalarOp::Div, "scalar", false, 1,
                    single_input_vjp([](const Tensor& g, const VjpContext& ctx) { return div(g, scalar_of(ctx)); }),
                    div_partials);
}

// y = s / x: dy/dx = -s / x^2 = -y / x.
OpDef def_rdiv_scalar() {
  return scalar_def("rdiv_scalar", ScalarOp::RDiv, "scalar", false, 1,
                    single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                      return neg(div(mul(g, ctx.outputs[0]), ctx.inputs[0]));
                    }));
}

// d(x^p)/dx = p * x^(p-1); zero for p = 0 (also where x = 0, unlike the formula).
OpDef def_pow() {
  OpDef def = scalar_def("pow", ScalarOp::Pow, "exponent", false, 10,
                         single_input_vjp([](const Tensor& g, const VjpContext& ctx) {
                           double p = ctx.attrs.get_float("exponent");
                           if (p == 0.0) return mul(g, 0.0);
                           return mul(g, mul(pow(ctx.inputs[0], p - 1.0), p));
                         }));
  // The common exponents run as plain arithmetic in the kernel.
  def.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& attrs) {
    double p = attrs.get_float("exponent");
    bool cheap = p == 1.0 || p == 2.0 || p == 0.5 || p == -1.0;
    return elementwise_cost(in, out, cheap ? 1.0 : 10.0);
  };
  return def;
}

}  // namespace px::defs
