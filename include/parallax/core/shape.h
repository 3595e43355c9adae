#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/core/dtype.h"

namespace px {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

int64_t numel(std::span<const int64_t> shape);
Strides contiguous_strides(std::span<const int64_t> shape);
// "[4,8]"; "[]" for a scalar.
std::string shape_str(std::span<const int64_t> shape);

// Maps a possibly negative dim into [0, ndim); throws ValueError naming `what`.
int64_t normalize_dim(int64_t dim, int64_t ndim, std::string_view what);
// NumPy broadcasting; throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, std::string_view op);

// Shape and dtype: everything shape inference needs, nothing allocated.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::Float32;

  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return px::numel(shape); }
  int64_t nbytes() const { return numel() * dtype_size(dtype); }
  // "f32[4,8]"
  std::string str() const;
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};

}  // namespace px
