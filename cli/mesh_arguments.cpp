#include "mesh_arguments.h"

#include <algorithm>
#include <sstream>

#include "parallax/core/error.h"

namespace px::cli {

// "8x8" or "2,4" -> {8, 8}. ValueError naming the text.
std::vector<int64_t> parse_mesh(const std::string& text) {
  std::vector<int64_t> shape;
  auto bad = [&] { return ValueError("--mesh: expected sizes like 8 or 8x8 or 2,2,2, got '" + text + "'"); };
  const char separator = text.find(',') != std::string::npos ? ',' : 'x';
  for (size_t begin = 0; begin <= text.size();) {
    const size_t end = std::min(text.find(separator, begin), text.size());
    const std::string part = text.substr(begin, end - begin);
    begin = end + 1;
    size_t used = 0;
    int64_t size = 0;
    try {
      size = std::stoll(part, &used);
    } catch (const std::exception&) {
      throw bad();
    }
    if (used != part.size() || size < 1) throw bad();
    shape.push_back(size);
  }
  return shape;
}

std::vector<std::string> mesh_dim_names(const std::string& text, size_t count) {
  if (text.empty()) {
    if (count == 1) return {"dp"};
    if (count == 2) return {"dp", "tp"};
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) names.push_back("d" + std::to_string(i));
    return names;
  }
  std::vector<std::string> names;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, ',')) names.push_back(part);
  if (names.size() != count) {
    throw ValueError("--mesh-dims: " + std::to_string(names.size()) + " names for a mesh of " + std::to_string(count) +
                     " dims");
  }
  return names;
}

CLI::Validator mesh_validator() {
  return CLI::Validator(
      [](const std::string& text) {
        try {
          parse_mesh(text);
          return std::string();
        } catch (const ValueError& error) {
          return std::string(error.what());
        }
      },
      "SHAPE");
}

}  // namespace px::cli
