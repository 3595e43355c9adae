#pragma once
// Drawing one rank's block of a parameter without the whole parameter.
//
// nn::Module::materialize draws element i (row-major) of a tensor from a counter-based
// stream, nn::init_value(init, key, i), so any element can be drawn on its own. A rank that
// trains on a local shard draws just its block: the values are bit-identical to the same
// block of the materialized tensor (same dtype, same rounding), and the cost is the block's
// size, whatever the global shape (a [1<<20, 1<<16] parameter costs nothing to describe).

#include <cstdint>
#include <span>

#include "parallax/core/shape.h"
#include "parallax/core/tensor.h"
#include "parallax/nn/module.h"

namespace px::runtime {

// The block [offset, offset + local_shape) of the tensor of type `global` that
// nn::Module::materialize would draw from `init` and the stream `key`
// (nn::init_stream_key(seed, fqn) for the tensor's canonical FQN). Returns a contiguous dense
// tensor of shape `local_shape` and dtype global.dtype. Empty blocks (a size-0 dim, as for the
// trailing shards of torch.chunk) are allowed, offset may then equal the global size.
// ValueError for: Init::given() (no values to draw), an offset or local shape whose length is
// not the global rank, a negative offset or size, a block that reaches past the global shape,
// a negative global dim, a random initializer on an int64 or bool tensor, or a non-integer
// constant on one (materialize rejects the same).
Tensor init_block(const nn::Init& init, uint64_t key, const TensorMeta& global, std::span<const int64_t> offset,
                  const Shape& local_shape);

}  // namespace px::runtime
