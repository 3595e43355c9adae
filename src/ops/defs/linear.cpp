// linear: x·weightᵀ + bias with weight [out, in] and x [..., in]. The kernel is
// one GEMM over all leading dims of x (folded into rows when x's strides allow)
// reading the weight transposed in place, with the bias pre-broadcast into the
// output and accumulated by BLAS (beta = 1).

#include "ops/defs/matmul.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/op_handles.h"

namespace px {

namespace defs {

namespace {

std::string operands(const std::vector<TensorMeta>& in) {
  return "input " + in[0].str() + " and weight " + in[1].str();
}

std::vector<TensorMeta> infer_linear(const std::vector<TensorMeta>& in, const Attrs&) {
  const TensorMeta& x = in[0];
  const TensorMeta& w = in[1];
  if (x.ndim() == 0 || w.ndim() != 2) {
    throw ShapeError("linear: expects input [..., in] (at least 1 dim) and weight [out, in], got " + operands(in));
  }
  require_gemm_dtype("linear", in);
  int64_t x_dim = x.ndim() - 1;
  if (x.shape[x_dim] != w.shape[1]) {
    throw ShapeError("linear: " + operands(in) + " cannot be contracted (input dim " + std::to_string(x_dim) + " = " +
                     std::to_string(x.shape[x_dim]) + ", weight dim 1 = " + std::to_string(w.shape[1]) + ")");
  }
  if (in.size() == 3 && in[2].shape != Shape{w.shape[0]}) {
    throw ShapeError("linear: bias " + in[2].str() + " does not match weight " + w.str() + " (expected shape [" +
                     std::to_string(w.shape[0]) + "])");
  }
  Shape out(x.shape.begin(), x.shape.end() - 1);
  out.push_back(w.shape[0]);
  return {{out, x.dtype}};
}

void fill_with_bias(const Tensor& bias, const Tensor& out) {
  int64_t n = bias.shape()[0];
  int64_t rows = n == 0 ? 0 : out.numel() / n;
  visit_dtype(bias.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, BFloat16>) {
      kernels::broadcast_rows<T>(bias.data<T>(), bias.strides()[0], n, out.data<T>(), rows);
    } else {
      PX_ASSERT(false && "GEMM dtypes are checked by inference");
    }
  });
}

std::vector<Tensor> linear_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  Tensor out = Tensor::empty(infer_linear({x.meta_info(), w.meta_info()}, attrs)[0].shape, x.dtype());
  Shape batch = x.dim() > 2 ? Shape(x.shape().begin(), x.shape().end() - 2) : Shape{};
  kernels::MatrixLayout weight_t{w.shape()[1], w.shape()[0], w.strides()[1], w.strides()[0]};
  kernels::BatchedMatmul args{batch, batch_strides(x, batch), Strides(batch.size(), 0), lhs_matrix(x), weight_t};
  double beta = 0;
  if (in.size() == 3) {
    fill_with_bias(in[2], out);
    beta = 1;
  }
  run_batched_matmul(x, w, out, args, beta);
  return {out};
}

// grad_x = g·W, grad_W = gᵀ·x over all leading dims flattened, grad_b = Σ g over them.
std::vector<Tensor> vjp_linear(const VjpContext& ctx) {
  const Tensor& grad = ctx.grad_outputs[0];
  if (!grad.defined()) return std::vector<Tensor>(ctx.inputs.size());
  const Tensor& x = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  int64_t rows = numel(std::span(x.shape()).first(x.shape().size() - 1));
  Tensor grad_2d = call1(op::reshape(), {grad}, {{"shape", Shape{rows, w.shape()[0]}}});
  Tensor x_2d = call1(op::reshape(), {x}, {{"shape", Shape{rows, w.shape()[1]}}});
  Tensor grad_t = call1(op::transpose(), {grad_2d}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  std::vector<Tensor> grads{call1(op::matmul(), {grad, w}), call1(op::matmul(), {grad_t, x_2d})};
  if (ctx.inputs.size() == 3) {
    grads.push_back(call1(op::sum(), {grad_2d}, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}));
  }
  return grads;
}

OpCost cost_linear(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&) {
  OpCost cost;
  double outputs = static_cast<double>(out[0].numel());
  cost.flops = 2.0 * outputs * static_cast<double>(in[1].shape[1]) + (in.size() == 3 ? outputs : 0.0);
  for (const TensorMeta& input : in) cost.bytes_read += static_cast<double>(input.nbytes());
  cost.bytes_written = static_cast<double>(out[0].nbytes());
  return cost;
}

// One mesh dim of linear. Leading dims of x split the output alike; weight rows (with the
// bias) split the output features; a split contraction leaves partial sums, where the bias
// must be partial too so that it is added once; and the output is linear in (x, bias) and
// in (weight, bias).
std::vector<ShardingStrategy> linear_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  const bool has_bias = in.size() == 3;
  const int64_t last = in[0].ndim() - 1;
  auto with_bias = [&](Placement x, Placement w, const Placement& b) {
    std::vector<Placement> inputs{std::move(x), std::move(w)};
    if (has_bias) inputs.push_back(b);
    return inputs;
  };
  StrategyList list(in.size(), 1);
  for (int64_t d = 0; d < last; ++d) list.add(with_bias(shard(d), rep(), rep()), {shard(d)});
  list.add(with_bias(rep(), shard(0), shard(0)), {shard(last)});
  list.add(with_bias(shard(last), shard(1), partial(ReduceOp::Sum)), {partial(ReduceOp::Sum)});
  for (ReduceOp op : kLinearReduces) {
    list.add(with_bias(partial(op), rep(), partial(op)), {partial(op)});
    list.add(with_bias(rep(), partial(op), partial(op)), {partial(op)});
  }
  return list.take();
}

}  // namespace

OpDef def_linear() {
  return {.name = "linear",
          .inputs = {{"x"}, {"weight"}, {.name = "bias", .optional = true}},
          .attrs = {},
          .infer = infer_linear,
          .kernel = linear_kernel,
          .vjp = vjp_linear,
          .cost = cost_linear,
          .sharding = linear_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = false, .collective = false, .matmul_like = true}};
}

}  // namespace defs

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (bias.defined()) return call1(op::linear(), {x, weight, bias});
  return call1(op::linear(), {x, weight});
}

}  // namespace px
