#include "option_checks.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace px::cli {

namespace {

std::string got(const std::string& text) { return ", got " + (text.empty() ? std::string("nothing") : text); }

std::string integer_requirement(int64_t low, int64_t high) {
  if (high == std::numeric_limits<int64_t>::max()) {
    if (low == 1) return "a positive integer";
    if (low == 0) return "a non-negative integer";
    return "an integer of at least " + std::to_string(low);
  }
  return "an integer from " + std::to_string(low) + " to " + std::to_string(high);
}

CLI::Validator number_check(bool allow_zero) {
  const std::string requirement = allow_zero ? "a non-negative number" : "a positive number";
  return CLI::Validator(
      [requirement, allow_zero](const std::string& text) {
        const char* begin = text.c_str();
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(begin, &end);
        const bool whole = !text.empty() && end == begin + text.size();
        if (!whole || errno == ERANGE || !std::isfinite(value) || value < 0 || (value == 0 && !allow_zero)) {
          return "must be " + requirement + got(text);
        }
        return std::string();
      },
      allow_zero ? "NUMBER>=0" : "NUMBER>0");
}

}  // namespace

CLI::Validator integer_in_range(int64_t low, int64_t high) {
  const std::string requirement = integer_requirement(low, high);
  return CLI::Validator(
      [requirement, low, high](const std::string& text) {
        int64_t value = 0;
        const char* first = text.data();
        const char* last = text.data() + text.size();
        if (first != last && *first == '+') ++first;  // from_chars reads '-' but not '+'
        const auto [end, error] = std::from_chars(first, last, value);
        if (first == last || error != std::errc() || end != last || value < low || value > high) {
          return "must be " + requirement + got(text);
        }
        return std::string();
      },
      low == 1 && high == std::numeric_limits<int64_t>::max() ? "INT>0" : "INT");
}

CLI::Validator positive_number() { return number_check(false); }
CLI::Validator non_negative_number() { return number_check(true); }

}  // namespace px::cli
