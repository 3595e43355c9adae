#include "parallax/kernels/factory.h"

#include <algorithm>
#include <vector>

#include "parallax/core/generator.h"
#include "parallax/kernels/copy.h"

namespace px::kernels {

namespace {

// Converts values produced in double, a block at a time, so the buffer of
// doubles stays small whatever the tensor size.
template <class Produce>
void produce_converted(void* dst, DType dtype, int64_t count, Produce&& produce) {
  constexpr int64_t kBlock = 4096;
  std::vector<double> block(static_cast<size_t>(std::min(count, kBlock)));
  auto* out = static_cast<std::byte*>(dst);
  for (int64_t start = 0; start < count; start += kBlock) {
    int64_t length = std::min(kBlock, count - start);
    for (int64_t i = 0; i < length; ++i) block[static_cast<size_t>(i)] = produce(start + i);
    convert_contiguous(block.data(), DType::Float64, out + start * dtype_size(dtype), dtype, length);
  }
}

}  // namespace

void fill(void* dst, DType dtype, int64_t count, double value) {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T converted;
    convert_contiguous(&value, DType::Float64, &converted, dtype, 1);
    std::fill_n(static_cast<T*>(dst), count, converted);
  });
}

void arange(void* dst, DType dtype, int64_t count, double start, double step) {
  produce_converted(dst, dtype, count, [&](int64_t i) { return start + static_cast<double>(i) * step; });
}

void uniform(void* dst, DType dtype, int64_t count, double low, double high, uint64_t seed, uint64_t offset) {
  double span = high - low;
  produce_converted(dst, dtype, count,
                    [&](int64_t i) { return low + span * philox_uniform(seed, offset, static_cast<uint64_t>(i)); });
}

void normal(void* dst, DType dtype, int64_t count, double mean, double stddev, uint64_t seed, uint64_t offset) {
  produce_converted(dst, dtype, count,
                    [&](int64_t i) { return mean + stddev * philox_normal(seed, offset, static_cast<uint64_t>(i)); });
}

}  // namespace px::kernels
