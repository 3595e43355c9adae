#pragma once
// Numbers in messages: integral values (the contest's int64 costs and usages) print without an
// exponent or a fraction, everything else with enough digits to tell values apart.

#include <cmath>
#include <cstdint>
#include <string>

namespace px::plan {

std::string format_number(double value);

// Integral values as JSON integers (the contest's costs and usages: 2500000000, not 2.5e9), others
// as doubles; `Json` is nlohmann's json or ordered_json.
template <class Json>
Json number_json(double value) {
  if (value == std::trunc(value) && std::fabs(value) < 9.2e18) return Json(static_cast<int64_t>(value));
  return Json(value);
}

}  // namespace px::plan
