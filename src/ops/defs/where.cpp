// where(cond, a, b) = cond ? a : b elementwise; cond is bool, a and b share a
// dtype (any), and all three broadcast together.
#include "ops/defs/common.h"
#include "ops/defs/elementwise.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/kernels/elementwise.h"
#include "parallax/ops/elementwise.h"

namespace px::defs {

namespace {

// Broadcast of all three shapes; the error names all three, since any pair may be the culprit.
Shape where_shape(const std::vector<TensorMeta>& in) {
  try {
    return broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape, "where"), in[2].shape, "where");
  } catch (const ShapeError&) {
    throw ShapeError("where: cond " + in[0].str() + ", a " + in[1].str() + " and b " + in[2].str() +
                     " cannot be broadcast together");
  }
}

std::vector<TensorMeta> infer_where(const std::vector<TensorMeta>& in, const Attrs&) {
  if (in[0].dtype != DType::Bool) {
    throw DTypeError("where: cond must be a bool tensor, got " + in[0].str() + " (compare with eq/ne/lt/... first)");
  }
  require_same_dtype("where", {in[1], in[2]});
  return {{where_shape(in), in[1].dtype}};
}

std::vector<Tensor> where_kernel(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor& cond = in[0];
  const Tensor& a = in[1];
  const Tensor& b = in[2];
  Shape shape = where_shape({cond.meta_info(), a.meta_info(), b.meta_info()});
  Tensor out = Tensor::empty(shape, a.dtype());
  if (out.numel() > 0) {
    kernels::where(a.dtype(), out.raw_data(), shape, cond.data<bool>(), broadcast_strides_of(cond, shape), a.raw_data(),
                   broadcast_strides_of(a, shape), b.raw_data(), broadcast_strides_of(b, shape));
  }
  return {out};
}

std::vector<Tensor> vjp_where(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined() || !is_floating(g.dtype())) return {Tensor(), Tensor(), Tensor()};
  const Tensor& cond = ctx.inputs[0];
  Tensor zero = scalar_tensor(0.0, g.dtype());
  return {Tensor(), input_grad(ctx.inputs[1], where(cond, g, zero)), input_grad(ctx.inputs[2], where(cond, zero, g))};
}

}  // namespace

OpDef def_where() {
  OpDef def;
  def.name = "where";
  def.inputs = {{"cond"}, {"a"}, {"b"}};
  def.infer = infer_where;
  def.kernel = where_kernel;
  def.vjp = vjp_where;
  def.cost = flops_per_element(1);
  def.sharding = pointwise_rule("where");
  def.traits.elementwise = true;
  return def;
}

}  // namespace px::defs
