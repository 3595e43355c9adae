#pragma once
// The reduction family's functional API: thin wrappers over the dispatcher, so
// every call traces like any op. `dims` empty means every dim; negative dims
// count from the end; `keepdim` keeps reduced dims as size 1.

#include <cstdint>
#include <optional>
#include <vector>

#include "parallax/core/tensor.h"

namespace px {

// f32, f64, bf16 and i64 (an i64 sum stays i64). Float sums accumulate in double.
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// Floating dtypes only; the mean over zero elements is NaN.
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// NaN propagates; the gradient splits evenly among tied extremes.
Tensor amax(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// i64 indices of the largest element along `dim` (over the flattened tensor when
// `dim` is nullopt); the first one on ties. Not differentiable.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

}  // namespace px
