// Index ops: embedding (row gather), embedding_backward (its dense scatter-add,
// whose own VJP is embedding again) and one_hot. Kernels in kernels/embedding.h.

#include "parallax/kernels/embedding.h"

#include "ops/defs/nn_defs.h"
#include "parallax/ops/nn.h"

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

}  // namespace

OpDef def_embedding() {
  OpDef def;
  def.name = "embedding";
  def.inputs = {{"weight"}, {"indices"}};
  def.infer = infer_embedding;
  def.kernel = run_embedding;
  def.vjp = vjp_embedding;
  def.cost = cost_embedding;
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
  return def;
}

}  // namespace defs

Tensor embedding(const Tensor& weight, const Tensor& indices) { return call1("embedding", {weight, indices}); }

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  return call1("embedding_backward", {grad, indices}, {{"num_weights", num_weights}});
}

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  return call1("one_hot", {indices}, {{"num_classes", num_classes}, {"dtype", dtype}});
}

}  // namespace px
