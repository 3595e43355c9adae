// Index ops: embedding (row gather), embedding_backward (its dense scatter-add,
// whose own VJP is embedding again) and one_hot. Kernels in kernels/embedding.h.

#include "parallax/kernels/embedding.h"

#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {
namespace defs {

namespace {

void require_indices(std::string_view op, const TensorMeta& indices) {
  if (indices.dtype != DType::Int64) {
    throw DTypeError(std::string(op) + ": indices must be i64, got " + indices.str());
  }
}

Shape with_trailing(Shape shape, int64_t extent) {
  shape.push_back(extent);
  return shape;
}

// ---- embedding(weight [V, D], indices [...]) -> [..., D] ----

std::vector<TensorMeta> infer_embedding(const std::vector<TensorMeta>& inputs, const Attrs&) {
  const TensorMeta& weight = inputs[0];
  const TensorMeta& indices = inputs[1];
  if (weight.ndim() != 2) {
    throw ShapeError("embedding: " + named("weight", weight) + " must be 2-D [num_embeddings, embedding_dim]");
  }
  require_indices("embedding", indices);
  return {{with_trailing(indices.shape, weight.shape[1]), weight.dtype}};
}

std::vector<Tensor> run_embedding(const std::vector<Tensor>& inputs, const Attrs&) {
  Tensor weight = contiguous_input(inputs[0]);
  Tensor indices = contiguous_input(inputs[1]);
  Tensor out = Tensor::empty(with_trailing(indices.shape(), weight.size(1)), weight.dtype());
  visit_dtype(weight.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::embedding<T>(weight.data<T>(), weight.size(0), weight.size(1), indices.data<int64_t>(), indices.numel(),
                          out.data<T>());
  });
  return {out};
}

std::vector<Tensor> vjp_embedding(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor(), Tensor()};
  return {embedding_backward(g, ctx.inputs[1], ctx.inputs[0].size(0)), Tensor()};
}

// Reads the gathered rows and the indices; moves data, computes nothing.
OpCost cost_embedding(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  double out_bytes = static_cast<double>(outputs[0].nbytes());
  return {0, out_bytes + static_cast<double>(inputs[1].nbytes()), out_bytes};
}

// ---- embedding's sharding ----

// Indices relative to a block of `rows` table rows starting at `offset`: the shifted indices
// with those outside the block replaced by 0 (so a lookup stays in range), and the bool mask of
// the outside ones. Written with ops, so a traced local call records it.
struct BlockIndices {
  Tensor safe;
  Tensor outside;
};

BlockIndices block_indices(const Tensor& indices, int64_t offset, int64_t rows) {
  bool meta = indices.is_meta();
  Tensor shifted = offset == 0 ? indices : indices - full({}, static_cast<double>(offset), DType::Int64, meta);
  Tensor zero = zeros({}, DType::Int64, meta);
  // Below the block fails the first test only, above it the second only: they differ exactly outside.
  Tensor outside = ne(ge(shifted, zero), lt(shifted, full({}, static_cast<double>(rows), DType::Int64, meta)));
  return {where(outside, zero, shifted), outside};
}

// Indices split on any of their dims split the output alike; weight columns split the
// output's last dim; weight rows give each rank the lookups that fall in its rows, valid
// where the mask is false (MaskPartial); a gather commutes with every partial reduction.
std::vector<ShardingStrategy> embedding_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  const TensorMeta& weight = in[0];
  const TensorMeta& indices = in[1];
  StrategyList list(2, 1);
  for (int64_t d = 0; d < indices.ndim(); ++d) list.add({rep(), shard(d)}, {shard(d)});
  list.add({shard(1), rep()}, {shard(indices.ndim())});
  list.add({shard(0), rep()}, {MaskPartial{weight.shape[0]}});
  if (partial_allowed(weight.dtype)) {
    for (ReduceOp op : kAllReduces) list.add({partial(op), rep()}, {partial(op)});
  }
  return list.take();
}

// Under a row-split weight: look up the indices in this rank's rows and hand back which
// lookups are not this rank's. The output is not zeroed there: redistribution applies the mask.
LocalResult embedding_local(const std::vector<Tensor>& inputs, const Attrs& attrs, const LocalContext& ctx) {
  if (!has_mask_partial(ctx.output_placements[0])) return {call(op::embedding(), inputs, attrs), {}};
  const Tensor& weight = inputs[0];
  const Tensor& indices = inputs[1];
  BlockIndices block = block_indices(indices, ctx.input_offsets[0][0], weight.size(0));
  // An empty block has no row to look up: every lookup is masked, so any value does.
  Tensor out = weight.size(0) == 0
                   ? zeros(ctx.local_outputs[0].shape, weight.dtype(), weight.is_meta() || indices.is_meta())
                   : embedding(weight, block.safe);
  return {{out}, {unsqueeze(block.outside, -1)}};
}

