#include "parallax/kernels/triangle.h"

#include <algorithm>

namespace px::kernels {

void mask_triangle(void* data, DType dtype, int64_t batch, int64_t rows, int64_t cols, int64_t diagonal, bool upper) {
  // Beyond these bounds every row is all kept or all zeroed; clamping also keeps i + diagonal from overflowing.
  diagonal = std::clamp<int64_t>(diagonal, -rows - 1, cols + 1);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* matrix = static_cast<T*>(data);
    for (int64_t b = 0; b < batch; ++b, matrix += rows * cols) {
      for (int64_t i = 0; i < rows; ++i) {
        T* row = matrix + i * cols;
        // Columns kept: j >= i + diagonal (upper) or j <= i + diagonal (lower).
        int64_t bound = std::clamp<int64_t>(i + diagonal + (upper ? 0 : 1), 0, cols);
        if (upper) {
          std::fill(row, row + bound, T{});
        } else {
          std::fill(row + bound, row + cols, T{});
        }
      }
    }
  });
}

}  // namespace px::kernels
