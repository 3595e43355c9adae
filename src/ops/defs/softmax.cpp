// softmax and log_softmax: fused, numerically stable kernels along any dim (kernels/softmax.h),
// and their backward ops (softmax_backward, log_softmax_backward: grad, y -> dx, y the forward's
// output), each one row kernel that the forward's VJP calls. The backward ops have no VJP of their
// own (second derivatives through a softmax are refused, as for the norms and fused attention).

#include "parallax/kernels/softmax.h"

#include "ops/defs/common.h"
#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/op_handles.h"

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

// The forward's VJP: the backward op on the gradient and the forward's output, along the same dim.
// The backward runs wherever the composed ops did: meta tensors take its inference, bfloat16 its
// float32 rows, non-contiguous operands a contiguous copy, distributed tensors its sharding rule.
VjpFn softmax_vjp(const OpDef& (*backward)()) {
  return [backward](const VjpContext& ctx) {
    const Tensor& g = ctx.grad_outputs[0];
    if (!g.defined()) return std::vector<Tensor>{Tensor()};
    return call(backward(), {g, ctx.outputs[0]}, ctx.attrs);
  };
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
  def.vjp = softmax_vjp(log ? op::log_softmax_backward : op::softmax_backward);
  def.cost = cost_softmax;
  def.sharding = [name](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return sharding_softmax(name, inputs, attrs);
  };
  return def;
}

// --- the backward ops: softmax_backward(grad, y) and log_softmax_backward(grad, y) -> dx ---
//   softmax_backward:      dx = y * (grad - sum(grad * y, dim))
//   log_softmax_backward:  dx = grad - exp(y) * sum(grad, dim)

std::vector<TensorMeta> infer_softmax_backward(std::string_view op, const std::vector<TensorMeta>& inputs,
                                               const Attrs& attrs) {
  const TensorMeta& y = inputs[1];
  require_gradient_of(op, inputs, y, "y", " (the forward's output)");
  softmax_dim(op, y, attrs);
  return {y};
}

std::vector<Tensor> run_softmax_backward(std::string_view op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                                         bool log) {
  const Tensor& y = inputs[1];
  Tensor grad = contiguous_input(inputs[0]);
  Tensor out = contiguous_input(y);
  Tensor dx = Tensor::empty(y.shape(), y.dtype());
  SoftmaxSplit split = split_at(y.shape(), softmax_dim(op, y.meta_info(), attrs));
  visit_floating(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto kernel = log ? kernels::log_softmax_backward<T> : kernels::softmax_backward<T>;
    kernel(grad.data<T>(), out.data<T>(), dx.data<T>(), split.outer, split.n, split.inner);
  });
  return {dx};
}

// Per element: the row sum's multiply-add (softmax_backward: grad * y; log_softmax_backward: an
// add), then dx's subtract and multiply, and log_softmax_backward's exp (counted as one, as above).
OpCost cost_softmax_backward(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                             const Attrs&) {
  return elementwise_cost(inputs, outputs, 4);
}

// As the forward: the rows along `dim` are independent, so any other dim splits alike on grad, y
// and dx. dx is linear in grad for a fixed y, so a partial grad (P(sum), P(avg)) with y whole gives
// the same partial dx, as the composed ops (mul, sum, sub) it replaces allowed.
std::vector<ShardingStrategy> sharding_softmax_backward(std::string_view op, const std::vector<TensorMeta>& inputs,
                                                        const Attrs& attrs) {
  const TensorMeta& y = inputs[1];
  std::vector<ShardingStrategy> strategies{replicate_all(2)};
  if (y.ndim() > 0) {
    int64_t along = softmax_dim(op, y, attrs);
    for (int64_t d = 0; d < y.ndim(); ++d) {
      if (d != along) add_unique(strategies, {{Shard{d}, Shard{d}}, {Shard{d}}});
    }
  }
  for (ReduceOp reduce : {ReduceOp::Sum, ReduceOp::Avg}) {
    add_unique(strategies, {{Partial{reduce}, Replicate{}}, {Partial{reduce}}});
  }
  return strategies;
}

OpDef softmax_backward_like(std::string name, bool log) {
  OpDef def;
  def.name = name;
  def.inputs = {{"grad"}, {"y"}};
  def.attrs = {{"dim", AttrType::Int, int64_t{-1}}};
  def.infer = [name](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return infer_softmax_backward(name, inputs, attrs);
  };
  def.kernel = [name, log](const std::vector<Tensor>& inputs, const Attrs& attrs) {
    return run_softmax_backward(name, inputs, attrs, log);
  };
  def.cost = cost_softmax_backward;
  def.sharding = [name](const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
    return sharding_softmax_backward(name, inputs, attrs);
  };
  return def;
}

}  // namespace

OpDef def_softmax() { return softmax_like("softmax", /*log=*/false); }
OpDef def_log_softmax() { return softmax_like("log_softmax", /*log=*/true); }
OpDef def_softmax_backward() { return softmax_backward_like("softmax_backward", /*log=*/false); }
OpDef def_log_softmax_backward() { return softmax_backward_like("log_softmax_backward", /*log=*/true); }

}  // namespace defs

Tensor softmax(const Tensor& x, int64_t dim) { return call1(op::softmax(), {x}, {{"dim", dim}}); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return call1(op::log_softmax(), {x}, {{"dim", dim}}); }

}  // namespace px