// ---- embedding_backward(grad [..., D], indices [...]; num_weights) -> [num_weights, D] ----

std::vector<TensorMeta> infer_embedding_backward(const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  const TensorMeta& grad = inputs[0];
  const TensorMeta& indices = inputs[1];
  require_floating("embedding_backward", grad);
  require_indices("embedding_backward", indices);
  bool matches =
      grad.ndim() == indices.ndim() + 1 && std::equal(indices.shape.begin(), indices.shape.end(), grad.shape.begin());
  if (!matches) {
    throw ShapeError("embedding_backward: " + named("grad", grad) + " does not match " + named("indices", indices) +
                     " (grad must be the indices' shape plus one trailing embedding dim)");
  }
  int64_t num_weights = attrs.get_int("num_weights");
  if (num_weights < 0) {
    throw ValueError("embedding_backward: num_weights must be >= 0, got " + std::to_string(num_weights));
  }
  return {{{num_weights, grad.shape.back()}, grad.dtype}};
}

std::vector<Tensor> run_embedding_backward(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Tensor grad = contiguous_input(inputs[0]);
  Tensor indices = contiguous_input(inputs[1]);
  int64_t vocab = attrs.get_int("num_weights");
  int64_t dim = grad.shape().back();
  Tensor out = Tensor::zeros({vocab, dim}, grad.dtype());  // the scatter-add accumulates into it
  visit_floating(grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::embedding_backward<T>(grad.data<T>(), indices.data<int64_t>(), indices.numel(), dim, vocab, out.data<T>());
  });
  return {out};
}

// Linear in grad: the VJP gathers the output gradient's rows back.
std::vector<Tensor> vjp_embedding_backward(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor(), Tensor()};
  return {embedding(g, ctx.inputs[1]), Tensor()};
}

OpCost cost_embedding_backward(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                               const Attrs&) {
  OpCost cost = elementwise_cost(inputs, outputs, 0);
  cost.flops = static_cast<double>(inputs[0].numel());  // one add per gradient element
  return cost;
}

// ---- embedding_backward's sharding ----

// Grad and indices split alike on a lookup dim scatter into partial tables; grad split on the
// embedding dim splits the table's columns; the table's rows split with grad and indices whole
// (each rank keeps the lookups into its rows, embedding_backward_local); linear in grad.
std::vector<ShardingStrategy> embedding_backward_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  const TensorMeta& indices = in[1];
  StrategyList list(2, 1);
  for (int64_t d = 0; d < indices.ndim(); ++d) list.add({shard(d), shard(d)}, {partial(ReduceOp::Sum)});
  list.add({shard(indices.ndim()), rep()}, {shard(1)});
  list.add({rep(), rep()}, {shard(0)});
  for (ReduceOp op : kLinearReduces) list.add({partial(op), rep()}, {partial(op)});
  return list.take();
}

Attrs localize_embedding_backward(const Attrs& attrs, const LocalContext& ctx) {
  Attrs local = attrs;
  local.set("num_weights", ctx.local_outputs[0].shape[0]);
  return local;
}

// Under row-split output: scatter only the lookups into this rank's rows, shifted into them.
LocalResult embedding_backward_local(const std::vector<Tensor>& inputs, const Attrs& attrs, const LocalContext& ctx) {
  if (!sharded_on(ctx.output_placements[0], 0)) return {call(op::embedding_backward(), inputs, attrs), {}};
  const Tensor& grad = inputs[0];
  const Tensor& indices = inputs[1];
  int64_t rows = ctx.local_outputs[0].shape[0];
  bool meta = grad.is_meta() || indices.is_meta();
  if (rows == 0) return {{zeros(ctx.local_outputs[0].shape, grad.dtype(), meta)}, {}};
  BlockIndices block = block_indices(indices, ctx.output_offsets[0][0], rows);
  Tensor kept = where(unsqueeze(block.outside, -1), zeros({}, grad.dtype(), meta), grad);
  return {{embedding_backward(kept, block.safe, rows)}, {}};
}

// ---- one_hot(indices [...]; num_classes, dtype) -> [..., num_classes] ----

