#pragma once
// Counter-based random numbers (Philox4x32-10). A value depends only on
// (seed, offset, element index), so any slice of a tensor can be drawn on its
// own and gives the same numbers as drawing the whole tensor: the parallel
// runtime initializes parameter shards this way. There is no global RNG.

#include <array>
#include <cstdint>

namespace px {

// One Philox4x32-10 block for a 128-bit counter under a 64-bit key.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, uint64_t key);

// Uniform in [0, 1) and standard normal for element `index` of the stream (seed, offset).
double philox_uniform(uint64_t seed, uint64_t offset, uint64_t index);
double philox_normal(uint64_t seed, uint64_t offset, uint64_t index);

// An explicit generator: a seed plus a stream offset that advances by the
// number of elements drawn, so successive draws are independent.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}

  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  // Returns the offset to draw `count` elements at, and moves past them.
  uint64_t advance(uint64_t count) {
    uint64_t start = offset_;
    offset_ += count;
    return start;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

}  // namespace px
