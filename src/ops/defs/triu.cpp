// triu and tril: keep one triangle of the last two dims, zero the other.

#include "ops/defs/shape_defs.h"
#include "parallax/kernels/triangle.h"
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

template <bool kUpper>
OpDef def_triangle() {
  return {.name = triangle_name<kUpper>(),
          .inputs = {{"x"}},
          .attrs = {{"diagonal", AttrType::Int, int64_t{0}}},
          .infer = infer_triangle<kUpper>,
          .kernel = triangle_kernel<kUpper>,
          .vjp = vjp_triangle<kUpper>,
          .cost = copy_cost,
          .sharding = {},
          .traits = {}};
}

}  // namespace

OpDef def_triu() { return def_triangle<true>(); }
OpDef def_tril() { return def_triangle<false>(); }

}  // namespace defs

Tensor triu(const Tensor& x, int64_t diagonal) { return call1("triu", {x}, {{"diagonal", diagonal}}); }
Tensor tril(const Tensor& x, int64_t diagonal) { return call1("tril", {x}, {{"diagonal", diagonal}}); }

}  // namespace px
