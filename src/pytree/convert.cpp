#include "parallax/pytree/convert.h"

#include "pytree/text.h"

namespace px {

namespace detail {

namespace {

std::string location(const KeyPath& where) { return where.entries.empty() ? std::string("the root") : where.str(); }

}  // namespace

void tree_conversion_error(const KeyPath& where, std::string_view expected, const Tree& given) {
  std::string message = "from_tree: at " + location(where) + ": expected ";
  message += expected;
  message += ", got ";
  message += pytree_detail::describe_node(given, kind_name(given.kind()));
  throw ValueError(message);
}

void integer_range_error(const KeyPath& where, int64_t value, std::string_view min, std::string_view max) {
  throw ValueError("from_tree: at " + location(where) + ": int " + std::to_string(value) + " is out of range [" +
                   std::string(min) + ", " + std::string(max) + "]");
}

void tree_field_error(const KeyPath& where, std::string_view type_name, size_t index, std::string_view expected,
                      std::string_view given) {
  throw ValueError("from_tree: at " + location(where) + ": expected " + std::string(type_name) + " field " +
                   std::to_string(index) + " to be '" + std::string(expected) + "', got '" + std::string(given) + "'");
}

void expect_container(const Tree& tree, Tree::Kind kind, int64_t size, const KeyPath& where,
                      std::string_view expected) {
  if (tree.kind() != kind || (size >= 0 && tree.size() != static_cast<size_t>(size))) {
    tree_conversion_error(where, expected, tree);
  }
}

KeyPath index_path(const KeyPath& where, size_t index) {
  return where.child(KeyEntry{.kind = KeyEntry::Kind::Index, .index = index, .name = {}});
}

KeyPath key_path(const KeyPath& where, const std::string& key) {
  return where.child(KeyEntry{.kind = KeyEntry::Kind::Key, .index = 0, .name = key});
}

KeyPath field_path(const KeyPath& where, const std::string& field) {
  return where.child(KeyEntry{.kind = KeyEntry::Kind::Field, .index = 0, .name = field});
}

}  // namespace detail

}  // namespace px
