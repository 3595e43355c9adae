// TreeSpec, flatten/unflatten, tree_map and the structure check of compiled calls.

#include <algorithm>
#include <ostream>

#include "parallax/core/error.h"
#include "parallax/pytree/tree.h"
#include "pytree/text.h"

namespace px {

namespace {

std::string_view spec_kind_name(TreeSpec::Kind kind) {
  switch (kind) {
    case TreeSpec::Kind::Leaf:
      return "Leaf";
    case TreeSpec::Kind::None:
      return "None";
    case TreeSpec::Kind::List:
      return "List";
    case TreeSpec::Kind::Tuple:
      return "Tuple";
    case TreeSpec::Kind::Dict:
      return "Dict";
    case TreeSpec::Kind::Custom:
      return "Custom";
  }
  return "unknown";
}

void check_spec_node(TreeSpec::Kind kind, const std::vector<TreeSpec>& children, const std::vector<std::string>& keys,
                     const std::string& type_name) {
  // Built only on the error paths: flatten() validates every node it makes.
  auto where = [kind] { return "TreeSpec::node(" + std::string(spec_kind_name(kind)) + ")"; };
  switch (kind) {
    case TreeSpec::Kind::Leaf:
      throw ValueError(where() + ": a leaf has no children; use TreeSpec::leaf()");
    case TreeSpec::Kind::None:
      if (!children.empty() || !keys.empty()) {
        throw ValueError(where() + ": None has no children, got " + std::to_string(children.size()) + " children and " +
                         std::to_string(keys.size()) + " keys");
      }
      break;
    case TreeSpec::Kind::List:
    case TreeSpec::Kind::Tuple:
      if (!keys.empty())
        throw ValueError(where() + ": lists and tuples have no keys, got " + std::to_string(keys.size()));
      break;
    case TreeSpec::Kind::Dict:
    case TreeSpec::Kind::Custom:
      if (keys.size() != children.size()) {
        throw ValueError(where() + ": " + std::to_string(keys.size()) + " keys for " + std::to_string(children.size()) +
                         " children");
      }
      if (const std::string* duplicate = pytree_detail::find_duplicate(keys)) {
        throw ValueError(where() + ": duplicate key '" + *duplicate + "'");
      }
      break;
  }
  if (kind == TreeSpec::Kind::Custom && type_name.empty())
    throw ValueError(where() + ": a custom node needs a type name");
  if (kind != TreeSpec::Kind::Custom && !type_name.empty()) {
    throw ValueError(where() + ": only custom nodes have a type name, got '" + type_name + "'");
  }
}

TreeSpec::Kind spec_kind_of(Tree::Kind kind) {
  switch (kind) {
    case Tree::Kind::None:
      return TreeSpec::Kind::None;
    case Tree::Kind::List:
      return TreeSpec::Kind::List;
    case Tree::Kind::Tuple:
      return TreeSpec::Kind::Tuple;
    case Tree::Kind::Dict:
      return TreeSpec::Kind::Dict;
    case Tree::Kind::Custom:
      return TreeSpec::Kind::Custom;
    case Tree::Kind::Bool:
    case Tree::Kind::Int:
    case Tree::Kind::Double:
    case Tree::Kind::String:
    case Tree::Kind::Tensor:
      break;
  }
  return TreeSpec::Kind::Leaf;
}

void append_spec(std::string& out, const TreeSpec& spec) {
  const auto& children = spec.children();
  auto append_children = [&](char open, char close) {
    out += open;
    for (size_t i = 0; i < children.size(); ++i) {
      if (i) out += ", ";
      if (spec.kind() == TreeSpec::Kind::Dict) {
        pytree_detail::append_quoted(out, spec.keys()[i]);
        out += ": ";
      } else if (spec.kind() == TreeSpec::Kind::Custom) {
        out += spec.keys()[i];
        out += '=';
      }
      append_spec(out, children[i]);
    }
    if (spec.kind() == TreeSpec::Kind::Tuple && children.size() == 1) out += ',';
    out += close;
  };
  switch (spec.kind()) {
    case TreeSpec::Kind::Leaf:
      out += '*';
      return;
    case TreeSpec::Kind::None:
      out += "None";
      return;
    case TreeSpec::Kind::List:
      append_children('[', ']');
      return;
    case TreeSpec::Kind::Tuple:
      append_children('(', ')');
      return;
    case TreeSpec::Kind::Dict:
      append_children('{', '}');
      return;
    case TreeSpec::Kind::Custom:
      out += spec.type_name();
      append_children('(', ')');
      return;
  }
}

void collect_leaf_paths(const TreeSpec& spec, KeyPath& path, std::vector<KeyPath>& out) {
  if (spec.is_leaf()) {
    out.push_back(path);
    return;
  }
  const auto& children = spec.children();
  for (size_t i = 0; i < children.size(); ++i) {
    switch (spec.kind()) {
      case TreeSpec::Kind::Dict:
        path.entries.push_back({.kind = KeyEntry::Kind::Key, .index = 0, .name = spec.keys()[i]});
        break;
      case TreeSpec::Kind::Custom:
        path.entries.push_back({.kind = KeyEntry::Kind::Field, .index = 0, .name = spec.keys()[i]});
        break;
      case TreeSpec::Kind::Leaf:
      case TreeSpec::Kind::None:
      case TreeSpec::Kind::List:
      case TreeSpec::Kind::Tuple:
        path.entries.push_back({.kind = KeyEntry::Kind::Index, .index = i, .name = {}});
        break;
    }
    collect_leaf_paths(children[i], path, out);
    path.entries.pop_back();
  }
}

size_t hash_combine(size_t seed, size_t value) {
  // boost::hash_combine's mix, widened to 64 bits.
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

TreeSpec spec_of(const Tree& tree, std::vector<Tree>& leaves) {
  if (tree.is_leaf()) {
    leaves.push_back(tree);
    return TreeSpec::leaf();
  }
  std::vector<TreeSpec> children;
  children.reserve(tree.size());
  for (const Tree& child : tree.children()) children.push_back(spec_of(child, leaves));
  return TreeSpec::node(spec_kind_of(tree.kind()), std::move(children), tree.keys(), tree.type_name());
}

Tree rebuild(const TreeSpec& spec, std::vector<Tree>& leaves, size_t& next) {
  if (spec.is_leaf()) return std::move(leaves[next++]);
  std::vector<Tree> children;
  children.reserve(spec.children().size());
  for (const TreeSpec& child : spec.children()) children.push_back(rebuild(child, leaves, next));
  auto keyed = [&] {
    std::vector<std::pair<std::string, Tree>> entries;
    entries.reserve(children.size());
    for (size_t i = 0; i < children.size(); ++i) entries.emplace_back(spec.keys()[i], std::move(children[i]));
    return entries;
  };
  switch (spec.kind()) {
    case TreeSpec::Kind::None:
      return Tree::none();
    case TreeSpec::Kind::List:
      return Tree::list(std::move(children));
    case TreeSpec::Kind::Tuple:
      return Tree::tuple(std::move(children));
    case TreeSpec::Kind::Dict:
      return Tree::dict(keyed());
    case TreeSpec::Kind::Custom:
      return Tree::custom(spec.type_name(), keyed());
    case TreeSpec::Kind::Leaf:
      break;
  }
  PX_ASSERT(false && "leaf specs return above");
  return Tree();
}

// Rebuilds `tree` with `leaf_fn(path, leaf)` at every leaf; `path` is kept in step with the recursion.
template <class LeafFn>
Tree map_tree(const Tree& tree, KeyPath* path, const LeafFn& leaf_fn) {
  if (tree.is_leaf()) return leaf_fn(path, tree);
  if (tree.is_none()) return tree;
  const auto& children = tree.children();
  std::vector<Tree> mapped;
  mapped.reserve(children.size());
  const bool keyed = tree.kind() == Tree::Kind::Dict || tree.kind() == Tree::Kind::Custom;
  for (size_t i = 0; i < children.size(); ++i) {
    if (path) {
      if (!keyed) {
        path->entries.push_back({.kind = KeyEntry::Kind::Index, .index = i, .name = {}});
      } else {
        path->entries.push_back({.kind = tree.kind() == Tree::Kind::Dict ? KeyEntry::Kind::Key : KeyEntry::Kind::Field,
                                 .index = 0,
                                 .name = tree.keys()[i]});
      }
    }
    mapped.push_back(map_tree(children[i], path, leaf_fn));
    if (path) path->entries.pop_back();
  }
  if (!keyed) return tree.kind() == Tree::Kind::List ? Tree::list(std::move(mapped)) : Tree::tuple(std::move(mapped));
  std::vector<std::pair<std::string, Tree>> entries;
  entries.reserve(mapped.size());
  for (size_t i = 0; i < mapped.size(); ++i) entries.emplace_back(tree.keys()[i], std::move(mapped[i]));
  return tree.kind() == Tree::Kind::Dict ? Tree::dict(std::move(entries))
                                         : Tree::custom(tree.type_name(), std::move(entries));
}

// The leaf kinds are contiguous in Tree::Kind; the structure check tests them without a call.
static_assert(Tree::Kind::Bool < Tree::Kind::Int && Tree::Kind::Int < Tree::Kind::Double &&
              Tree::Kind::Double < Tree::Kind::String && Tree::Kind::String < Tree::Kind::Tensor &&
              static_cast<int>(Tree::Kind::Tensor) - static_cast<int>(Tree::Kind::Bool) == 4);
inline bool is_leaf_kind(Tree::Kind kind) { return kind >= Tree::Kind::Bool && kind <= Tree::Kind::Tensor; }

// True when `tree` has exactly the node kind, size, keys and type name of `spec` (children not looked at).
bool same_node(const TreeSpec& spec, const Tree& tree) {
  switch (spec.kind()) {
    case TreeSpec::Kind::Leaf:
      return is_leaf_kind(tree.kind());
    case TreeSpec::Kind::None:
      return tree.is_none();
    case TreeSpec::Kind::List:
      return tree.kind() == Tree::Kind::List && tree.size() == spec.children().size();
    case TreeSpec::Kind::Tuple:
      return tree.kind() == Tree::Kind::Tuple && tree.size() == spec.children().size();
    case TreeSpec::Kind::Dict:
      return tree.kind() == Tree::Kind::Dict && tree.keys() == spec.keys();
    case TreeSpec::Kind::Custom:
      return tree.kind() == Tree::Kind::Custom && tree.type_name() == spec.type_name() && tree.keys() == spec.keys();
  }
  return false;
}

// Depth first; on a difference fills `out` with the entries from the difference up to the root
// (reversed by the caller), so that a matching tree allocates nothing.
bool differs(const TreeSpec& spec, const Tree& tree, StructureDifference& out) {
  if (!same_node(spec, tree)) {
    out.expected = pytree_detail::describe_node(spec);
    out.given = pytree_detail::describe_node(tree, "a leaf (" + std::string(kind_name(tree.kind())) + ")");
    return true;
  }
  const auto& spec_children = spec.children();
  const auto& tree_children = tree.children();
  for (size_t i = 0; i < spec_children.size(); ++i) {
    // Leaves (most children of a call's arguments) are settled here, without a recursive call.
    if (spec_children[i].is_leaf() && is_leaf_kind(tree_children[i].kind())) continue;
    if (!differs(spec_children[i], tree_children[i], out)) continue;
    switch (spec.kind()) {
      case TreeSpec::Kind::Dict:
        out.path.entries.push_back({.kind = KeyEntry::Kind::Key, .index = 0, .name = spec.keys()[i]});
        break;
      case TreeSpec::Kind::Custom:
        out.path.entries.push_back({.kind = KeyEntry::Kind::Field, .index = 0, .name = spec.keys()[i]});
        break;
      case TreeSpec::Kind::Leaf:
      case TreeSpec::Kind::None:
      case TreeSpec::Kind::List:
      case TreeSpec::Kind::Tuple:
        out.path.entries.push_back({.kind = KeyEntry::Kind::Index, .index = i, .name = {}});
        break;
    }
    return true;
  }
  return false;
}

}  // namespace

// --- TreeSpec ---

TreeSpec TreeSpec::node(Kind kind, std::vector<TreeSpec> children, std::vector<std::string> keys,
                        std::string type_name) {
  check_spec_node(kind, children, keys, type_name);
  TreeSpec spec;
  spec.kind_ = kind;
  spec.num_leaves_ = 0;
  for (const TreeSpec& child : children) spec.num_leaves_ += child.num_leaves_;
  spec.children_ = std::move(children);
  spec.keys_ = std::move(keys);
  spec.type_name_ = std::move(type_name);
  return spec;
}

std::vector<KeyPath> TreeSpec::leaf_paths() const {
  std::vector<KeyPath> out;
  out.reserve(num_leaves_);
  KeyPath path;
  collect_leaf_paths(*this, path, out);
  return out;
}

std::string TreeSpec::str() const {
  std::string out;
  append_spec(out, *this);
  return out;
}

size_t TreeSpec::hash() const {
  std::hash<std::string_view> hash_string;
  size_t seed = hash_combine(static_cast<size_t>(kind_), children_.size());
  if (!type_name_.empty()) seed = hash_combine(seed, hash_string(type_name_));
  for (const std::string& key : keys_) seed = hash_combine(seed, hash_string(key));
  for (const TreeSpec& child : children_) seed = hash_combine(seed, child.hash());
  return seed;
}

bool operator==(const TreeSpec& a, const TreeSpec& b) {
  return a.kind_ == b.kind_ && a.num_leaves_ == b.num_leaves_ && a.type_name_ == b.type_name_ && a.keys_ == b.keys_ &&
         a.children_ == b.children_;
}

std::ostream& operator<<(std::ostream& os, const TreeSpec& spec) { return os << spec.str(); }

// --- flatten / unflatten / map ---

FlatTree flatten(const Tree& tree) {
  FlatTree flat;
  flat.spec = spec_of(tree, flat.leaves);
  return flat;
}

void flatten_leaves(const Tree& tree, std::vector<Tree>& leaves) {
  if (is_leaf_kind(tree.kind())) {
    leaves.push_back(tree);
    return;
  }
  for (const Tree& child : tree.children()) {
    if (is_leaf_kind(child.kind())) {
      leaves.push_back(child);
    } else {
      flatten_leaves(child, leaves);
    }
  }
}

Tree unflatten(const TreeSpec& spec, std::vector<Tree> leaves) {
  if (leaves.size() != spec.num_leaves()) {
    throw ValueError("unflatten: the spec has " + std::to_string(spec.num_leaves()) + " leaves but " +
                     std::to_string(leaves.size()) + " values were given");
  }
  size_t next = 0;
  return rebuild(spec, leaves, next);
}

Tree tree_map(const Tree& tree, const std::function<Tree(const Tree& leaf)>& fn) {
  return map_tree(tree, nullptr, [&](const KeyPath*, const Tree& leaf) { return fn(leaf); });
}

Tree tree_map_with_path(const Tree& tree, const std::function<Tree(const KeyPath& path, const Tree& leaf)>& fn) {
  KeyPath path;
  return map_tree(tree, &path, [&](const KeyPath* at, const Tree& leaf) { return fn(*at, leaf); });
}

std::optional<StructureDifference> find_structure_difference(const TreeSpec& spec, const Tree& tree) {
  StructureDifference difference;
  if (!differs(spec, tree, difference)) return std::nullopt;
  std::reverse(difference.path.entries.begin(), difference.path.entries.end());
  return difference;
}

}  // namespace px
