#include "parallax/pytree/tree.h"

#include <cmath>
#include <ostream>

#include "parallax/core/error.h"
#include "parallax/core/float_identity.h"
#include "pytree/text.h"

namespace px {

namespace {

// Dict keys and custom field names must be unique: `at()` and key paths would be ambiguous otherwise.
void check_unique_keys(const std::vector<std::string>& keys, std::string_view where, std::string_view what) {
  if (const std::string* duplicate = pytree_detail::find_duplicate(keys)) {
    std::string message(where);
    message += ": duplicate ";
    message += what;
    message += ' ';
    pytree_detail::append_quoted(message, *duplicate);
    throw ValueError(message);
  }
}

[[noreturn]] void kind_mismatch(std::string_view accessor, Tree::Kind expected, Tree::Kind actual) {
  throw ValueError("Tree::" + std::string(accessor) + ": expected " + std::string(kind_name(expected)) + ", got " +
                   std::string(kind_name(actual)));
}

void append_tree(std::string& out, const Tree& tree);

void append_children(std::string& out, const Tree& tree, char open, char close) {
  out += open;
  const auto& children = tree.children();
  for (size_t i = 0; i < children.size(); ++i) {
    if (i) out += ", ";
    if (tree.kind() == Tree::Kind::Dict) {
      pytree_detail::append_quoted(out, tree.keys()[i]);
      out += ": ";
    } else if (tree.kind() == Tree::Kind::Custom) {
      out += tree.keys()[i];
      out += '=';
    }
    append_tree(out, children[i]);
  }
  // A 1-tuple keeps its comma so that it does not read as a parenthesized value.
  if (tree.kind() == Tree::Kind::Tuple && children.size() == 1) out += ',';
  out += close;
}

void append_tree(std::string& out, const Tree& tree) {
  switch (tree.kind()) {
    case Tree::Kind::None:
      out += "None";
      return;
    case Tree::Kind::Bool:
      out += tree.as_bool() ? "true" : "false";
      return;
    case Tree::Kind::Int:
      out += std::to_string(tree.as_int());
      return;
    case Tree::Kind::Double:
      pytree_detail::append_double(out, tree.as_double());
      return;
    case Tree::Kind::String:
      pytree_detail::append_quoted(out, tree.as_string());
      return;
    case Tree::Kind::Tensor:
      out += tree.as_tensor().defined() ? tree.as_tensor().meta_info().str() : "undefined";
      return;
    case Tree::Kind::List:
      append_children(out, tree, '[', ']');
      return;
    case Tree::Kind::Tuple:
      append_children(out, tree, '(', ')');
      return;
    case Tree::Kind::Dict:
      append_children(out, tree, '{', '}');
      return;
    case Tree::Kind::Custom:
      out += tree.type_name();
      append_children(out, tree, '(', ')');
      return;
  }
}

}  // namespace

// --- construction ---

Tree Tree::boolean(bool value) {
  Tree tree;
  tree.kind_ = Kind::Bool;
  tree.leaf_ = value;
  return tree;
}

Tree Tree::integer(int64_t value) {
  Tree tree;
  tree.kind_ = Kind::Int;
  tree.leaf_ = value;
  return tree;
}

Tree Tree::real(double value) {
  Tree tree;
  tree.kind_ = Kind::Double;
  tree.leaf_ = value;
  return tree;
}

Tree Tree::string(std::string value) {
  Tree tree;
  tree.kind_ = Kind::String;
  tree.leaf_ = std::move(value);
  return tree;
}

Tree Tree::tensor(Tensor value) {
  Tree tree;
  tree.kind_ = Kind::Tensor;
  tree.leaf_ = std::move(value);
  return tree;
}

Tree Tree::list(std::vector<Tree> items) {
  Tree tree;
  tree.kind_ = Kind::List;
  tree.children_ = std::move(items);
  return tree;
}

Tree Tree::tuple(std::vector<Tree> items) {
  Tree tree;
  tree.kind_ = Kind::Tuple;
  tree.children_ = std::move(items);
  return tree;
}

Tree Tree::dict(std::vector<std::pair<std::string, Tree>> entries) {
  Tree tree;
  tree.kind_ = Kind::Dict;
  tree.keys_.reserve(entries.size());
  tree.children_.reserve(entries.size());
  for (auto& [key, value] : entries) {
    tree.keys_.push_back(std::move(key));
    tree.children_.push_back(std::move(value));
  }
  check_unique_keys(tree.keys_, "Tree::dict", "key");
  return tree;
}

Tree Tree::custom(std::string type_name, std::vector<std::pair<std::string, Tree>> fields) {
  if (type_name.empty()) throw ValueError("Tree::custom: the type name is empty");
  Tree tree;
  tree.kind_ = Kind::Custom;
  tree.type_name_ = std::move(type_name);
  tree.keys_.reserve(fields.size());
  tree.children_.reserve(fields.size());
  for (auto& [name, value] : fields) {
    if (name.empty()) throw ValueError("Tree::custom: " + tree.type_name_ + " has a field with an empty name");
    tree.keys_.push_back(std::move(name));
    tree.children_.push_back(std::move(value));
  }
  check_unique_keys(tree.keys_, "Tree::custom: " + tree.type_name_, "field");
  return tree;
}

// --- accessors ---

bool Tree::is_leaf() const {
  switch (kind_) {
    case Kind::Bool:
    case Kind::Int:
    case Kind::Double:
    case Kind::String:
    case Kind::Tensor:
      return true;
    case Kind::None:
    case Kind::List:
    case Kind::Tuple:
    case Kind::Dict:
    case Kind::Custom:
      return false;
  }
  return false;
}

bool Tree::is_container() const {
  switch (kind_) {
    case Kind::List:
    case Kind::Tuple:
    case Kind::Dict:
    case Kind::Custom:
      return true;
    case Kind::None:
    case Kind::Bool:
    case Kind::Int:
    case Kind::Double:
    case Kind::String:
    case Kind::Tensor:
      return false;
  }
  return false;
}

bool Tree::as_bool() const {
  if (kind_ != Kind::Bool) kind_mismatch("as_bool", Kind::Bool, kind_);
  return std::get<bool>(leaf_);
}

int64_t Tree::as_int() const {
  if (kind_ != Kind::Int) kind_mismatch("as_int", Kind::Int, kind_);
  return std::get<int64_t>(leaf_);
}

double Tree::as_double() const {
  if (kind_ != Kind::Double) kind_mismatch("as_double", Kind::Double, kind_);
  return std::get<double>(leaf_);
}

const std::string& Tree::as_string() const {
  if (kind_ != Kind::String) kind_mismatch("as_string", Kind::String, kind_);
  return std::get<std::string>(leaf_);
}

const Tensor& Tree::as_tensor() const {
  if (kind_ != Kind::Tensor) kind_mismatch("as_tensor", Kind::Tensor, kind_);
  return std::get<Tensor>(leaf_);
}

const std::string& Tree::type_name() const { return type_name_; }

const Tree& Tree::operator[](size_t index) const {
  if (is_leaf()) {
    throw ValueError("Tree::operator[]: a leaf of kind " + std::string(kind_name(kind_)) + " has no children (index " +
                     std::to_string(index) + ")");
  }
  if (index >= children_.size()) {
    throw ValueError("Tree::operator[]: index " + std::to_string(index) + " is out of range for a " +
                     std::string(kind_name(kind_)) + " of size " + std::to_string(children_.size()));
  }
  return children_[index];
}

const Tree& Tree::at(std::string_view key) const {
  if (kind_ != Kind::Dict && kind_ != Kind::Custom) {
    std::string message = "Tree::at: key ";
    pytree_detail::append_quoted(message, key);
    throw ValueError(message + " on a node of kind " + std::string(kind_name(kind_)) +
                     "; only dicts and custom nodes have keys");
  }
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return children_[i];
  }
  std::string message = "Tree::at: ";
  message += kind_ == Kind::Dict ? "no key " : "no field ";
  pytree_detail::append_quoted(message, key);
  message += " in ";
  message += pytree_detail::describe_node(*this, "");
  throw ValueError(message);
}

