#pragma once
// Numbers in messages: integral values (the contest's int64 costs and usages) print without an
// exponent or a fraction, everything else with enough digits to tell values apart.

#include <string>

namespace px::plan {

std::string format_number(double value);

}  // namespace px::plan
