#include "core/json_locate.h"

#include <cctype>

namespace px {
namespace {

// A forgiving scanner over text that nlohmann::json has already accepted (or that failed later
// than the located value): it never throws, and stops at the end of the text.
struct Scanner {
  std::string_view text;
  size_t at = 0;

  bool done() const { return at >= text.size(); }
  char peek() const { return done() ? '\0' : text[at]; }
  void skip_space() {
    while (!done() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  }
  // Skips a string starting at its opening quote; returns its raw contents (escapes kept).
  std::string_view skip_string() {
    const size_t begin = ++at;
    while (!done() && text[at] != '"') at += text[at] == '\\' ? 2 : 1;
    const std::string_view contents = text.substr(begin, std::min(at, text.size()) - begin);
    ++at;
    return contents;
  }
  void skip_value() {
    skip_space();
    const char c = peek();
    if (c == '"') {
      skip_string();
    } else if (c == '{' || c == '[') {
      int depth = 0;
      while (!done()) {
        const char d = text[at];
        if (d == '"') {
          skip_string();
          continue;
        }
        ++at;
        if (d == '{' || d == '[') ++depth;
        if ((d == '}' || d == ']') && --depth == 0) return;
      }
    } else {
      while (!done() && text[at] != ',' && text[at] != '}' && text[at] != ']') ++at;
    }
  }
  // Inside an object or array, after a value: moves past a ',' (true) or stops at the close (false).
  bool next_item() {
    skip_space();
    if (peek() == ',') {
      ++at;
      return true;
    }
    return false;
  }
};

}  // namespace

std::string json_path_text(const JsonPath& path) {
  std::string out;
  for (const JsonPathItem& item : path) {
    if (const auto* key = std::get_if<std::string>(&item)) {
      if (!out.empty()) out += '.';
      out += *key;
    } else {
      out += "[" + std::to_string(std::get<size_t>(item)) + "]";
    }
  }
  return out.empty() ? "(root)" : out;
}

TextPosition text_position(std::string_view text, size_t offset) {
  TextPosition position;
  for (size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++position.line;
      position.column = 1;
    } else {
      ++position.column;
    }
  }
  return position;
}

size_t locate_json_path(std::string_view text, const JsonPath& path) {
  Scanner scan{text};
  scan.skip_space();
  size_t found = scan.at;
  for (const JsonPathItem& item : path) {
    scan.skip_space();
    const char open = scan.peek();
    bool matched = false;
    if (const auto* key = std::get_if<std::string>(&item); key != nullptr && open == '{') {
      ++scan.at;
      scan.skip_space();
      while (!scan.done() && scan.peek() == '"') {
        const std::string_view name = scan.skip_string();
        scan.skip_space();
        if (scan.peek() == ':') ++scan.at;
        scan.skip_space();
        if (name == *key) {
          matched = true;
          break;
        }
        scan.skip_value();
        if (!scan.next_item()) break;
        scan.skip_space();
      }
    } else if (const auto* index = std::get_if<size_t>(&item); index != nullptr && open == '[') {
      ++scan.at;
      scan.skip_space();
      for (size_t k = 0; !scan.done() && scan.peek() != ']'; ++k) {
        if (k == *index) {
          matched = true;
          break;
        }
        scan.skip_value();
        if (!scan.next_item()) break;
        scan.skip_space();
      }
    }
    if (!matched) return found;
    scan.skip_space();
    found = scan.at;
  }
  return found;
}

}  // namespace px
