// Factories: full, arange, and the counter-based random ops uniform and normal.
// A random op's (seed, offset) are attributes and element i is
// philox(seed, offset, i), so the op is a pure function of its attributes and
// any slice of its output can be regenerated alone.

#include "parallax/kernels/factory.h"

#include <cmath>

#include "ops/defs/factory_defs.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/op_handles.h"

namespace px {

namespace defs {

namespace {

const Shape& checked_shape(std::string_view op, const Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  for (int64_t extent : shape) {
    if (extent < 0) throw ShapeError(std::string(op) + ": negative extent in shape " + shape_str(shape));
  }
  return shape;
}

DType floating_dtype(std::string_view op, const Attrs& attrs) {
  DType dtype = attrs.get_dtype("dtype");
  if (!is_floating(dtype)) {
    throw DTypeError(std::string(op) + ": draws floating-point values; dtype " + std::string(dtype_name(dtype)) +
                     " is not floating (draw f32 and cast)");
  }
  return dtype;
}

OpCost fill_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 0);
}

// Philox rounds plus the transform: a rough count, enough to rank against real work.
OpCost random_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  return elementwise_cost(inputs, outputs, 40);
}

std::vector<TensorMeta> infer_full(const std::vector<TensorMeta>&, const Attrs& attrs) {
  return {{checked_shape("full", attrs), attrs.get_dtype("dtype")}};
}

std::vector<Tensor> full_kernel(const std::vector<Tensor>&, const Attrs& attrs) {
  Tensor out = Tensor::empty(attrs.get_ints("shape"), attrs.get_dtype("dtype"));
  kernels::fill(out.raw_data(), out.dtype(), out.numel(), attrs.get_float("value"));
  return {out};
}

int64_t arange_count(const Attrs& attrs) {
  double start = attrs.get_float("start"), end = attrs.get_float("end"), step = attrs.get_float("step");
  auto describe = [&] {
    return "arange: start " + attr_value_str(start) + ", end " + attr_value_str(end) + ", step " + attr_value_str(step);
  };
  if (attrs.get_dtype("dtype") == DType::Bool) throw DTypeError(describe() + ": cannot make a bool range");
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step)) {
    throw ValueError(describe() + ": need finite bounds and a non-zero step");
  }
  double count = std::ceil((end - start) / step);
  if (count < 0) throw ValueError(describe() + ": the step's sign moves away from end");
  if (count > 0x1.0p62) throw ValueError(describe() + ": too many elements");
  return static_cast<int64_t>(count);
}

std::vector<TensorMeta> infer_arange(const std::vector<TensorMeta>&, const Attrs& attrs) {
  return {{{arange_count(attrs)}, attrs.get_dtype("dtype")}};
}

std::vector<Tensor> arange_kernel(const std::vector<Tensor>&, const Attrs& attrs) {
  Tensor out = Tensor::empty({arange_count(attrs)}, attrs.get_dtype("dtype"));
  kernels::arange(out.raw_data(), out.dtype(), out.numel(), attrs.get_float("start"), attrs.get_float("step"));
  return {out};
}

std::vector<TensorMeta> infer_uniform(const std::vector<TensorMeta>&, const Attrs& attrs) {
  double low = attrs.get_float("low"), high = attrs.get_float("high");
  if (!(low <= high)) {
    throw ValueError("uniform: low " + attr_value_str(low) + " must not exceed high " + attr_value_str(high));
  }
  return {{checked_shape("uniform", attrs), floating_dtype("uniform", attrs)}};
}

std::vector<Tensor> uniform_kernel(const std::vector<Tensor>&, const Attrs& attrs) {
  Tensor out = Tensor::empty(attrs.get_ints("shape"), attrs.get_dtype("dtype"));
  kernels::uniform(out.raw_data(), out.dtype(), out.numel(), attrs.get_float("low"), attrs.get_float("high"),
                   static_cast<uint64_t>(attrs.get_int("seed")), static_cast<uint64_t>(attrs.get_int("offset")));
  return {out};
}

std::vector<TensorMeta> infer_normal(const std::vector<TensorMeta>&, const Attrs& attrs) {
  double stddev = attrs.get_float("std");
  if (!(stddev >= 0)) throw ValueError("normal: std must be >= 0, got " + attr_value_str(stddev));
  return {{checked_shape("normal", attrs), floating_dtype("normal", attrs)}};
}

std::vector<Tensor> normal_kernel(const std::vector<Tensor>&, const Attrs& attrs) {
  Tensor out = Tensor::empty(attrs.get_ints("shape"), attrs.get_dtype("dtype"));
  kernels::normal(out.raw_data(), out.dtype(), out.numel(), attrs.get_float("mean"), attrs.get_float("std"),
                  static_cast<uint64_t>(attrs.get_int("seed")), static_cast<uint64_t>(attrs.get_int("offset")));
  return {out};
}

