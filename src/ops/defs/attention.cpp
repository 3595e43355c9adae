// scaled_dot_product_attention: softmax(q kᵀ * scale [+ causal mask]) v, with batch dims
// broadcast, and scaled_dot_product_attention_backward, its VJP as one op. In float32 and
// float64 both run the fused kernels of kernels/attention.h (tiled by query blocks: no [Tq, Tk]
// matrix is kept, the backward recomputes the probabilities block by block); bfloat16 composes
// ops (matmul, softmax, where). Gradients of the backward (second derivatives) are not
// defined, as for PyTorch's fused attention.

#include "parallax/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/defs/common.h"
#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/reduction.h"
#include "parallax/ops/shape.h"

namespace px {
namespace defs {

namespace {

constexpr std::string_view kOp = "scaled_dot_product_attention";
constexpr std::string_view kBackwardOp = "scaled_dot_product_attention_backward";

struct AttentionDims {
  Shape batch;  // broadcast batch dims of q, k and v
  int64_t tq = 0, tk = 0, d = 0, dv = 0;
};

Shape leading(const TensorMeta& meta) { return Shape(meta.shape.begin(), meta.shape.end() - 2); }

AttentionDims attention_dims(const std::vector<TensorMeta>& in) {
  const TensorMeta &q = in[0], &k = in[1], &v = in[2];
  std::string all = named("q", q) + ", " + named("k", k) + ", " + named("v", v);
  if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2) {
    throw ShapeError(std::string(kOp) + ": q, k and v need at least 2 dims ([..., T, D]), got " + all);
  }
  AttentionDims dims;
  dims.tq = q.shape[q.ndim() - 2];
  dims.tk = k.shape[k.ndim() - 2];
  dims.d = q.shape.back();
  dims.dv = v.shape.back();
  if (k.shape.back() != dims.d) {
    throw ShapeError(std::string(kOp) + ": q and k must share the head dim (last dim), got " + all);
  }
  if (v.shape[v.ndim() - 2] != dims.tk) {
    throw ShapeError(std::string(kOp) + ": k and v must share the key length (dim -2), got " + all);
  }
  try {
    dims.batch = broadcast_shapes(broadcast_shapes(leading(q), leading(k), kOp), leading(v), kOp);
  } catch (const ShapeError&) {
    throw ShapeError(std::string(kOp) + ": the batch dims of q, k and v do not broadcast, got " + all);
  }
  return dims;
}

// Where the call's first query sits in the whole sequence: 0, or a rank's offset when the queries
// are split under a causal mask (localize_attention sets it, so the rank's program keeps the op).
int64_t first_query_of(const Attrs& attrs, std::string_view op) {
  const int64_t first = attr_int_or(attrs, "first_query", 0);
  if (first < 0) throw ValueError(std::string(op) + ": first_query must be >= 0, got " + std::to_string(first));
  return first;
}

std::vector<TensorMeta> infer_attention(const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  first_query_of(attrs, kOp);
  require_floating(kOp, inputs[0]);
  require_same_dtype(kOp, inputs);
  AttentionDims dims = attention_dims(inputs);
  Shape out = dims.batch;
  out.push_back(dims.tq);
  out.push_back(dims.dv);
  return {{out, inputs[0].dtype}};
}

double effective_scale(const Tensor& q, const Attrs& attrs) {
  double scale = attrs.get_float("scale");
  return scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(q.shape().back()));
}

Tensor transpose_last(const Tensor& t) { return t.transpose(-2, -1); }

// bool [tq, tk], true where query i may see key j (j <= i), for queries numbered from
// `first_query` (a rank holding a block of the queries numbers them globally).
Tensor causal_keep_mask(int64_t tq, int64_t tk, int64_t first_query = 0) {
  Tensor keys = arange(static_cast<double>(tk)).reshape({1, tk});
  Tensor queries = arange(static_cast<double>(first_query), static_cast<double>(first_query + tq)).reshape({tq, 1});
  return le(keys, queries);
}

// softmax(q kᵀ * scale), with masked scores at -inf.
Tensor attention_probs(const Tensor& q, const Tensor& k, const Attrs& attrs, int64_t first_query = 0) {
  Tensor scores = matmul(q, transpose_last(k)) * effective_scale(q, attrs);
  // On meta tensors (planning) the mask changes no shape; building it would fill a real
  // [tq, tk] bool tensor from the concrete aranges (64M elements at 8192 tokens).
  if (attrs.get_bool("causal") && !scores.is_meta()) {
    Tensor hidden = full({}, -std::numeric_limits<double>::infinity(), scores.dtype());
    scores = where(causal_keep_mask(q.size(-2), k.size(-2), first_query), scores, hidden);
  }
  return softmax(scores, -1);
}

// The fused kernels take dense float32 or float64 buffers; meta tensors (the sharding rules'
// soundness check runs the local facets on them) and bfloat16 take the composed ops.
bool fused(const std::vector<Tensor>& inputs) {
  const DType dtype = inputs[0].dtype();
  if (dtype != DType::Float32 && dtype != DType::Float64) return false;
  return std::all_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.is_dense(); });
}