std::string Tree::str() const {
  std::string out;
  append_tree(out, *this);
  return out;
}

bool operator==(const Tree& a, const Tree& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Tree::Kind::None:
      return true;
    case Tree::Kind::Bool:
      return std::get<bool>(a.leaf_) == std::get<bool>(b.leaf_);
    case Tree::Kind::Int:
      return std::get<int64_t>(a.leaf_) == std::get<int64_t>(b.leaf_);
    case Tree::Kind::String:
      return std::get<std::string>(a.leaf_) == std::get<std::string>(b.leaf_);
    case Tree::Kind::Double:
      return same_double(std::get<double>(a.leaf_), std::get<double>(b.leaf_));
    case Tree::Kind::Tensor:
      return std::get<Tensor>(a.leaf_).same(std::get<Tensor>(b.leaf_));
    case Tree::Kind::List:
    case Tree::Kind::Tuple:
    case Tree::Kind::Dict:
    case Tree::Kind::Custom:
      return a.type_name_ == b.type_name_ && a.keys_ == b.keys_ && a.children_ == b.children_;
  }
  return false;
}

std::string_view kind_name(Tree::Kind kind) {
  switch (kind) {
    case Tree::Kind::None:
      return "none";
    case Tree::Kind::Bool:
      return "bool";
    case Tree::Kind::Int:
      return "int";
    case Tree::Kind::Double:
      return "double";
    case Tree::Kind::String:
      return "string";
    case Tree::Kind::Tensor:
      return "tensor";
    case Tree::Kind::List:
      return "list";
    case Tree::Kind::Tuple:
      return "tuple";
    case Tree::Kind::Dict:
      return "dict";
    case Tree::Kind::Custom:
      return "custom";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, const Tree& tree) { return os << tree.str(); }

// --- key paths ---

KeyPath KeyPath::child(KeyEntry entry) const {
  KeyPath path;
  path.entries.reserve(entries.size() + 1);
  path.entries = entries;
  path.entries.push_back(std::move(entry));
  return path;
}

std::string KeyPath::str() const {
  std::string out;
  for (const KeyEntry& entry : entries) {
    switch (entry.kind) {
      case KeyEntry::Kind::Index:
        out += '[';
        out += std::to_string(entry.index);
        out += ']';
        break;
      case KeyEntry::Kind::Key:
        out += '[';
        pytree_detail::append_quoted(out, entry.name);
        out += ']';
        break;
      case KeyEntry::Kind::Field:
        out += '.';
        out += entry.name;
        break;
    }
  }
  return out;
}

namespace {

size_t mix(size_t seed, size_t value) { return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2)); }

}  // namespace

size_t hash_value(const Tree& tree) {
  size_t h = std::hash<int>{}(static_cast<int>(tree.kind()));
  switch (tree.kind()) {
    case Tree::Kind::Bool:
      return mix(h, tree.as_bool());
    case Tree::Kind::Int:
      return mix(h, std::hash<int64_t>{}(tree.as_int()));
    case Tree::Kind::Double: {
      double value = tree.as_double();
      return mix(h, std::isnan(value) ? 0x7ff8u : std::hash<double>{}(value == 0.0 ? 0.0 : value));
    }
    case Tree::Kind::String:
      return mix(h, std::hash<std::string>{}(tree.as_string()));
    case Tree::Kind::Tensor:
      return mix(h, std::hash<const void*>{}(tree.as_tensor().impl().get()));
    default:
      break;
  }
  h = mix(h, std::hash<std::string>{}(tree.type_name()));
  for (const std::string& key : tree.keys()) h = mix(h, std::hash<std::string>{}(key));
  for (const Tree& child : tree.children()) h = mix(h, hash_value(child));
  return h;
}

}  // namespace px
