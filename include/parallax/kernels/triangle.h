#pragma once
// In-place masking of the upper or lower triangle of a batch of matrices (triu / tril).

#include <cstdint>

#include "parallax/core/dtype.h"

namespace px::kernels {

// `data` holds `batch` contiguous row-major [rows, cols] matrices. Keeps
// element (i, j) when j - i >= diagonal (upper) or j - i <= diagonal (lower),
// and zeroes the rest.
void mask_triangle(void* data, DType dtype, int64_t batch, int64_t rows, int64_t cols, int64_t diagonal, bool upper);

}  // namespace px::kernels
