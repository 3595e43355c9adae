#pragma once
// CLI11 checks for numeric options whose errors read like the rest of Parallax
// ("--batch: must be a positive integer, got -1"). CLI11's own checks print their bounds in full
// ("Value -1 not in range 0.000000 to 179769313486231570814527...") and accept 1.5 as a number
// where an integer is meant, failing later with a conversion error.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>

namespace px::cli {

// A decimal integer (an optional sign, digits, nothing else) in [low, high].
CLI::Validator integer_in_range(int64_t low, int64_t high = std::numeric_limits<int64_t>::max());
inline CLI::Validator positive_integer() { return integer_in_range(1); }
inline CLI::Validator non_negative_integer() { return integer_in_range(0); }

// A finite number (integers and decimals, as strtod reads them) above zero, or at least zero.
CLI::Validator positive_number();
CLI::Validator non_negative_number();

}  // namespace px::cli
