// contiguous and clone: copies into a fresh row-major buffer (contiguous skips
// the copy when the input already is one), plus the copy helpers the other
// shape ops share.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/kernels/copy.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

void copy_into(const Tensor& src, const Tensor& dst) {
  PX_ASSERT(src.shape() == dst.shape() && "copy_into needs equal shapes");
  kernels::copy_strided(src.shape(), {src.raw_data(), src.dtype(), src.strides()},
                        {dst.raw_data(), dst.dtype(), dst.strides()});
}

Tensor contiguous_copy(const Tensor& src, DType dtype) {
  Tensor out = Tensor::empty(src.shape(), dtype);
  copy_into(src, out);
  return out;
}

OpCost copy_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 0);
}

std::string metas_str(const std::vector<TensorMeta>& metas) {
  std::string out;
  for (size_t i = 0; i < metas.size(); ++i) out += (i ? ", " : "") + metas[i].str();
  return out;
}

void require_rank_at_least(std::string_view op, const TensorMeta& meta, int64_t min_rank) {
  if (meta.ndim() >= min_rank) return;
  throw ShapeError(std::string(op) + ": expects a tensor with at least " + std::to_string(min_rank) +
                   (min_rank == 1 ? " dim" : " dims") + ", got " + meta.str());
}

namespace {

std::vector<TensorMeta> infer_same(const std::vector<TensorMeta>& inputs, const Attrs&) { return {inputs[0]}; }

// A copy: every placement passes unchanged.
std::vector<ShardingStrategy> identity_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  std::vector<int64_t> map(in[0].shape.size());
  for (int64_t d = 0; d < in[0].ndim(); ++d) map[d] = d;
  return data_movement_rule(1, 1, map, in[0].dtype);
}

std::vector<Tensor> vjp_identity(const VjpContext& ctx) { return {ctx.grad_outputs[0]}; }

}  // namespace

OpDef def_contiguous() {
  return {.name = "contiguous",
          .inputs = {{"x"}},
          .attrs = {},
          .infer = infer_same,
          .kernel = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
            if (in[0].is_contiguous()) return {in[0]};
            return {contiguous_copy(in[0], in[0].dtype())};
          },
          .vjp = vjp_identity,
          // Charged as a copy: from metas alone we cannot tell, and in a graph it usually follows a permute.
          .cost = copy_cost,
          .sharding = identity_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

OpDef def_clone() {
  return {.name = "clone",
          .inputs = {{"x"}},
          .attrs = {},
          .infer = infer_same,
          .kernel = [](const std::vector<Tensor>& in, const Attrs&) -> std::vector<Tensor> {
            return {contiguous_copy(in[0], in[0].dtype())};
          },
          .vjp = vjp_identity,
          .cost = copy_cost,
          .sharding = identity_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

}  // namespace defs

Tensor contiguous(const Tensor& x) { return call1(op::contiguous(), {x}); }
Tensor clone(const Tensor& x) { return call1(op::clone(), {x}); }

}  // namespace px
