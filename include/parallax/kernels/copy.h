#pragma once
// Strided N-d copy with dtype conversion: the one data-moving loop behind
// contiguous, clone, cast, cat, stack, reshape-as-copy and slice_backward.

#include <cstdint>
#include <span>

#include "parallax/core/dtype.h"

namespace px::kernels {

// One side of a copy: the first element, its dtype, and per-dim strides in elements.
struct StridedRef {
  void* data = nullptr;
  DType dtype = DType::Float32;
  std::span<const int64_t> strides;
};

struct ConstStridedRef {
  const void* data = nullptr;
  DType dtype = DType::Float32;
  std::span<const int64_t> strides;
};

// Writes every element of `src` (logical shape `shape`) into `dst` (same shape),
// converting dtypes: bf16 rounds to nearest even, anything -> bool is `!= 0`,
// float -> int64 truncates toward zero (NaN -> 0, saturating out of range).
// `dst` must not overlap `src` unless they are the same elements with the same dtype.
void copy_strided(std::span<const int64_t> shape, ConstStridedRef src, StridedRef dst);

// Converts `count` contiguous elements from one dtype to another (same rules as copy_strided).
void convert_contiguous(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t count);

}  // namespace px::kernels
