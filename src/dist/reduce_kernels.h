#pragma once
// The element-wise reductions of the threads backend's collectives, on raw buffers.

#include <cstddef>
#include <cstdint>

#include "parallax/core/dtype.h"
#include "parallax/core/placement.h"

namespace px::dist::threads {

// For i in [0, count): v := srcs[0][i] op srcs[1][i] op ... (in that order; bfloat16 in float32,
// rounded once at the end; Avg = Sum / nsrc), then dsts[k][i] := v for every k. A destination
// may be one of the sources. Bool: Sum and Max are "or", Min is "and"; Avg must not reach here.
void reduce_into(DType dtype, ReduceOp op, const std::byte* const* srcs, int nsrc, std::byte* const* dsts, int ndst,
                 int64_t count);

// memcpy that allows dst == src and count == 0.
void copy_bytes(std::byte* dst, const std::byte* src, int64_t nbytes);

}  // namespace px::dist::threads
