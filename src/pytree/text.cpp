#include "pytree/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "parallax/core/error.h"

namespace px {

namespace pytree_detail {

void append_quoted(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
          out += kHex[static_cast<unsigned char>(c) & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

const std::string* find_duplicate(const std::vector<std::string>& keys) {
  // Small key lists (the common case) need no allocation; big ones (a state dict) must not be quadratic.
  constexpr size_t kQuadraticLimit = 16;
  if (keys.size() <= kQuadraticLimit) {
    for (size_t i = 1; i < keys.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (keys[i] == keys[j]) return &keys[i];
      }
    }
    return nullptr;
  }
  std::vector<const std::string*> sorted;
  sorted.reserve(keys.size());
  for (const std::string& key : keys) sorted.push_back(&key);
  std::sort(sorted.begin(), sorted.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (*sorted[i] == *sorted[i - 1]) return sorted[i];
  }
  return nullptr;
}

void append_double(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "nan";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  PX_ASSERT(error == std::errc() && "32 characters hold any shortest double");
  std::string_view text(buffer, static_cast<size_t>(end - buffer));
  out += text;
  // Keeps 1.0 apart from the int 1 when printed.
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

namespace {

template <class Node>
std::string describe_container(Tree::Kind kind, const Node& node, const std::string& type_name) {
  std::string out;
  switch (kind) {
    case Tree::Kind::List:
    case Tree::Kind::Tuple:
      out += kind_name(kind);
      out += " of ";
      out += std::to_string(node.children().size());
      return out;
    case Tree::Kind::Dict:
      out += "dict with keys (";
      for (size_t i = 0; i < node.keys().size(); ++i) {
        if (i) out += ", ";
        append_quoted(out, node.keys()[i]);
      }
      out += ')';
      return out;
    case Tree::Kind::Custom:
      out += type_name;
      out += " with fields (";
      for (size_t i = 0; i < node.keys().size(); ++i) {
        if (i) out += ", ";
        out += node.keys()[i];
      }
      out += ')';
      return out;
    case Tree::Kind::None:
      return "None";
    case Tree::Kind::Bool:
    case Tree::Kind::Int:
    case Tree::Kind::Double:
    case Tree::Kind::String:
    case Tree::Kind::Tensor:
      break;
  }
  PX_ASSERT(false && "describe_container called on a leaf");
  return out;
}

Tree::Kind tree_kind_of(TreeSpec::Kind kind) {
  switch (kind) {
    case TreeSpec::Kind::None:
      return Tree::Kind::None;
    case TreeSpec::Kind::List:
      return Tree::Kind::List;
    case TreeSpec::Kind::Tuple:
      return Tree::Kind::Tuple;
    case TreeSpec::Kind::Dict:
      return Tree::Kind::Dict;
    case TreeSpec::Kind::Custom:
      return Tree::Kind::Custom;
    case TreeSpec::Kind::Leaf:
      break;
  }
  PX_ASSERT(false && "a leaf spec has no container kind");
  return Tree::Kind::None;
}

}  // namespace

std::string describe_node(const Tree& tree, std::string_view leaf_phrase) {
  if (tree.is_leaf()) return std::string(leaf_phrase);
  return describe_container(tree.kind(), tree, tree.type_name());
}

std::string describe_node(const TreeSpec& spec) {
  if (spec.is_leaf()) return "a leaf";
  return describe_container(tree_kind_of(spec.kind()), spec, spec.type_name());
}

}  // namespace pytree_detail

}  // namespace px
