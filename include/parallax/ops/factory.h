#pragma once
// The factory family's functional API. Random factories draw from an explicit
// px::Generator: the op records (seed, offset) as attributes and each element i
// is philox(seed, offset, i), so any slice can be regenerated on its own.
// `meta = true` makes a meta tensor: shape and dtype only, nothing allocated.

#include <cstdint>

#include "parallax/core/generator.h"
#include "parallax/core/tensor.h"

namespace px {

Tensor full(Shape shape, double value, DType dtype = DType::Float32, bool meta = false);
Tensor zeros(Shape shape, DType dtype = DType::Float32, bool meta = false);
Tensor ones(Shape shape, DType dtype = DType::Float32, bool meta = false);
// Same shape and dtype as `like`; meta when `like` is meta.
Tensor full_like(const Tensor& like, double value);
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);

// [0, end) and [start, end) by step; int64 unless told otherwise.
Tensor arange(double end, DType dtype = DType::Int64);
Tensor arange(double start, double end, double step = 1, DType dtype = DType::Int64);

// Uniform in [0, 1) / standard normal. Each call advances `gen` by the element count.
Tensor rand(Shape shape, Generator& gen, DType dtype = DType::Float32, bool meta = false);
Tensor randn(Shape shape, Generator& gen, DType dtype = DType::Float32, bool meta = false);
Tensor uniform(Shape shape, double low, double high, Generator& gen, DType dtype = DType::Float32, bool meta = false);
Tensor normal(Shape shape, double mean, double stddev, Generator& gen, DType dtype = DType::Float32, bool meta = false);

}  // namespace px
