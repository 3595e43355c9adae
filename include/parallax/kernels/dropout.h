#pragma once
// Dropout on a contiguous buffer: element i is kept (and scaled by 1 / (1 - p))
// when px::philox_uniform(seed, offset, i) >= p, else zeroed. The mask depends
// only on (seed, offset, i), so any slice of it can be regenerated on its own.
// p == 1 drops everything. Instantiated for float, double and BFloat16.

#include <cstdint>

namespace px::kernels {

template <class T>
void dropout(const T* x, T* y, int64_t count, double p, uint64_t seed, uint64_t offset);

}  // namespace px::kernels
