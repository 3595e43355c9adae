#pragma once
// The Levenshtein distance between two names: how "did you mean" suggestions in errors rank
// the names a user could have meant.

#include <cstddef>
#include <string_view>

namespace px {

// Insertions, deletions and substitutions that turn `a` into `b`; O(|a|·|b|) time, O(|b|) memory.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace px
