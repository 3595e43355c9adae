// scaled_dot_product_attention: softmax(q kᵀ * scale [+ causal mask]) v, with
// batch dims broadcast. The kernel is a composition of ops (matmul, softmax,
// where), which already run as BLAS GEMMs and fused row kernels; the VJP
// recomputes the probabilities rather than storing them.

#include <cmath>
#include <limits>

#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/reduction.h"

namespace px {
namespace defs {

namespace {

constexpr std::string_view kOp = "scaled_dot_product_attention";

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

std::vector<TensorMeta> infer_attention(const std::vector<TensorMeta>& inputs, const Attrs&) {
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

std::vector<Tensor> run_attention(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  return {matmul(attention_probs(inputs[0], inputs[1], attrs), inputs[2])};
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

// Only a causal call with split queries differs from the op on the local blocks.
LocalResult attention_local(const std::vector<Tensor>& inputs, const Attrs& attrs, const LocalContext& ctx) {
  int64_t query_dim = inputs[0].dim() - 2;
  if (!attr_bool_or(attrs, "causal", false) || !sharded_on(ctx.input_placements[0], query_dim)) {
    return {call(std::string(kOp), inputs, attrs), {}};
  }
  Attrs filled = attrs;
  if (!filled.has("scale")) filled.set("scale", 0.0);
  Tensor probs = attention_probs(inputs[0], inputs[1], filled, ctx.input_offsets[0][query_dim]);
  return {{matmul(probs, inputs[2])}, {}};
}

// With P = softmax(S), S = q kᵀ * scale, out = P v:
// dv = Pᵀ g, dS = P * (g vᵀ - rowsum(g vᵀ * P)) * scale, dq = dS k, dk = dSᵀ q.
std::vector<Tensor> vjp_attention(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor(), Tensor(), Tensor()};
  const Tensor &q = ctx.inputs[0], &k = ctx.inputs[1], &v = ctx.inputs[2];
  Tensor probs = attention_probs(q, k, ctx.attrs);
  Tensor dv = matmul(transpose_last(probs), g);
  Tensor dprobs = matmul(g, transpose_last(v));
  Tensor dscores = probs * (dprobs - sum(dprobs * probs, {-1}, /*keepdim=*/true)) * effective_scale(q, ctx.attrs);
  Tensor dq = matmul(dscores, k);
  Tensor dk = matmul(transpose_last(dscores), q);
  return {sum_to_shape(dq, q.shape()), sum_to_shape(dk, k.shape()), sum_to_shape(dv, v.shape())};
}

// Two GEMMs (2·Tq·Tk·D and 2·Tq·Tk·Dv flops per batch entry) plus ~5 flops per score for the softmax.
// Bytes as a fused kernel moves them: q, k, v in, the output out.
OpCost cost_attention(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  AttentionDims dims = attention_dims(inputs);
  double scores = static_cast<double>(numel(dims.batch)) * static_cast<double>(dims.tq) * static_cast<double>(dims.tk);
  OpCost cost = elementwise_cost(inputs, outputs, 0);
  cost.flops = scores * (2.0 * static_cast<double>(dims.d + dims.dv) + 5.0);
  return cost;
}

}  // namespace

OpDef def_scaled_dot_product_attention() {
  OpDef def;
  def.name = std::string(kOp);
  def.inputs = {{"q"}, {"k"}, {"v"}};
  def.attrs = {{"causal", AttrType::Bool, false}, {"scale", AttrType::Float, 0.0}};
  def.infer = infer_attention;
  def.kernel = run_attention;
  def.vjp = vjp_attention;
  def.cost = cost_attention;
  def.sharding = attention_rule;
  def.local = attention_local;
  def.traits.matmul_like = true;
  return def;
}

}  // namespace defs

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, double scale) {
  return call1("scaled_dot_product_attention", {q, k, v}, {{"causal", causal}, {"scale", scale}});
}

}  // namespace px
