#pragma once
// Reduction kernels (sum, mean, max, min, argmax) over any set of dims of a
// strided input. A ReducePlan splits the input into the dims that are kept
// (their row-major order is the contiguous output's order) and the dims that are
// reduced, with size-1 dims dropped and neighbours merged where memory allows,
// so a reduction of a contiguous trailing block is a plain loop over rows and a
// reduction of leading dims is a vectorizable accumulation of whole rows.

#include <cstdint>
#include <span>

#include "parallax/core/dtype.h"
#include "parallax/core/shape.h"

namespace px::kernels {

struct ReducePlan {
  Shape kept_shape;
  Strides kept_strides;  // input strides of the kept dims
  Shape reduced_shape;
  Strides reduced_strides;  // input strides of the reduced dims, in logical (row-major) order

  int64_t kept_count() const { return numel(kept_shape); }
  int64_t reduced_count() const { return numel(reduced_shape); }
};

// `dims` are the reduced dims: in [0, shape.size()), distinct (the op checks them).
ReducePlan make_reduce_plan(std::span<const int64_t> shape, std::span<const int64_t> strides,
                            std::span<const int64_t> dims);

enum class ReduceOp : uint8_t { Sum, Max, Min };

// out[i] = op over the reduced elements of output element i (out is contiguous,
// plan.kept_count() elements). Sum multiplies by `scale` (1/count makes a mean);
// float sums accumulate in double; Max/Min propagate NaN and need a non-empty
// reduction. Defined for float, double, int64_t and BFloat16 (computed in float).
template <class T>
void reduce(ReduceOp op, const T* in, const ReducePlan& plan, T* out, double scale = 1.0);

// out[i] = row-major index, within the reduced dims, of the largest element of
// output element i's reduction: the first one on ties, the first NaN if any.
template <class T>
void argmax(const T* in, const ReducePlan& plan, int64_t* out);

extern template void reduce<float>(ReduceOp, const float*, const ReducePlan&, float*, double);
extern template void reduce<double>(ReduceOp, const double*, const ReducePlan&, double*, double);
extern template void reduce<int64_t>(ReduceOp, const int64_t*, const ReducePlan&, int64_t*, double);
extern template void reduce<BFloat16>(ReduceOp, const BFloat16*, const ReducePlan&, BFloat16*, double);
extern template void argmax<float>(const float*, const ReducePlan&, int64_t*);
extern template void argmax<double>(const double*, const ReducePlan&, int64_t*);
extern template void argmax<int64_t>(const int64_t*, const ReducePlan&, int64_t*);
extern template void argmax<BFloat16>(const BFloat16*, const ReducePlan&, int64_t*);

}  // namespace px::kernels
