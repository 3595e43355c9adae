// dropout(x; p, seed, offset): the mask comes from Philox at (seed, offset,
// element index), so it is a pure function of the attributes (CSE-safe, and any
// shard can regenerate its part). The VJP is dropout of the gradient with the
// same attributes: the same mask and scale.

#include "parallax/kernels/dropout.h"

#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/core/generator.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/op_handles.h"

namespace px {
namespace defs {

namespace {

std::vector<TensorMeta> infer_dropout(const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  require_floating("dropout", inputs[0]);
  double p = attrs.get_float("p");
  if (!(p >= 0.0 && p <= 1.0)) throw ValueError("dropout: p must be in [0, 1], got " + std::to_string(p));
  return {inputs[0]};
}

std::vector<Tensor> run_dropout(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Tensor x = contiguous_input(inputs[0]);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  visit_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::dropout<T>(x.data<T>(), out.data<T>(), x.numel(), attrs.get_float("p"),
                        static_cast<uint64_t>(attrs.get_int("seed")), static_cast<uint64_t>(attrs.get_int("offset")));
  });
  return {out};
}

std::vector<Tensor> vjp_dropout(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  return {call1(op::dropout(), {g}, ctx.attrs)};
}

// Per element: a compare and a multiply (the random bits are integer work).
OpCost cost_dropout(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 2);
}

// Element i of the mask is Philox at stream position offset + i (row-major over the logical
// shape), so a block of whole leading rows is a contiguous run of the global stream: sharding
// dim 0 is exact once the local offset moves to the block's first element. Other dims would
// need a strided stream.
std::vector<ShardingStrategy> sharding_dropout(const std::vector<TensorMeta>& inputs, const Attrs&) {
  std::vector<int64_t> dims;
  if (inputs[0].ndim() > 0) dims.push_back(0);
  return independent_dims_strategies(1, dims);
}

Attrs localize_dropout(const Attrs& attrs, const LocalContext& ctx) {
  const TensorMeta& global = ctx.global_inputs[0];
  if (global.ndim() == 0 || ctx.input_offsets[0][0] == 0) return attrs;
  auto row_elements = static_cast<uint64_t>(numel(Shape(global.shape.begin() + 1, global.shape.end())));
  // Unsigned arithmetic: the stream position wraps as the kernel's does.
  uint64_t offset =
      static_cast<uint64_t>(attrs.get_int("offset")) + static_cast<uint64_t>(ctx.input_offsets[0][0]) * row_elements;
  Attrs local = attrs;
  local.set("offset", static_cast<int64_t>(offset));
  return local;
}

}  // namespace

OpDef def_dropout() {
  OpDef def;
  def.name = "dropout";
  def.inputs = {{"x"}};
  def.attrs = {{"p", AttrType::Float, std::nullopt},
               {"seed", AttrType::Int, std::nullopt},
               {"offset", AttrType::Int, std::nullopt}};
  def.infer = infer_dropout;
  def.kernel = run_dropout;
  def.vjp = vjp_dropout;
  def.cost = cost_dropout;
  def.sharding = sharding_dropout;
  def.localize_attrs = localize_dropout;
  return def;
}

}  // namespace defs

Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t offset) {
  return call1(op::dropout(), {x},
               {{"p", p}, {"seed", static_cast<int64_t>(seed)}, {"offset", static_cast<int64_t>(offset)}});
}

Tensor dropout(const Tensor& x, double p, Generator& generator) {
  uint64_t offset = generator.advance(static_cast<uint64_t>(x.numel()));
  return dropout(x, p, generator.seed(), offset);
}

}  // namespace px