// q, k and v expanded to their common batch dims and made contiguous (a no-op for the usual
// [B, H, T, D] operands), with the kernels' shape.
struct FusedOperands {
  Tensor q, k, v;
  kernels::AttentionShape shape;
  Shape batch;
};

FusedOperands fused_operands(const Tensor& q, const Tensor& k, const Tensor& v, const Attrs& attrs,
                             int64_t first_query) {
  const AttentionDims dims = attention_dims({q.meta_info(), k.meta_info(), v.meta_info()});
  auto whole = [&](const Tensor& t) {
    Shape shape = dims.batch;
    shape.push_back(t.size(-2));
    shape.push_back(t.size(-1));
    return expand(t, shape).contiguous();
  };
  FusedOperands operands{whole(q), whole(k), whole(v), {}, dims.batch};
  operands.shape = {numel(dims.batch),
                    dims.tq,
                    dims.tk,
                    dims.d,
                    dims.dv,
                    effective_scale(q, attrs),
                    attr_bool_or(attrs, "causal", false),
                    first_query};
  return operands;
}

Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

Tensor fused_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Attrs& attrs, int64_t first_query) {
  const FusedOperands in = fused_operands(q, k, v, attrs, first_query);
  Tensor out = Tensor::empty(with_matrix(in.batch, in.shape.tq, in.shape.dv), q.dtype());
  if (q.dtype() == DType::Float32) {
    kernels::attention_forward(in.q.data<float>(), in.k.data<float>(), in.v.data<float>(), out.data<float>(), in.shape);
  } else {
    kernels::attention_forward(in.q.data<double>(), in.k.data<double>(), in.v.data<double>(), out.data<double>(),
                               in.shape);
  }
  return out;
}

std::vector<Tensor> run_attention(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const int64_t first_query = first_query_of(attrs, kOp);
  if (fused(inputs)) return {fused_forward(inputs[0], inputs[1], inputs[2], attrs, first_query)};
  return {matmul(attention_probs(inputs[0], inputs[1], attrs, first_query), inputs[2])};
}

// One mesh dim of attention. A batch dim splits q, k and v alike (an input broadcasting it, or
// lacking it, stays whole); the queries split with k and v whole, each query row reading all
// keys (under a causal mask, attention_local numbers the block's queries globally); v's value
// dim splits the output's; the output is linear in v.
std::vector<ShardingStrategy> attention_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  AttentionDims dims = attention_dims(in);
  auto batch_rank = static_cast<int64_t>(dims.batch.size());
  StrategyList list(3, 1);
  for (int64_t i = 0; i < batch_rank; ++i) {
    std::vector<Placement> inputs;
    bool any = false;
    for (const TensorMeta& meta : in) {
      inputs.push_back(batch_operand_placement(meta, meta.ndim() - 2, batch_rank, i, dims.batch[i]));
      any = any || inputs.back() != rep();
    }
    if (any) list.add(std::move(inputs), {shard(i)});
  }
  list.add({shard(in[0].ndim() - 2), rep(), rep()}, {shard(batch_rank)});
  list.add({rep(), rep(), shard(in[2].ndim() - 1)}, {shard(batch_rank + 1)});
  for (ReduceOp op : kLinearReduces) list.add({rep(), rep(), partial(op)}, {partial(op)});
  return list.take();
}

// Only a causal call with split queries differs from the op on the local blocks: the rank's
// block numbers its queries from its offset in the whole sequence (first_query, added to the
// call's own). So the rank's program keeps one op (the fused kernels where they apply), and the
// planner prices each rank's block with the keys it sees.
Attrs localize_attention(const Attrs& attrs, const LocalContext& ctx) {
  const int64_t query_dim = ctx.local_inputs[0].ndim() - 2;
  if (!attr_bool_or(attrs, "causal", false) || !sharded_on(ctx.input_placements[0], query_dim)) return attrs;
  const int64_t offset = ctx.input_offsets[0][static_cast<size_t>(query_dim)];
  if (offset == 0) return attrs;
  Attrs local = attrs;
  local.set("first_query", attr_int_or(attrs, "first_query", 0) + offset);
  return local;
}

