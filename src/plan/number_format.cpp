#include "plan/number_format.h"

#include <cmath>
#include <cstdio>

namespace px::plan {

std::string format_number(double value) {
  char buffer[64];
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 1e19) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.10g", value);
  }
  return buffer;
}

}  // namespace px::plan
