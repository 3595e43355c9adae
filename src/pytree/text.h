#pragma once
// Text helpers shared by the pytree sources: quoting, number formatting, and the
// short phrases that error messages use to describe a node.

#include <string>
#include <string_view>
#include <vector>

#include "parallax/pytree/tree.h"

namespace px::pytree_detail {

// `"text"` with \" \\ and control characters escaped.
void append_quoted(std::string& out, std::string_view text);
// Shortest text that reads back to the same double; always marked as a float ("1.0", "1e+20", "inf").
void append_double(std::string& out, double value);
// The first key that occurs twice (in sorted order for long lists), or nullptr.
const std::string* find_duplicate(const std::vector<std::string>& keys);
// `list of 3`, `tuple of 2`, `dict with keys ("a", "b")`, `Config with fields (dim, act)`, `None`;
// leaves are described by `leaf_phrase`.
std::string describe_node(const Tree& tree, std::string_view leaf_phrase);
std::string describe_node(const TreeSpec& spec);

}  // namespace px::pytree_detail
