#pragma once
// The check every layer and model constructor makes of its sizes (internal).

#include <cstdint>
#include <string>

#include "parallax/core/error.h"

namespace px::nn::detail {

// ValueError "<who>: <what> must be positive, got <value>" unless value > 0.
inline void require_positive(const char* who, const char* what, int64_t value) {
  if (value <= 0) {
    throw ValueError(std::string(who) + ": " + what + " must be positive, got " + std::to_string(value));
  }
}

}  // namespace px::nn::detail
