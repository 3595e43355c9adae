// cat: inputs joined along an existing dim into one fresh tensor.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

// The normalized dim, after checking that the inputs agree outside it.
int64_t cat_dim(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  require_same_dtype("cat", in);
  const TensorMeta& first = in[0];
  require_rank_at_least("cat", first, 1);
  int64_t dim = normalize_dim(attrs.get_int("dim"), first.ndim(), "cat");
  for (size_t i = 1; i < in.size(); ++i) {
    bool same_rank = in[i].ndim() == first.ndim();
    for (int64_t d = 0; same_rank && d < first.ndim(); ++d) {
      if (d == dim || in[i].shape[d] == first.shape[d]) continue;
      throw ShapeError("cat: inputs " + metas_str(in) + " differ outside dim " + std::to_string(dim) + " (input " +
                       std::to_string(i) + " dim " + std::to_string(d) + ": " + std::to_string(in[i].shape[d]) +
                       " vs " + std::to_string(first.shape[d]) + ")");
    }
    if (!same_rank) {
      throw ShapeError("cat: inputs " + metas_str(in) + " must have the same number of dims (input " +
                       std::to_string(i) + " has " + std::to_string(in[i].ndim()) + ", input 0 has " +
                       std::to_string(first.ndim()) + ")");
    }
  }
  return dim;
}

std::vector<TensorMeta> infer_cat(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  int64_t dim = cat_dim(in, attrs);
  TensorMeta out = in[0];
  out.shape[dim] = 0;
  for (const TensorMeta& meta : in) out.shape[dim] += meta.shape[dim];
  return {out};
}

// Every input split alike on a dim other than the joined one: each rank joins its blocks.
// Inputs agree outside the cat dim, so their shards line up.
std::vector<ShardingStrategy> cat_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  int64_t dim = cat_dim(in, attrs);
  std::vector<int64_t> map(in[0].shape.size());
  for (int64_t d = 0; d < in[0].ndim(); ++d) map[d] = d == dim ? -1 : d;
  return data_movement_rule(in.size(), 1, map, in[0].dtype);
}

std::vector<Tensor> cat_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  std::vector<TensorMeta> metas;
  for (const Tensor& x : in) metas.push_back(x.meta_info());
  int64_t dim = cat_dim(metas, attrs);
  TensorMeta out_meta = infer_cat(metas, attrs)[0];
  Tensor out = Tensor::empty(out_meta.shape, out_meta.dtype);
  int64_t start = 0;
  for (const Tensor& x : in) {
    Tensor part = Tensor::alias(out, x.shape(), out.strides(), start * out.strides()[dim]);
    copy_into(x, part);
    start += x.shape()[dim];
  }
  return {out};
}

std::vector<Tensor> vjp_cat(const VjpContext& ctx) {
  std::vector<Tensor> grads(ctx.inputs.size());
  const Tensor& grad = ctx.grad_outputs[0];
  if (!grad.defined()) return grads;
  int64_t dim = normalize_dim(ctx.attrs.get_int("dim"), grad.dim(), "cat");
  int64_t start = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    int64_t size = ctx.inputs[i].shape()[dim];
    grads[i] = slice(grad, dim, start, start + size);
    start += size;
  }
  return grads;
}

}  // namespace

OpDef def_cat() {
  return {.name = "cat",
          .inputs = {{.name = "xs", .optional = false, .variadic = true}},
          .attrs = {{"dim", AttrType::Int, int64_t{0}}},
          .infer = infer_cat,
          .kernel = cat_kernel,
          .vjp = vjp_cat,
          .cost = copy_cost,
          .sharding = cat_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

}  // namespace defs

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) { return call1(op::cat(), xs, {{"dim", dim}}); }

}  // namespace px
