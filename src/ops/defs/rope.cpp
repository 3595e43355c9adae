// rope: rotary position embedding on interleaved pairs (x[2i], x[2i+1]) of the
// last dim at position t (dim -2). A rotation is orthogonal, so the VJP is the
// inverse rotation of the gradient: rope with `inverse` flipped. Llama 3's frequency
// scaling rides along as four attributes (factor 1: none).

#include "parallax/kernels/rope.h"

#include <cmath>
#include <numbers>

#include "ops/defs/nn_defs.h"
#include "ops/defs/sharding_rules.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/op_handles.h"

namespace px {
namespace defs {

namespace {

RopeScaling scaling_of(const Attrs& attrs) {
  return {.factor = attrs.get_float("scale_factor"),
          .low_freq_factor = attrs.get_float("low_freq_factor"),
          .high_freq_factor = attrs.get_float("high_freq_factor"),
          .original_max_seq = attrs.get_int("original_max_seq")};
}

std::vector<TensorMeta> infer_rope(const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  const TensorMeta& x = inputs[0];
  require_floating("rope", x);
  if (x.ndim() < 2 || x.shape.back() % 2 != 0) {
    throw ShapeError("rope: expects x [..., T, D] with an even head dim D (rotations act on pairs), got " +
                     named("x", x));
  }
  double theta = attrs.get_float("theta");
  if (!(theta > 0.0)) throw ValueError("rope: theta must be positive, got " + std::to_string(theta));
  RopeScaling scaling = scaling_of(attrs);
  if (!(scaling.factor > 0.0) || !(scaling.low_freq_factor > 0.0) ||
      !(scaling.high_freq_factor > scaling.low_freq_factor) || scaling.original_max_seq <= 0) {
    throw ValueError(
        "rope: scaling needs factor > 0, high_freq_factor > low_freq_factor > 0 and original_max_seq > "
        "0, got factor " +
        std::to_string(scaling.factor) + ", low_freq_factor " + std::to_string(scaling.low_freq_factor) +
        ", high_freq_factor " + std::to_string(scaling.high_freq_factor) + ", original_max_seq " +
        std::to_string(scaling.original_max_seq));
  }
  return {x};
}

// f_i = theta^(-2i/dim) per pair, rescaled as Llama 3 does (see RopeScaling in ops/nn.h).
std::vector<double> rope_frequencies(int64_t dim, double theta, const RopeScaling& scaling) {
  std::vector<double> frequency(static_cast<size_t>(dim / 2));
  const double context = static_cast<double>(scaling.original_max_seq);
  const double low_wavelength = context / scaling.low_freq_factor;    // longer: slowed by `factor`
  const double high_wavelength = context / scaling.high_freq_factor;  // shorter: unchanged
  for (size_t i = 0; i < frequency.size(); ++i) {
    double f = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    if (scaling.scales()) {
      double wavelength = 2.0 * std::numbers::pi / f;
      if (wavelength > low_wavelength) {
        f /= scaling.factor;
      } else if (wavelength >= high_wavelength) {
        double smooth =
            (context / wavelength - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
        f = (1.0 - smooth) * f / scaling.factor + smooth * f;
      }
    }
    frequency[i] = f;
  }
  return frequency;
}

std::vector<Tensor> run_rope(const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Tensor x = contiguous_input(inputs[0]);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  int64_t seq = x.size(-2), dim = x.size(-1);
  int64_t batch = seq * dim == 0 ? 0 : x.numel() / (seq * dim);
  std::vector<double> frequency = rope_frequencies(dim, attrs.get_float("theta"), scaling_of(attrs));
  visit_floating(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    kernels::rope<T>(x.data<T>(), out.data<T>(), batch, seq, dim, frequency.data(), attrs.get_bool("inverse"));
  });
  return {out};
}

std::vector<Tensor> vjp_rope(const VjpContext& ctx) {
  const Tensor& g = ctx.grad_outputs[0];
  if (!g.defined()) return {Tensor()};
  return {rope(g, ctx.attrs.get_float("theta"), !ctx.attrs.get_bool("inverse"), scaling_of(ctx.attrs))};
}

// Per element: two multiplies and an add.
OpCost cost_rope(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 3);
}

// The angle of an element depends on its position along dim -2 and its pair's index in dim -1,
// both read from local indices by the kernel: only the batch dims before them shard (a sharded
// position dim would need a position offset attribute, which rope does not take).
std::vector<ShardingStrategy> sharding_rope(const std::vector<TensorMeta>& inputs, const Attrs&) {
  return independent_dims_strategies(1, dim_range(0, inputs[0].ndim() - 2));
}

}  // namespace

OpDef def_rope() {
  OpDef def;
  def.name = "rope";
  def.inputs = {{"x"}};
  const RopeScaling none;
  def.attrs = {{"theta", AttrType::Float, 10000.0},
               {"inverse", AttrType::Bool, false},
               {"scale_factor", AttrType::Float, none.factor},
               {"low_freq_factor", AttrType::Float, none.low_freq_factor},
               {"high_freq_factor", AttrType::Float, none.high_freq_factor},
               {"original_max_seq", AttrType::Int, none.original_max_seq}};
  def.infer = infer_rope;
  def.kernel = run_rope;
  def.vjp = vjp_rope;
  def.cost = cost_rope;
  def.sharding = sharding_rope;
  return def;
}

}  // namespace defs

Tensor rope(const Tensor& x, double theta, bool inverse, const RopeScaling& scaling) {
  return call1(op::rope(), {x},
               {{"theta", theta},
                {"inverse", inverse},
                {"scale_factor", scaling.factor},
                {"low_freq_factor", scaling.low_freq_factor},
                {"high_freq_factor", scaling.high_freq_factor},
                {"original_max_seq", scaling.original_max_seq}});
}

}  // namespace px