AttrSpec required(std::string name, AttrType type) { return {std::move(name), type, std::nullopt}; }

}  // namespace

OpDef def_full() {
  return {.name = "full",
          .inputs = {},
          .attrs = {required("shape", AttrType::Ints),
                    required("value", AttrType::Float),
                    {"dtype", AttrType::DType, DType::Float32}},
          .infer = infer_full,
          .kernel = full_kernel,
          .vjp = {},
          .cost = fill_cost,
          .sharding = {},
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

OpDef def_arange() {
  return {.name = "arange",
          .inputs = {},
          .attrs = {{"start", AttrType::Float, 0.0},
                    required("end", AttrType::Float),
                    {"step", AttrType::Float, 1.0},
                    {"dtype", AttrType::DType, DType::Int64}},
          .infer = infer_arange,
          .kernel = arange_kernel,
          .vjp = {},
          .cost = fill_cost,
          .sharding = {},
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

OpDef def_uniform() {
  return {.name = "uniform",
          .inputs = {},
          .attrs = {required("shape", AttrType::Ints),
                    {"low", AttrType::Float, 0.0},
                    {"high", AttrType::Float, 1.0},
                    required("seed", AttrType::Int),
                    {"offset", AttrType::Int, int64_t{0}},
                    {"dtype", AttrType::DType, DType::Float32}},
          .infer = infer_uniform,
          .kernel = uniform_kernel,
          .vjp = {},
          .cost = random_cost,
          .sharding = {},
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

OpDef def_normal() {
  return {.name = "normal",
          .inputs = {},
          .attrs = {required("shape", AttrType::Ints),
                    {"mean", AttrType::Float, 0.0},
                    {"std", AttrType::Float, 1.0},
                    required("seed", AttrType::Int),
                    {"offset", AttrType::Int, int64_t{0}},
                    {"dtype", AttrType::DType, DType::Float32}},
          .infer = infer_normal,
          .kernel = normal_kernel,
          .vjp = {},
          .cost = random_cost,
          .sharding = {},
          .localize_attrs = {},
          .local = {},
          .traits = {}};
}

}  // namespace defs

namespace {

CallOptions meta_option(bool meta) { return CallOptions{.meta = meta}; }

// The element count a draw advances the generator by (0 for a bad shape, which the op then rejects).
uint64_t draw_count(const Shape& shape) {
  for (int64_t extent : shape) {
    if (extent < 0) return 0;
  }
  return static_cast<uint64_t>(numel(shape));
}

}  // namespace

Tensor full(Shape shape, double value, DType dtype, bool meta) {
  return call1(op::full(), {}, {{"shape", std::move(shape)}, {"value", value}, {"dtype", dtype}}, meta_option(meta));
}
Tensor zeros(Shape shape, DType dtype, bool meta) { return full(std::move(shape), 0.0, dtype, meta); }
Tensor ones(Shape shape, DType dtype, bool meta) { return full(std::move(shape), 1.0, dtype, meta); }

Tensor full_like(const Tensor& like, double value) { return full(like.shape(), value, like.dtype(), like.is_meta()); }
Tensor zeros_like(const Tensor& like) { return full_like(like, 0.0); }
Tensor ones_like(const Tensor& like) { return full_like(like, 1.0); }

Tensor arange(double end, DType dtype) { return arange(0.0, end, 1.0, dtype); }
Tensor arange(double start, double end, double step, DType dtype) {
  return call1(op::arange(), {}, {{"start", start}, {"end", end}, {"step", step}, {"dtype", dtype}});
}

Tensor uniform(Shape shape, double low, double high, Generator& gen, DType dtype, bool meta) {
  auto offset = static_cast<int64_t>(gen.advance(draw_count(shape)));
  return call1(op::uniform(), {},
               {{"shape", std::move(shape)},
                {"low", low},
                {"high", high},
                {"seed", static_cast<int64_t>(gen.seed())},
                {"offset", offset},
                {"dtype", dtype}},
               meta_option(meta));
}

Tensor normal(Shape shape, double mean, double stddev, Generator& gen, DType dtype, bool meta) {
  auto offset = static_cast<int64_t>(gen.advance(draw_count(shape)));
  return call1(op::normal(), {},
               {{"shape", std::move(shape)},
                {"mean", mean},
                {"std", stddev},
                {"seed", static_cast<int64_t>(gen.seed())},
                {"offset", offset},
                {"dtype", dtype}},
               meta_option(meta));
}

Tensor rand(Shape shape, Generator& gen, DType dtype, bool meta) {
  return uniform(std::move(shape), 0.0, 1.0, gen, dtype, meta);
}
Tensor randn(Shape shape, Generator& gen, DType dtype, bool meta) {
  return normal(std::move(shape), 0.0, 1.0, gen, dtype, meta);
}

}  // namespace px