std::vector<TensorMeta> infer_one_hot(const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  require_indices("one_hot", inputs[0]);
  int64_t classes = attrs.get_int("num_classes");
  if (classes < 0) {
    throw ValueError("one_hot: num_classes must be >= 0, got " + std::to_string(classes) +
                     " (it is not inferred from the data; pass it explicitly)");
  }
  return {{with_trailing(inputs[0].shape, classes), attrs.get_dtype("dtype")}};
}

std::vector<Tensor> run_one_hot(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Tensor indices = contiguous_input(inputs[0]);
  int64_t classes = attrs.get_int("num_classes");
  DType dtype = attrs.get_dtype("dtype");
  Tensor out = Tensor::zeros(with_trailing(indices.shape(), classes), dtype);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    kernels::one_hot<T>(indices.data<int64_t>(), indices.numel(), classes, out.data<T>());
  });
  return {out};
}

// Integer indices carry no gradient; the VJP exists so that graphs through one_hot differentiate.
std::vector<Tensor> vjp_one_hot(const VjpContext&) { return {Tensor()}; }

OpCost cost_one_hot(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 0);
}

// ---- one_hot's sharding ----

// Split indices split the output alike; the class dim splits with the indices whole, each rank
// encoding the classes in its block (one_hot_local).
std::vector<ShardingStrategy> one_hot_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  StrategyList list(1, 1);
  for (int64_t d = 0; d < in[0].ndim(); ++d) list.add({shard(d)}, {shard(d)});
  list.add({rep()}, {shard(in[0].ndim())});
  return list.take();
}

Attrs localize_one_hot(const Attrs& attrs, const LocalContext& ctx) {
  Attrs local = attrs;
  local.set("num_classes", ctx.local_outputs[0].shape.back());
  return local;
}

LocalResult one_hot_local(const std::vector<Tensor>& inputs, const Attrs& attrs, const LocalContext& ctx) {
  int64_t class_dim = static_cast<int64_t>(ctx.local_outputs[0].shape.size()) - 1;
  if (!sharded_on(ctx.output_placements[0], class_dim)) return {call(op::one_hot(), inputs, attrs), {}};
  const Tensor& indices = inputs[0];
  int64_t classes = ctx.local_outputs[0].shape.back();
  DType dtype = ctx.local_outputs[0].dtype;
  if (classes == 0) return {{zeros(ctx.local_outputs[0].shape, dtype, indices.is_meta())}, {}};
  BlockIndices block = block_indices(indices, ctx.output_offsets[0][class_dim], classes);
  Tensor encoded = one_hot(block.safe, classes, dtype);
  return {{where(unsqueeze(block.outside, -1), zeros({}, dtype, indices.is_meta()), encoded)}, {}};
}

}  // namespace

OpDef def_embedding() {
  OpDef def;
  def.name = "embedding";
  def.inputs = {{"weight"}, {"indices"}};
  def.infer = infer_embedding;
  def.kernel = run_embedding;
  def.vjp = vjp_embedding;
  def.cost = cost_embedding;
  def.sharding = embedding_rule;
  def.local = embedding_local;
  return def;
}

OpDef def_embedding_backward() {
  OpDef def;
  def.name = "embedding_backward";
  def.inputs = {{"grad"}, {"indices"}};
  def.attrs = {{"num_weights", AttrType::Int, std::nullopt}};
  def.infer = infer_embedding_backward;
  def.kernel = run_embedding_backward;
  def.vjp = vjp_embedding_backward;
  def.cost = cost_embedding_backward;
  def.sharding = embedding_backward_rule;
  def.localize_attrs = localize_embedding_backward;
  def.local = embedding_backward_local;
  return def;
}

OpDef def_one_hot() {
  OpDef def;
  def.name = "one_hot";
  def.inputs = {{"indices"}};
  def.attrs = {{"num_classes", AttrType::Int, std::nullopt}, {"dtype", AttrType::DType, DType::Float32}};
  def.infer = infer_one_hot;
  def.kernel = run_one_hot;
  def.vjp = vjp_one_hot;
  def.cost = cost_one_hot;
  def.sharding = one_hot_rule;
  def.localize_attrs = localize_one_hot;
  def.local = one_hot_local;
  return def;
}

}  // namespace defs

Tensor embedding(const Tensor& weight, const Tensor& indices) { return call1(op::embedding(), {weight, indices}); }

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  return call1(op::embedding_backward(), {grad, indices}, {{"num_weights", num_weights}});
}

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  return call1(op::one_hot(), {indices}, {{"num_classes", num_classes}, {"dtype", dtype}});
}

}  // namespace px
