#pragma once
// px::Tree: arbitrary nested data, as a model's forward takes and returns it.
//
// A Tree is one of
//   leaves:     bool, int64, double, string, Tensor;
//   containers: None (no children), list, tuple, dict (string keys, insertion
//               order kept) and custom nodes (a named type with named fields,
//               what a registered user struct becomes; see convert.h).
//
// flatten() splits a tree into its leaves (depth first, children in order) and
// a TreeSpec, the structure with the leaves left out; unflatten() puts any
// values back at the leaf positions. Every leaf has a KeyPath that says how to
// reach it: `[0]["cfg"].dim` is field `dim` of dict entry "cfg" of item 0.
//
// Trees are values: copying one copies its structure and shares its tensors.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "parallax/core/tensor.h"

namespace px {

class Tree {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Double, String, Tensor, List, Tuple, Dict, Custom };

  Tree() = default;  // None
  // A leaf copy skips the (empty) container members: compiled calls copy every leaf of their
  // arguments on the hot path (flatten_leaves).
  Tree(const Tree& other) : kind_(other.kind_), leaf_(other.leaf_) {
    if (other.kind_ >= Kind::List) {
      type_name_ = other.type_name_;
      keys_ = other.keys_;
      children_ = other.children_;
    }
  }
  Tree(Tree&& other) noexcept = default;
  Tree& operator=(const Tree& other) = default;
  Tree& operator=(Tree&& other) noexcept = default;
  ~Tree() = default;

  static Tree none() { return Tree(); }
  static Tree boolean(bool value);
  static Tree integer(int64_t value);
  static Tree real(double value);
  static Tree string(std::string value);
  static Tree tensor(Tensor value);
  static Tree list(std::vector<Tree> items);
  static Tree tuple(std::vector<Tree> items);
  // ValueError on a duplicate key.
  static Tree dict(std::vector<std::pair<std::string, Tree>> entries);
  // A node of a user type: `type_name` and its fields in declaration order.
  static Tree custom(std::string type_name, std::vector<std::pair<std::string, Tree>> fields);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_leaf() const;       // Bool, Int, Double, String or Tensor
  bool is_container() const;  // List, Tuple, Dict or Custom

  // Leaf values; ValueError naming the expected and the actual kind on a mismatch.
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;
  const std::string& as_string() const;
  const Tensor& as_tensor() const;

  // Containers (None counts as an empty one): children in order, and the keys of
  // a dict or the field names of a custom node (empty for lists and tuples).
  size_t size() const { return children_.size(); }
  const std::vector<Tree>& children() const { return children_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::string& type_name() const;  // custom nodes; empty otherwise
  // The i-th child; ValueError when out of range or not a container.
  const Tree& operator[](size_t index) const;
  // The child under a dict key or custom field name; ValueError naming the key when absent.
  const Tree& at(std::string_view key) const;

  // `(f32[2,3], 7, {"a": 1.5, "b": [true, "s"]}, Config(dim=4))`; tensors print their meta only.
  std::string str() const;

  // Structure and leaf values equal; tensors compare by identity (Tensor::same).
  friend bool operator==(const Tree& a, const Tree& b);

 private:
  Kind kind_ = Kind::None;
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor> leaf_;
  std::string type_name_;          // custom nodes
  std::vector<std::string> keys_;  // dict keys / custom field names
  std::vector<Tree> children_;
};

std::string_view kind_name(Tree::Kind kind);  // "none", "bool", "int", ..., "custom"
// A hash consistent with operator== (tensors hash by identity; NaN doubles hash alike).
size_t hash_value(const Tree& tree);
std::ostream& operator<<(std::ostream& os, const Tree& tree);

// One step into a container: an index into a list or tuple, a dict key, or a custom field.
struct KeyEntry {
  enum class Kind : uint8_t { Index, Key, Field };
  Kind kind = Kind::Index;
  size_t index = 0;  // Index
  std::string name;  // Key, Field
  friend bool operator==(const KeyEntry&, const KeyEntry&) = default;
};

// The path from the root to a node. Prints as `[0]["cfg"].dim`; the root is "".
struct KeyPath {
  std::vector<KeyEntry> entries;

  KeyPath child(KeyEntry entry) const;
  std::string str() const;
  // str(), except that the empty path reads "<root>" (in a message, "" would read as nothing).
  std::string str_or_root() const { return entries.empty() ? "<root>" : str(); }
  friend bool operator==(const KeyPath&, const KeyPath&) = default;
};

// A tree's structure without its leaves.
class TreeSpec {
 public:
  enum class Kind : uint8_t { Leaf, None, List, Tuple, Dict, Custom };

  TreeSpec() = default;  // a single leaf
  static TreeSpec leaf() { return TreeSpec(); }
  // A container spec; `keys` are dict keys or field names (empty for lists and tuples),
  // `type_name` is for custom nodes. ValueError when the kinds and sizes disagree.
  static TreeSpec node(Kind kind, std::vector<TreeSpec> children, std::vector<std::string> keys = {},
                       std::string type_name = "");

  Kind kind() const { return kind_; }
  bool is_leaf() const { return kind_ == Kind::Leaf; }
  size_t num_leaves() const { return num_leaves_; }
  const std::vector<TreeSpec>& children() const { return children_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::string& type_name() const { return type_name_; }

  // The key path of every leaf, in flatten order.
  std::vector<KeyPath> leaf_paths() const;
  // `(*, {"a": *, "b": None}, [*, *], Config(dim=*))`.
  std::string str() const;
  size_t hash() const;
  friend bool operator==(const TreeSpec& a, const TreeSpec& b);

 private:
  Kind kind_ = Kind::Leaf;
  size_t num_leaves_ = 1;
  std::vector<TreeSpec> children_;
  std::vector<std::string> keys_;
  std::string type_name_;
};

std::ostream& operator<<(std::ostream& os, const TreeSpec& spec);

struct FlatTree {
  std::vector<Tree> leaves;  // every leaf, in depth-first order
  TreeSpec spec;
};

FlatTree flatten(const Tree& tree);
// Appends the leaves of `tree` to `leaves` without building a spec (the fast path of compiled calls).
void flatten_leaves(const Tree& tree, std::vector<Tree>& leaves);
// Any tree may stand at a leaf position. ValueError when the count differs from spec.num_leaves().
Tree unflatten(const TreeSpec& spec, std::vector<Tree> leaves);
// Applies `fn` to every leaf; the structure is kept.
Tree tree_map(const Tree& tree, const std::function<Tree(const Tree& leaf)>& fn);
Tree tree_map_with_path(const Tree& tree, const std::function<Tree(const KeyPath& path, const Tree& leaf)>& fn);

// The first place (depth first) where `tree`'s structure differs from `spec`, described for an
// error message: `expected` and `given` are short phrases such as `dict with keys ("a", "b")`,
// `a leaf`, `None`, `list of 3`. nullopt when the structures match.
struct StructureDifference {
  KeyPath path;
  std::string expected;
  std::string given;
};
std::optional<StructureDifference> find_structure_difference(const TreeSpec& spec, const Tree& tree);

}  // namespace px

template <>
struct std::hash<px::TreeSpec> {
  size_t operator()(const px::TreeSpec& spec) const { return spec.hash(); }
};
