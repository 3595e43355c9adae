#pragma once
// When two doubles are the same value to a program: what guards, attribute equality and tree
// equality ask. `==` answers a different question: it says NaN differs from itself (so a program
// captured with NaN would fail its own checks) and that 0.0 equals -0.0 (so a program captured
// with 0.0 would run for -0.0, where 1/x tells them apart).

#include <cmath>

namespace px {

// NaN equals NaN (any payload, either sign); 0.0 differs from -0.0; otherwise `==`.
inline bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace px
