#include "parallax/core/shape.h"

#include <algorithm>

#include "parallax/core/error.h"

namespace px {

int64_t numel(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

Strides contiguous_strides(std::span<const int64_t> shape) {
  Strides strides(shape.size());
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

std::string shape_str(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

int64_t normalize_dim(int64_t dim, int64_t ndim, std::string_view what) {
  int64_t rank = std::max<int64_t>(ndim, 1);  // a scalar accepts dim 0 and -1
  if (dim < -rank || dim >= rank) {
    throw ValueError(std::string(what) + ": dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
                     std::to_string(ndim) + " (expected " + std::to_string(-rank) + ".." + std::to_string(rank - 1) +
                     ")");
  }
  return dim < 0 ? dim + rank : dim;
}

Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b, std::string_view op) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast (dim " + std::to_string(i) + ": " + std::to_string(da) + " vs " +
                       std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::string TensorMeta::str() const { return std::string(dtype_name(dtype)) + shape_str(shape); }

}  // namespace px
