#include "parallax/runtime/init.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "parallax/core/error.h"
#include "parallax/kernels/strided_iter.h"

namespace px::runtime {

namespace {

std::string init_kind_name(nn::Init::Kind kind) {
  switch (kind) {
    case nn::Init::Kind::Zeros:
      return "zeros";
    case nn::Init::Kind::Ones:
      return "ones";
    case nn::Init::Kind::Constant:
      return "constant";
    case nn::Init::Kind::Normal:
      return "normal";
    case nn::Init::Kind::Uniform:
      return "uniform";
    case nn::Init::Kind::Given:
      return "given";
  }
  return "unknown";
}

std::string block_str(std::span<const int64_t> offset, std::span<const int64_t> local_shape) {
  return "block at offset " + shape_str(offset) + " of shape " + shape_str(local_shape);
}

void check_block(const nn::Init& init, const TensorMeta& global, std::span<const int64_t> offset,
                 const Shape& local_shape) {
  const std::string what = "init_block: " + block_str(offset, local_shape) + " of " + global.str();
  if (init.kind == nn::Init::Kind::Given) {
    throw ValueError(what + ": a given initializer has no values to draw (the slot holds its own)");
  }
  if (offset.size() != global.shape.size() || local_shape.size() != global.shape.size()) {
    throw ValueError(what + ": the offset and the block shape need one entry per global dim (" +
                     std::to_string(global.shape.size()) + ")");
  }
  int64_t total = 1;
  for (size_t d = 0; d < global.shape.size(); ++d) {
    std::string dim = "dim " + std::to_string(d);
    if (global.shape[d] < 0) throw ValueError(what + ": global " + dim + " has a negative size");
    if (offset[d] < 0 || local_shape[d] < 0) throw ValueError(what + ": negative offset or size in " + dim);
    if (offset[d] > global.shape[d] - local_shape[d]) {
      throw ValueError(what + ": " + dim + " covers [" + std::to_string(offset[d]) + ", " +
                       std::to_string(offset[d] + local_shape[d]) + "), outside [0, " +
                       std::to_string(global.shape[d]) + ")");
    }
    // Element indices are uint64 stream counters computed in int64: the global tensor must be indexable.
    if (global.shape[d] != 0 && total > INT64_MAX / global.shape[d]) {
      throw ValueError(what + ": the global tensor has more than 2^63 elements");
    }
    total *= global.shape[d];
  }
  bool random = init.kind == nn::Init::Kind::Normal || init.kind == nn::Init::Kind::Uniform;
  if (!is_floating(global.dtype)) {
    if (random) {
      throw ValueError(what + ": a " + init_kind_name(init.kind) + " initializer needs a floating dtype, not " +
                       std::string(dtype_name(global.dtype)));
    }
    if (init.kind == nn::Init::Kind::Constant && init.a != std::trunc(init.a)) {
      throw ValueError(what + ": the constant " + std::to_string(init.a) + " is not an integer, but the dtype is " +
                       std::string(dtype_name(global.dtype)));
    }
  }
}

// Converts exactly as materialize does: float32 and bfloat16 round the double draw to float
// first (bfloat16 then rounds that float), float64 keeps it, integers and bools cast.
template <class T>
T convert(double value) {
  if constexpr (std::is_same_v<T, double>) {
    return value;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(value));
  } else {
    return static_cast<T>(value);
  }
}

template <class T>
void fill_block(Tensor& out, const nn::Init& init, uint64_t key, const TensorMeta& global,
                std::span<const int64_t> offset) {
  T* data = out.data<T>();
  const Shape& shape = out.shape();
  if (out.numel() == 0) return;
  Strides global_strides = contiguous_strides(global.shape);
  Strides local_strides = contiguous_strides(shape);
  int64_t base = 0;
  for (size_t d = 0; d < shape.size(); ++d) base += offset[d] * global_strides[d];
  // Operand 0 walks the block in the global index space, operand 1 in the output's.
  kernels::StridedIter<2> it(shape,
                             {std::span<const int64_t>(global_strides), std::span<const int64_t>(local_strides)});
  const int64_t row = it.row_size();
  const int64_t global_step = it.row_strides()[0];
  const int64_t local_step = it.row_strides()[1];
  it.for_each_row([&](const std::array<int64_t, 2>& start) {
    for (int64_t k = 0; k < row; ++k) {
      auto index = static_cast<uint64_t>(base + start[0] + k * global_step);
      data[start[1] + k * local_step] = convert<T>(nn::init_value(init, key, index));
    }
  });
}

}  // namespace

Tensor init_block(const nn::Init& init, uint64_t key, const TensorMeta& global, std::span<const int64_t> offset,
                  const Shape& local_shape) {
  check_block(init, global, offset, local_shape);
  Tensor out = Tensor::empty(local_shape, global.dtype);
  visit_dtype(global.dtype, [&](auto tag) { fill_block<decltype(tag)>(out, init, key, global, offset); });
  return out;
}

}  // namespace px::runtime
