#pragma once
// Finds where a value sits in JSON text, so that errors found after parsing (a wrong count, a
// missing node) can name a line and column, not only a JSON path. Only used on the error path:
// a linear scan of the text, no DOM.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace px {

// "problem.edges.costs[3]": object keys and array indices from the root.
using JsonPathItem = std::variant<std::string, size_t>;
using JsonPath = std::vector<JsonPathItem>;

std::string json_path_text(const JsonPath& path);

struct TextPosition {
  int64_t line = 1;  // 1-based
  int64_t column = 1;
};

TextPosition text_position(std::string_view text, size_t offset);

// The offset of the first character of the value at `path`, or of the deepest enclosing value that
// exists (the whole document for an empty path or unreadable text).
size_t locate_json_path(std::string_view text, const JsonPath& path);

}  // namespace px
