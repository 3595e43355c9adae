// argmax: i64 index of the largest element along one dim, or over the flattened
// tensor when `dim` is none. First occurrence on ties; NaN counts as largest.
// Not differentiable.

#include "ops/defs/reduce.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/reduction.h"

namespace px {

namespace defs {

namespace {

// The reduced dims: the one named, or all of them.
std::vector<int64_t> argmax_dims(const TensorMeta& input, const Attrs& attrs) {
  std::optional<int64_t> dim = attrs.get_optional_int("dim");
  if (!dim) return reduce_dims("argmax", {}, input.ndim());
  return reduce_dims("argmax", {*dim}, input.ndim());
}

Shape argmax_shape(const TensorMeta& input, const Attrs& attrs) {
  return reduced_shape(input.shape, argmax_dims(input, attrs), attrs.get_bool("keepdim"));
}

std::vector<TensorMeta> infer_argmax(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  require_numeric("argmax", in[0]);
  std::vector<int64_t> dims = argmax_dims(in[0], attrs);
  require_nonempty_reduction("argmax", in[0], dims);
  return {{reduced_shape(in[0].shape, dims, attrs.get_bool("keepdim")), DType::Int64}};
}

std::vector<Tensor> argmax_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  Tensor out = Tensor::empty(argmax_shape(x.meta_info(), attrs), DType::Int64);
  kernels::ReducePlan plan = kernels::make_reduce_plan(x.shape(), x.strides(), argmax_dims(x.meta_info(), attrs));
  visit_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      PX_ASSERT(false && "bool argmax is rejected by inference");
    } else {
      kernels::argmax<T>(x.data<T>(), plan, out.data<int64_t>());
    }
  });
  return {out};
}

// Only unreduced dims shard: the index of a part's maximum is not the global index, and which
// part holds the global maximum is not known locally.
std::vector<ShardingStrategy> sharding_argmax(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return reduction_strategies(in[0].ndim(), argmax_dims(in[0], attrs), attrs.get_bool("keepdim"), {});
}

}  // namespace

OpDef def_argmax() {
  return {.name = "argmax",
          .inputs = {{"x"}},
          .attrs = {{"dim", AttrType::OptionalInt, NoneAttr{}}, {"keepdim", AttrType::Bool, false}},
          .infer = infer_argmax,
          .kernel = argmax_kernel,
          .vjp = {},
          .cost = reduction_cost,
          .sharding = sharding_argmax,
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

}  // namespace defs

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  AttrValue dim_attr = dim ? AttrValue(*dim) : AttrValue(NoneAttr{});
  return call1(op::argmax(), {x}, {{"dim", dim_attr}, {"keepdim", keepdim}});
}

}  // namespace px
