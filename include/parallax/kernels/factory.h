#pragma once
// Kernels that fill a fresh contiguous buffer: constants, ranges and
// counter-based random numbers. Values are computed in double and converted to
// the buffer's dtype with the rules of copy_strided.

#include <cstdint>

#include "parallax/core/dtype.h"

namespace px::kernels {

void fill(void* dst, DType dtype, int64_t count, double value);
// dst[i] = start + i * step
void arange(void* dst, DType dtype, int64_t count, double start, double step);
// dst[i] = low + (high - low) * philox_uniform(seed, offset, i)
void uniform(void* dst, DType dtype, int64_t count, double low, double high, uint64_t seed, uint64_t offset);
// dst[i] = mean + stddev * philox_normal(seed, offset, i)
void normal(void* dst, DType dtype, int64_t count, double mean, double stddev, uint64_t seed, uint64_t offset);

}  // namespace px::kernels