// With P = softmax(S), S = q kᵀ * scale, out = P v:
// dv = Pᵀ g, dS = P * (g vᵀ - rowsum(g vᵀ * P)) * scale, dq = dS k, dk = dSᵀ q.
std::vector<Tensor> composed_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                      const Attrs& attrs, int64_t first_query) {
  Tensor probs = attention_probs(q, k, attrs, first_query);
  Tensor dv = matmul(transpose_last(probs), g);
  Tensor dprobs = matmul(g, transpose_last(v));
  Tensor dscores = probs * (dprobs - sum(dprobs * probs, {-1}, /*keepdim=*/true)) * effective_scale(q, attrs);
  Tensor dq = matmul(dscores, k);
  Tensor dk = matmul(transpose_last(dscores), q);
  return {sum_to_shape(dq, q.shape()), sum_to_shape(dk, k.shape()), sum_to_shape(dv, v.shape())};
}

std::vector<Tensor> fused_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                   const Attrs& attrs, int64_t first_query) {
  const FusedOperands in = fused_operands(q, k, v, attrs, first_query);
  const Tensor grad = g.contiguous();
  Tensor dq = Tensor::empty(in.q.shape(), q.dtype());
  Tensor dk = Tensor::empty(in.k.shape(), q.dtype());
  Tensor dv = Tensor::empty(in.v.shape(), q.dtype());
  if (q.dtype() == DType::Float32) {
    kernels::attention_backward(in.q.data<float>(), in.k.data<float>(), in.v.data<float>(), grad.data<float>(),
                                dq.data<float>(), dk.data<float>(), dv.data<float>(), in.shape);
  } else {
    kernels::attention_backward(in.q.data<double>(), in.k.data<double>(), in.v.data<double>(), grad.data<double>(),
                                dq.data<double>(), dk.data<double>(), dv.data<double>(), in.shape);
  }
  // Operands that broadcast a batch dim get the sum over it.
  return {sum_to_shape(dq, q.shape()), sum_to_shape(dk, k.shape()), sum_to_shape(dv, v.shape())};
}

std::vector<Tensor> attention_backward(const std::vector<Tensor>& in, const Attrs& attrs, int64_t first_query) {
  if (fused(in)) return fused_backward(in[0], in[1], in[2], in[3], attrs, first_query);
  return composed_backward(in[0], in[1], in[2], in[3], attrs, first_query);
}

std::vector<Tensor> vjp_attention(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor(), Tensor(), Tensor()};
  return call(op::scaled_dot_product_attention_backward(), {ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], g}, ctx.attrs);
}

// --- scaled_dot_product_attention_backward(q, k, v, grad) -> (dq, dk, dv) ---

std::vector<TensorMeta> infer_attention_backward(const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  const std::vector<TensorMeta> forward(inputs.begin(), inputs.begin() + 3);
  const TensorMeta out = infer_attention(forward, attrs)[0];
  if (inputs[3].shape != out.shape || inputs[3].dtype != out.dtype) {
    throw ShapeError(std::string(kBackwardOp) + ": grad " + inputs[3].str() + " must be the forward's output " +
                     out.str());
  }
  return forward;
}

std::vector<Tensor> run_attention_backward(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  return attention_backward(inputs, attrs, first_query_of(attrs, kBackwardOp));
}

// The forward's strategies with grad placed as the output: a batch dim split alike (an operand
// that broadcasts it gets a partial gradient); queries split (k and v read whole, their
// gradients partial sums over the query blocks); v's value dim split (q's and k's gradients
// partial over it).
std::vector<ShardingStrategy> attention_backward_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  const std::vector<TensorMeta> forward(in.begin(), in.begin() + 3);
  AttentionDims dims = attention_dims(forward);
  auto batch_rank = static_cast<int64_t>(dims.batch.size());
  StrategyList list(4, 3);
  const Placement sum = partial(ReduceOp::Sum);
  for (int64_t i = 0; i < batch_rank; ++i) {
    std::vector<Placement> inputs;
    std::vector<Placement> grads;
    bool any = false;
    for (const TensorMeta& meta : forward) {
      inputs.push_back(batch_operand_placement(meta, meta.ndim() - 2, batch_rank, i, dims.batch[i]));
      any = any || inputs.back() != rep();
    }
    if (!any) continue;
    for (const Placement& placement : inputs) grads.push_back(placement == rep() ? sum : placement);
    inputs.push_back(shard(i));
    list.add(std::move(inputs), std::move(grads));
  }
  list.add({shard(in[0].ndim() - 2), rep(), rep(), shard(batch_rank)}, {shard(in[0].ndim() - 2), sum, sum});
  list.add({rep(), rep(), shard(in[2].ndim() - 1), shard(batch_rank + 1)}, {sum, sum, shard(in[2].ndim() - 1)});
  return list.take();
}

