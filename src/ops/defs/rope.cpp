// rope: rotary position embedding on interleaved pairs (x[2i], x[2i+1]) of the
// last dim at position t (dim -2). A rotation is orthogonal, so the VJP is the
// inverse rotation of the gradient: rope with `inverse` flipped.

#include "parallax/kernels/rope.h"

#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/nn.h"

namespace px {
namespace defs {

namespace {

std::vector<TensorMeta> infer_rope(const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  const TensorMeta& x = inputs[0];
  require_floating("rope", x);
  if (x.ndim() < 2 || x.shape.back() % 2 != 0) {
    throw ShapeError("rope: expects x [..., T, D] with an even head dim D (rotations act on pairs), got " +
                     named("x", x));
  }
  double theta = attrs.get_float("theta");
  if (!(theta > 0.0)) throw ValueError("rope: theta must be positive, got " + std::to_string(theta));
  return {x};
}

std::vector<Tensor> run_rope(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Tensor x = contiguous_input(inputs[0]);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  int64_t seq = x.size(-2), dim = x.size(-1);
  int64_t batch = seq * dim == 0 ? 0 : x.numel() / (seq * dim);
  visit_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::rope<T>(x.data<T>(), out.data<T>(), batch, seq, dim, attrs.get_float("theta"), attrs.get_bool("inverse"));
  });
  return {out};
}

std::vector<Tensor> vjp_rope(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  return {rope(g, ctx.attrs.get_float("theta"), !ctx.attrs.get_bool("inverse"))};
}

// Per element: two multiplies and an add.
OpCost cost_rope(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 3);
}

// The angle of an element depends on its position along dim -2 and its pair's index in dim -1,
// both read from local indices by the kernel: only the batch dims before them shard (a sharded
// position dim would need a position offset attribute, which rope does not take).
std::vector<ShardingStrategy> sharding_rope(const std::vector<TensorMeta>& inputs, const Attrs&) {
  return independent_dims_strategies(1, dim_range(0, inputs[0].ndim() - 2));
}

}  // namespace

OpDef def_rope() {
  OpDef def;
  def.name = "rope";
  def.inputs = {{"x"}};
  def.attrs = {{"theta", AttrType::Float, 10000.0}, {"inverse", AttrType::Bool, false}};
  def.infer = infer_rope;
  def.kernel = run_rope;
  def.vjp = vjp_rope;
  def.cost = cost_rope;
  def.sharding = sharding_rope;
  return def;
}

}  // namespace defs

Tensor rope(const Tensor& x, double theta, bool inverse) {
  return call1("rope", {x}, {{"theta", theta}, {"inverse", inverse}});
}

}  // namespace px
