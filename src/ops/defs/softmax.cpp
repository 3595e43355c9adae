// softmax and log_softmax: fused, numerically stable kernels along any dim
// (kernels/softmax.h), VJPs written with ops.

#include "parallax/kernels/softmax.h"

#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/reduction.h"

namespace px {
namespace defs {

namespace {

// The input viewed as [outer, n, inner] with the softmax running along n.
struct SoftmaxSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

SoftmaxSplit split_at(const Shape& shape, int64_t dim) {
  SoftmaxSplit split;
  if (shape.empty()) return split;  // a scalar is one row of one element
  for (int64_t d = 0; d < dim; ++d) split.outer *= shape[d];
  split.n = shape[dim];
  for (size_t d = dim + 1; d < shape.size(); ++d) split.inner *= shape[d];
  return split;
}

int64_t softmax_dim(std::string_view op, const TensorMeta& x, const Attrs& attrs) {
  return normalize_dim(attrs.get_int("dim"), x.ndim(), std::string(op) + " on " + named("x", x));
}

std::vector<TensorMeta> infer_softmax_like(std::string_view op, const std::vector<TensorMeta>& inputs,
                                           const Attrs& attrs) {
  require_floating(op, inputs[0]);
  softmax_dim(op, inputs[0], attrs);
  return {inputs[0]};
}

Tensor run_softmax(const Tensor& x, const Attrs& attrs, bool log) {
  Tensor in = contiguous_input(x);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  SoftmaxSplit split = split_at(x.shape(), softmax_dim(log ? "log_softmax" : "softmax", x.meta_info(), attrs));
  visit_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto kernel = log ? kernels::log_softmax<T> : kernels::softmax<T>;
    kernel(in.data<T>(), out.data<T>(), split.outer, split.n, split.inner);
  });
  return out;
}

// The dims of a keepdim reduction along the softmax dim (none for a scalar: all of it).
std::vector<int64_t> reduced_dims(const Tensor& y, const Attrs& attrs) {
  if (y.dim() == 0) return {};
  return {normalize_dim(attrs.get_int("dim"), y.dim(), "softmax")};
}

// dx = y * (g - sum(g * y, dim)).
std::vector<Tensor> vjp_softmax(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  const Tensor& y = ctx.outputs[0];
  return {y * (g - sum(g * y, reduced_dims(y, ctx.attrs), /*keepdim=*/true))};
}

// dx = g - exp(y) * sum(g, dim).
std::vector<Tensor> vjp_log_softmax(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  const Tensor& y = ctx.outputs[0];
  return {g - exp(y) * sum(g, reduced_dims(y, ctx.attrs), /*keepdim=*/true)};
}

// Per element: a compare for the max, a subtract, an exp, an add and a scale.
OpCost cost_softmax(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 5);
}

// Rows along `dim` are independent: any other dim shards. No partials (not linear, not monotone).
std::vector<ShardingStrategy> sharding_softmax(std::string_view op, const std::vector<TensorMeta>& inputs,
                                               const Attrs& attrs) {
  const TensorMeta& x = inputs[0];
  std::vector<int64_t> dims;
  if (x.ndim() > 0) {
    int64_t along = softmax_dim(op, x, attrs);
    for (int64_t d = 0; d < x.ndim(); ++d) {
      if (d != along) dims.push_back(d);
    }
  }
  return independent_dims_strategies(1, dims);
}

OpDef softmax_like(std::string name, bool log) {
  OpDef def;
  def.name = name;
  def.inputs = {{"x"}};
  def.attrs = {{"dim", AttrType::Int, int64_t{-1}}};
  def.infer = [name](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return infer_softmax_like(name, inputs, attrs);
  };
  def.kernel = [log](const std::vector<Tensor>& inputs, const Attrs& attrs) {
    return std::vector<Tensor>{run_softmax(inputs[0], attrs, log)};
  };
  def.vjp = log ? vjp_log_softmax : vjp_softmax;
  def.cost = cost_softmax;
  def.sharding = [name](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return sharding_softmax(name, inputs, attrs);
  };
  return def;
}

}  // namespace

OpDef def_softmax() { return softmax_like("softmax", /*log=*/false); }
OpDef def_log_softmax() { return softmax_like("log_softmax", /*log=*/true); }

}  // namespace defs

Tensor softmax(const Tensor& x, int64_t dim) { return call1("softmax", {x}, {{"dim", dim}}); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return call1("log_softmax", {x}, {{"dim", dim}}); }

}  // namespace px