// The scores a call computes: what the fused kernel's query blocks compute (kernels/attention.h,
// attention_scores: under a causal mask each block up to its last query's keys, about half of
// Tq·Tk), per batch entry. bfloat16 runs the composite path (matmul, softmax), which computes
// every score. A later shard of a query-sharded causal call (a larger first_query) sees more keys
// than an earlier one; the planner prices the slower of the mesh's first and last shard.
double computed_scores(const AttentionDims& dims, const Attrs& attrs, DType dtype) {
  const double batch = static_cast<double>(numel(dims.batch));
  if (!attr_bool_or(attrs, "causal", false) || dtype == DType::BFloat16) {
    return batch * static_cast<double>(dims.tq) * static_cast<double>(dims.tk);
  }
  kernels::AttentionShape shape;
  shape.tq = dims.tq;
  shape.tk = dims.tk;
  shape.causal = true;
  shape.first_query = attr_int_or(attrs, "first_query", 0);
  return batch * static_cast<double>(kernels::attention_scores(shape));
}

// Recomputing the scores and the four gradient GEMMs: 2·(3·D + 2·Dv) flops per score, plus the
// softmax and its gradient.
OpCost cost_attention_backward(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                               const Attrs& attrs) {
  AttentionDims dims = attention_dims({inputs[0], inputs[1], inputs[2]});
  const double scores = computed_scores(dims, attrs, inputs[0].dtype);
  OpCost cost = elementwise_cost(inputs, outputs, 0);
  cost.flops = scores * (2.0 * static_cast<double>(3 * dims.d + 2 * dims.dv) + 10.0);
  return cost;
}

// Two GEMMs (2·Tq·Tk·D and 2·Tq·Tk·Dv flops per batch entry) plus ~5 flops per score for the softmax.
// Bytes as a fused kernel moves them: q, k, v in, the output out.
OpCost cost_attention(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                      const Attrs& attrs) {
  AttentionDims dims = attention_dims(inputs);
  const double scores = computed_scores(dims, attrs, inputs[0].dtype);
  OpCost cost = elementwise_cost(inputs, outputs, 0);
  cost.flops = scores * (2.0 * static_cast<double>(dims.d + dims.dv) + 5.0);
  return cost;
}

}  // namespace

OpDef def_scaled_dot_product_attention() {
  OpDef def;
  def.name = std::string(kOp);
  def.inputs = {{"q"}, {"k"}, {"v"}};
  def.attrs = {
      {"causal", AttrType::Bool, false}, {"scale", AttrType::Float, 0.0}, {"first_query", AttrType::Int, int64_t{0}}};
  def.infer = infer_attention;
  def.kernel = run_attention;
  def.vjp = vjp_attention;
  def.cost = cost_attention;
  def.sharding = attention_rule;
  def.localize_attrs = localize_attention;
  def.traits.matmul_like = true;
  return def;
}

OpDef def_scaled_dot_product_attention_backward() {
  OpDef def;
  def.name = std::string(kBackwardOp);
  def.inputs = {{"q"}, {"k"}, {"v"}, {"grad"}};
  def.attrs = {
      {"causal", AttrType::Bool, false}, {"scale", AttrType::Float, 0.0}, {"first_query", AttrType::Int, int64_t{0}}};
  def.infer = infer_attention_backward;
  def.kernel = run_attention_backward;
  def.cost = cost_attention_backward;
  def.sharding = attention_backward_rule;
  def.localize_attrs = localize_attention;
  def.traits.matmul_like = true;
  return def;
}

}  // namespace defs

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  return call1(op::scaled_dot_product_attention(), {q, k, v}, {{"causal", causal}, {"scale", scale}});
}

}  // namespace px
