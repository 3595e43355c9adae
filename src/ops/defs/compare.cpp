// eq, ne, lt, le, gt, ge: broadcasting comparisons of two tensors of one dtype
// (any dtype, bool included) into a bool tensor. Not differentiable.
#include "ops/defs/common.h"
#include "ops/defs/elementwise.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/kernels/elementwise.h"

namespace px::defs {

namespace {

using kernels::CompareOp;

OpDef compare_def(std::string name, CompareOp op) {
  OpDef def;
  def.name = name;
  def.inputs = {{"a"}, {"b"}};
  def.infer = [name](const std::vector<TensorMeta>& in, const Attrs&) {
    require_same_dtype(name, in);
    return std::vector<TensorMeta>{{broadcast_shapes(in[0].shape, in[1].shape, name), DType::Bool}};
  };
  def.kernel = [name, op](const std::vector<Tensor>& in, const Attrs&) {
    const Tensor& a = in[0];
    const Tensor& b = in[1];
    Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
    Tensor out = Tensor::empty(shape, DType::Bool);
    if (out.numel() > 0) {
      kernels::compare(op, a.dtype(), out.data<bool>(), shape, a.raw_data(), broadcast_strides_of(a, shape),
                       b.raw_data(), broadcast_strides_of(b, shape));
    }
    return std::vector<Tensor>{out};
  };
  def.cost = flops_per_element(1);
  // No partials: a comparison of parts says nothing about the comparison of their reduction.
  def.sharding = pointwise_rule(name);
  def.traits.elementwise = true;
  return def;
}

}  // namespace

OpDef def_eq() { return compare_def("eq", CompareOp::Eq); }
OpDef def_ne() { return compare_def("ne", CompareOp::Ne); }
OpDef def_lt() { return compare_def("lt", CompareOp::Lt); }
OpDef def_le() { return compare_def("le", CompareOp::Le); }
OpDef def_gt() { return compare_def("gt", CompareOp::Gt); }
OpDef def_ge() { return compare_def("ge", CompareOp::Ge); }

}  // namespace px::defs
