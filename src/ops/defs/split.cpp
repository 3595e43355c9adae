// split and chunk: consecutive views along one dim (torch.split / torch.chunk).
// Their VJP concatenates the output gradients, with zeros for outputs that got none.

#include <algorithm>

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

struct SplitPlan {
  int64_t dim;
  std::vector<int64_t> sizes;
};

SplitPlan split_plan(const TensorMeta& input, const Attrs& attrs) {
  require_rank_at_least("split", input, 1);
  int64_t dim = normalize_dim(attrs.get_int("dim"), input.ndim(), "split");
  const std::vector<int64_t>& sizes = attrs.get_ints("sizes");
  if (sizes.empty()) throw ValueError("split: needs at least one size, got [] for " + input.str());
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0) throw ShapeError("split: negative size in " + shape_str(sizes) + " for " + input.str());
    total += size;
  }
  if (total != input.shape[dim]) {
    throw ShapeError("split: sizes " + shape_str(sizes) + " add up to " + std::to_string(total) + " but dim " +
                     std::to_string(dim) + " of " + input.str() + " has size " + std::to_string(input.shape[dim]));
  }
  return {dim, sizes};
}

// torch.chunk: pieces of ceil(size / chunks), the last one smaller; fewer pieces
// when they run out, except that an empty dim still gives `chunks` empty pieces.
SplitPlan chunk_plan(const TensorMeta& input, const Attrs& attrs) {
  require_rank_at_least("chunk", input, 1);
  int64_t dim = normalize_dim(attrs.get_int("dim"), input.ndim(), "chunk");
  int64_t chunks = attrs.get_int("chunks");
  if (chunks <= 0) throw ValueError("chunk: chunks must be positive, got " + std::to_string(chunks));
  int64_t size = input.shape[dim];
  if (size == 0) return {dim, std::vector<int64_t>(static_cast<size_t>(chunks), 0)};
  int64_t piece = (size - 1) / chunks + 1;
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < size; start += piece) sizes.push_back(std::min(piece, size - start));
  return {dim, sizes};
}

std::vector<TensorMeta> plan_metas(const TensorMeta& input, const SplitPlan& plan) {
  std::vector<TensorMeta> out(plan.sizes.size(), input);
  for (size_t i = 0; i < out.size(); ++i) out[i].shape[plan.dim] = plan.sizes[i];
  return out;
}

std::vector<Tensor> plan_views(const Tensor& x, const SplitPlan& plan) {
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t size : plan.sizes) {
    Shape shape = x.shape();
    shape[plan.dim] = size;
    out.push_back(Tensor::alias(x, std::move(shape), x.strides(), x.offset() + start * x.strides()[plan.dim]));
    start += size;
  }
  return out;
}

// A Shard on a dim other than the split one lands on every piece; the split dim stays whole,
// so each rank cuts the same pieces.
std::vector<ShardingStrategy> pieces_rule(const TensorMeta& input, const SplitPlan& plan) {
  std::vector<int64_t> map(input.shape.size());
  for (int64_t d = 0; d < input.ndim(); ++d) map[d] = d == plan.dim ? -1 : d;
  return data_movement_rule(1, plan.sizes.size(), map, input.dtype);
}

std::vector<Tensor> vjp_concat_grads(const VjpContext& ctx, int64_t dim) {
  const Tensor* any_grad = nullptr;
  for (const Tensor& grad : ctx.grad_outputs) {
    if (grad.defined()) any_grad = &grad;
  }
  if (!any_grad) return {Tensor()};
  std::vector<Tensor> parts;
  for (size_t i = 0; i < ctx.grad_outputs.size(); ++i) {
    const TensorMeta& meta = ctx.outputs[i].meta_info();
    parts.push_back(ctx.grad_outputs[i].defined() ? ctx.grad_outputs[i]
                                                  : full(meta.shape, 0.0, meta.dtype, any_grad->is_meta()));
  }
  return {cat(parts, dim)};
}

}  // namespace

OpDef def_split() {
  return {.name = "split",
          .inputs = {{"x"}},
          .attrs = {{"sizes", AttrType::Ints, std::nullopt}, {"dim", AttrType::Int, int64_t{0}}},
          .infer = [](const std::vector<TensorMeta>& in,
                      const Attrs& attrs) { return plan_metas(in[0], split_plan(in[0], attrs)); },
          .kernel = [](const std::vector<Tensor>& in,
                       const Attrs& attrs) { return plan_views(in[0], split_plan(in[0].meta_info(), attrs)); },
          .vjp =
              [](const VjpContext& ctx) {
                return vjp_concat_grads(ctx, split_plan(ctx.inputs[0].meta_info(), ctx.attrs).dim);
              },
          .cost = free_cost,
          .sharding = [](const std::vector<TensorMeta>& in,
                         const Attrs& attrs) { return pieces_rule(in[0], split_plan(in[0], attrs)); },
          .localize_attrs = {},
          .local = {},
          // Every output aliases the input.
          .traits = {.elementwise = false, .view = true}};
}

OpDef def_chunk() {
  return {.name = "chunk",
          .inputs = {{"x"}},
          .attrs = {{"chunks", AttrType::Int, std::nullopt}, {"dim", AttrType::Int, int64_t{0}}},
          .infer = [](const std::vector<TensorMeta>& in,
                      const Attrs& attrs) { return plan_metas(in[0], chunk_plan(in[0], attrs)); },
          .kernel = [](const std::vector<Tensor>& in,
                       const Attrs& attrs) { return plan_views(in[0], chunk_plan(in[0].meta_info(), attrs)); },
          .vjp =
              [](const VjpContext& ctx) {
                return vjp_concat_grads(ctx, chunk_plan(ctx.inputs[0].meta_info(), ctx.attrs).dim);
              },
          .cost = free_cost,
          .sharding = [](const std::vector<TensorMeta>& in,
                         const Attrs& attrs) { return pieces_rule(in[0], chunk_plan(in[0], attrs)); },
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

}  // namespace defs

std::vector<Tensor> split(const Tensor& x, std::vector<int64_t> sizes, int64_t dim) {
  return call(op::split(), {x}, {{"sizes", std::move(sizes)}, {"dim", dim}});
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  return call(op::chunk(), {x}, {{"chunks", chunks}, {"dim", dim}});
}

}  // namespace px
