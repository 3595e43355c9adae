#include "parallax/core/generator.h"

#include <cmath>
#include <numbers>

namespace px {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, uint64_t key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kMul0) * counter[0];
    uint64_t p1 = static_cast<uint64_t>(kMul1) * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ k0, static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return counter;
}

namespace {

std::array<uint32_t, 4> block_for(uint64_t seed, uint64_t offset, uint64_t index) {
  // The element index and the stream offset together form the 128-bit counter.
  uint64_t position = offset + index;
  return philox4x32({static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), 0x5EEDu, 0u}, seed);
}

// 53 random bits -> [0, 1).
double unit_double(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

}  // namespace

double philox_uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  auto block = block_for(seed, offset, index);
  return unit_double(block[0], block[1]);
}

double philox_normal(uint64_t seed, uint64_t offset, uint64_t index) {
  auto block = block_for(seed, offset, index);
  double u1 = 1.0 - unit_double(block[0], block[1]);  // (0, 1]: log is finite
  double u2 = unit_double(block[2], block[3]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace px
