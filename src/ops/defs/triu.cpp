// triu and tril: keep one triangle of the last two dims, zero the other.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/kernels/triangle.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

template <bool kUpper>
constexpr const char* triangle_name() {
  return kUpper ? "triu" : "tril";
}

template <bool kUpper>
std::vector<TensorMeta> infer_triangle(const std::vector<TensorMeta>& in, const Attrs&) {
  require_rank_at_least(triangle_name<kUpper>(), in[0], 2);
  return {in[0]};
}

template <bool kUpper>
std::vector<Tensor> triangle_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  Tensor out = contiguous_copy(in[0], in[0].dtype());
  int64_t rows = out.shape()[out.dim() - 2], cols = out.shape()[out.dim() - 1];
  int64_t batch = rows * cols == 0 ? 0 : out.numel() / (rows * cols);
  kernels::mask_triangle(out.raw_data(), out.dtype(), batch, rows, cols, attrs.get_int("diagonal"), kUpper);
  return {out};
}

template <bool kUpper>
std::vector<Tensor> vjp_triangle(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  int64_t diagonal = ctx.attrs.get_int("diagonal");
  return {kUpper ? triu(ctx.grad_outputs[0], diagonal) : tril(ctx.grad_outputs[0], diagonal)};
}

// Every dim shards: batch dims trivially, and the matrix dims too once the diagonal moves with
// the local block (see localize_triangle).
std::vector<ShardingStrategy> sharding_triangle(const std::vector<TensorMeta>& inputs, const Attrs&) {
  return independent_dims_strategies(1, dim_range(0, inputs[0].ndim()));
}

// Global element (i, j) is kept when j >= i + diagonal (triu; <= for tril). In a local block
// starting at (row, col) it sits at (i - row, j - col), so the same test holds locally with
// diagonal + row - col.
Attrs localize_triangle(const Attrs& attrs, const LocalContext& ctx) {
  const Shape& offset = ctx.input_offsets[0];
  if (offset.size() < 2) return attrs;
  int64_t shift = offset[offset.size() - 2] - offset[offset.size() - 1];
  if (shift == 0) return attrs;
  Attrs local = attrs;
  local.set("diagonal", attrs.get_int("diagonal") + shift);
  return local;
}

template <bool kUpper>
OpDef def_triangle() {
  return {.name = triangle_name<kUpper>(),
          .inputs = {{"x"}},
          .attrs = {{"diagonal", AttrType::Int, int64_t{0}}},
          .infer = infer_triangle<kUpper>,
          .kernel = triangle_kernel<kUpper>,
          .vjp = vjp_triangle<kUpper>,
          .cost = copy_cost,
          .sharding = sharding_triangle,
          .localize_attrs = localize_triangle,
          .local = {},
          .traits = {}};
}

}  // namespace

OpDef def_triu() { return def_triangle<true>(); }
OpDef def_tril() { return def_triangle<false>(); }

}  // namespace defs

Tensor triu(const Tensor& x, int64_t diagonal) { return call1(op::triu(), {x}, {{"diagonal", diagonal}}); }
Tensor tril(const Tensor& x, int64_t diagonal) { return call1(op::tril(), {x}, {{"diagonal", diagonal}}); }

}  // namespace px
