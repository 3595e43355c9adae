// expand: a broadcast view; stretched and added dims get stride 0.

#include "ops/defs/shape_defs.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

namespace {

struct Expanded {
  Shape shape;
  Strides strides;
};

Expanded expand_layout(const TensorMeta& input, const Strides& strides, const Shape& target) {
  auto fail = [&](const std::string& why) {
    return ShapeError("expand: cannot expand " + input.str() + " to " + shape_str(target) + " (" + why + ")");
  };
  int64_t lead = static_cast<int64_t>(target.size()) - input.ndim();
  if (lead < 0) throw fail("the target has fewer dims than the input");
  Expanded out{target, Strides(target.size(), 0)};
  for (int64_t i = 0; i < static_cast<int64_t>(target.size()); ++i) {
    int64_t want = target[i];
    if (i < lead) {
      if (want < 0)
        throw fail("new leading dim " + std::to_string(i) + " needs a size >= 0, got " + std::to_string(want));
      continue;
    }
    int64_t have = input.shape[i - lead];
    if (want == -1 || want == have) {
      out.shape[i] = have;
      out.strides[i] = strides[i - lead];
    } else if (want < 0 || have != 1) {
      throw fail("dim " + std::to_string(i) + ": size " + std::to_string(have) + " cannot become " +
                 std::to_string(want) + "; only size-1 dims expand");
    }
  }
  return out;
}

std::vector<TensorMeta> infer_expand(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  return {{expand_layout(in[0], contiguous_strides(in[0].shape), attrs.get_ints("shape")).shape, in[0].dtype}};
}

std::vector<Tensor> expand_kernel(const std::vector<Tensor>& in, const Attrs& attrs) {
  const Tensor& x = in[0];
  Expanded layout = expand_layout(x.meta_info(), x.strides(), attrs.get_ints("shape"));
  return {Tensor::alias(x, std::move(layout.shape), std::move(layout.strides), x.offset())};
}

// An input dim that keeps its size keeps its Shard (after the new leading dims); a
// stretched size-1 dim has nothing to split. Every rank then stretches its own block.
std::vector<ShardingStrategy> expand_rule(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  Shape out = infer_expand(in, attrs)[0].shape;
  int64_t lead = static_cast<int64_t>(out.size()) - in[0].ndim();
  std::vector<int64_t> map(in[0].shape.size(), -1);
  for (int64_t d = 0; d < in[0].ndim(); ++d) {
    if (out[lead + d] == in[0].shape[d]) map[d] = lead + d;
  }
  return data_movement_rule(1, 1, map, in[0].dtype);
}

Attrs localize_expand(const Attrs& attrs, const LocalContext& ctx) {
  Attrs local = attrs;
  local.set("shape", ctx.local_outputs[0].shape);
  return local;
}

std::vector<Tensor> vjp_expand(const VjpContext& ctx) {
  if (!ctx.grad_outputs[0].defined()) return {Tensor()};
  return {sum_to_shape(ctx.grad_outputs[0], ctx.inputs[0].shape())};
}

}  // namespace

OpDef def_expand() {
  return {.name = "expand",
          .inputs = {{"x"}},
          .attrs = {{"shape", AttrType::Ints, std::nullopt}},
          .infer = infer_expand,
          .kernel = expand_kernel,
          .vjp = vjp_expand,
          .cost = free_cost,
          .sharding = expand_rule,
          .localize_attrs = localize_expand,
          .local = {},
          .traits = {.elementwise = false, .view = true}};
}

}  // namespace defs

Tensor expand(const Tensor& x, Shape shape) { return call1(op::expand(), {x}, {{"shape", std::move(shape)}}); }

}  // namespace px
