// Tree, KeyPath, TreeSpec, flatten/unflatten, tree_map and structure differences.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/pytree/tree.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::expect_value_error;

Tree config(int64_t dim, const std::string& act) {
  return Tree::custom("Config", {{"dim", Tree::integer(dim)}, {"act", Tree::string(act)}});
}

// (f32[2,3], 7, {"a": 1.5, "b": [true, "s"], "cfg": Config(dim=4, act="gelu")}, None, (f64[],))
Tree deep_tree(const Tensor& x, const Tensor& y) {
  return Tree::tuple({
      Tree::tensor(x),
      Tree::integer(7),
      Tree::dict({{"a", Tree::real(1.5)},
                  {"b", Tree::list({Tree::boolean(true), Tree::string("s")})},
                  {"cfg", config(4, "gelu")}}),
      Tree::none(),
      Tree::tuple({Tree::tensor(y)}),
  });
}

KeyEntry index_entry(size_t i) { return {.kind = KeyEntry::Kind::Index, .index = i, .name = {}}; }
KeyEntry key_entry(const std::string& key) { return {.kind = KeyEntry::Kind::Key, .index = 0, .name = key}; }
KeyEntry field_entry(const std::string& name) { return {.kind = KeyEntry::Kind::Field, .index = 0, .name = name}; }

// --- construction and accessors ---

TEST(PyTree, LeafFactoriesAndAccessors) {
  EXPECT_EQ(Tree().kind(), Tree::Kind::None);
  EXPECT_TRUE(Tree::none().is_none());
  EXPECT_FALSE(Tree::none().is_leaf());
  EXPECT_FALSE(Tree::none().is_container());
  EXPECT_EQ(Tree::none().size(), 0u);

  EXPECT_TRUE(Tree::boolean(true).as_bool());
  EXPECT_EQ(Tree::integer(-42).as_int(), -42);
  EXPECT_EQ(Tree::real(2.5).as_double(), 2.5);
  EXPECT_EQ(Tree::string("hi").as_string(), "hi");
  Tensor t = Tensor::meta({2, 3});
  EXPECT_TRUE(Tree::tensor(t).as_tensor().same(t));

  for (const Tree& leaf : {Tree::boolean(false), Tree::integer(1), Tree::real(1), Tree::string(""), Tree::tensor(t)}) {
    EXPECT_TRUE(leaf.is_leaf()) << leaf;
    EXPECT_FALSE(leaf.is_container()) << leaf;
  }
  EXPECT_EQ(Tree::integer(1).kind(), Tree::Kind::Int);
  EXPECT_EQ(Tree::real(1).kind(), Tree::Kind::Double);
  EXPECT_EQ(Tree::tensor(t).kind(), Tree::Kind::Tensor);
}

TEST(PyTree, AccessorKindMismatchNamesBothKinds) {
  expect_value_error([] { (void)Tree::string("x").as_int(); }, "Tree::as_int: expected int, got string");
  expect_value_error([] { (void)Tree::integer(1).as_double(); }, "Tree::as_double: expected double, got int");
  expect_value_error([] { (void)Tree::none().as_bool(); }, "Tree::as_bool: expected bool, got none");
  expect_value_error([] { (void)Tree::list({}).as_string(); }, "Tree::as_string: expected string, got list");
  expect_value_error([] { (void)Tree::boolean(true).as_tensor(); }, "Tree::as_tensor: expected tensor, got bool");
}

TEST(PyTree, Containers) {
  Tree list = Tree::list({Tree::integer(1), Tree::integer(2)});
  EXPECT_TRUE(list.is_container());
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].as_int(), 2);
  EXPECT_TRUE(list.keys().empty());
  EXPECT_EQ(list.type_name(), "");

  Tree dict = Tree::dict({{"b", Tree::integer(1)}, {"a", Tree::integer(2)}});
  EXPECT_EQ(dict.keys(), (std::vector<std::string>{"b", "a"}));  // insertion order kept
  EXPECT_EQ(dict.at("a").as_int(), 2);
  EXPECT_EQ(dict[0].as_int(), 1);

  Tree cfg = config(4, "gelu");
  EXPECT_EQ(cfg.kind(), Tree::Kind::Custom);
  EXPECT_EQ(cfg.type_name(), "Config");
  EXPECT_EQ(cfg.keys(), (std::vector<std::string>{"dim", "act"}));
  EXPECT_EQ(cfg.at("act").as_string(), "gelu");
}

TEST(PyTree, ContainerErrors) {
  expect_value_error(
      [] {
        (void)Tree::dict({{"a", Tree::integer(1)}, {"a", Tree::integer(2)}});
      },
      "Tree::dict: duplicate key \"a\"");
  expect_value_error(
      [] {
        (void)Tree::custom("C", {{"x", Tree()}, {"x", Tree()}});
      },
      "Tree::custom: C: duplicate field \"x\"");
  expect_value_error([] { (void)Tree::custom("", {}); }, "Tree::custom: the type name is empty");
  Tree list = Tree::list({Tree::integer(1)});
  expect_value_error([&] { (void)list[1]; }, "Tree::operator[]: index 1 is out of range for a list of size 1");
  expect_value_error([] { (void)Tree::integer(3)[0]; },
                     "Tree::operator[]: a leaf of kind int has no children (index 0)");
  expect_value_error([] { (void)Tree::none()[0]; }, "Tree::operator[]: index 0 is out of range for a none of size 0");
  Tree dict = Tree::dict({{"a", Tree::integer(1)}, {"b", Tree::integer(2)}});
  expect_value_error([&] { (void)dict.at("c"); }, "Tree::at: no key \"c\" in dict with keys (\"a\", \"b\")");
  expect_value_error([] { (void)config(1, "x").at("width"); },
                     "Tree::at: no field \"width\" in Config with fields (dim, act)");
  expect_value_error([&] { (void)list.at("a"); },
                     "Tree::at: key \"a\" on a node of kind list; only dicts and custom nodes have keys");
}

TEST(PyTree, DuplicateKeysInALargeDict) {
  std::vector<std::pair<std::string, Tree>> entries;
  for (int i = 0; i < 100; ++i) entries.emplace_back("k" + std::to_string(i), Tree::integer(i));
  EXPECT_EQ(Tree::dict(entries).size(), 100u);
  entries.emplace_back("k57", Tree::integer(0));
  expect_value_error([&] { (void)Tree::dict(entries); }, "Tree::dict: duplicate key \"k57\"");
}

// --- printing ---

TEST(PyTree, StrForms) {
  EXPECT_EQ(Tree::none().str(), "None");
  EXPECT_EQ(Tree::boolean(true).str(), "true");
  EXPECT_EQ(Tree::boolean(false).str(), "false");
  EXPECT_EQ(Tree::integer(-3).str(), "-3");
  EXPECT_EQ(Tree::string("gelu").str(), "\"gelu\"");
  EXPECT_EQ(Tree::string("a\"b\\c\n").str(), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(Tree::tensor(Tensor::meta({2, 3})).str(), "f32[2,3]");
  EXPECT_EQ(Tree::tensor(Tensor::zeros({}, DType::Float64)).str(), "f64[]");
  EXPECT_EQ(Tree::list({Tree::integer(1), Tree::integer(2)}).str(), "[1, 2]");
  EXPECT_EQ(Tree::list({}).str(), "[]");
  EXPECT_EQ(Tree::tuple({Tree::integer(1), Tree::integer(2)}).str(), "(1, 2)");
  EXPECT_EQ(Tree::tuple({Tree::integer(1)}).str(), "(1,)");
  EXPECT_EQ(Tree::tuple({}).str(), "()");
  EXPECT_EQ(Tree::dict({{"a", Tree::integer(1)}}).str(), "{\"a\": 1}");
  EXPECT_EQ(Tree::dict({}).str(), "{}");
  EXPECT_EQ(config(4, "gelu").str(), "Config(dim=4, act=\"gelu\")");
  EXPECT_EQ(deep_tree(Tensor::meta({2, 3}), Tensor::meta({}, DType::Float64)).str(),
            "(f32[2,3], 7, {\"a\": 1.5, \"b\": [true, \"s\"], \"cfg\": Config(dim=4, act=\"gelu\")}, None, (f64[],))");
  std::ostringstream os;
  os << Tree::list({Tree::none()});
  EXPECT_EQ(os.str(), "[None]");
}

TEST(PyTree, DoublesPrintShortestAndRoundTrip) {
  EXPECT_EQ(Tree::real(1.5).str(), "1.5");
  EXPECT_EQ(Tree::real(1.0).str(), "1.0");
  EXPECT_EQ(Tree::real(-0.0).str(), "-0.0");
  EXPECT_EQ(Tree::real(0.1).str(), "0.1");
  EXPECT_EQ(Tree::real(1e20).str(), "1e+20");
  EXPECT_EQ(Tree::real(1.0 / 0.0).str(), "inf");
  EXPECT_EQ(Tree::real(-1.0 / 0.0).str(), "-inf");
  EXPECT_EQ(Tree::real(std::nan("")).str(), "nan");
  for (double value : {0.1 + 0.2, 1.0 / 3.0, 6.02214076e23, 5e-324, 1.7976931348623157e308}) {
    EXPECT_EQ(std::strtod(Tree::real(value).str().c_str(), nullptr), value);
  }
}

TEST(PyTree, KindNames) {
  EXPECT_EQ(kind_name(Tree::Kind::None), "none");
  EXPECT_EQ(kind_name(Tree::Kind::Bool), "bool");
  EXPECT_EQ(kind_name(Tree::Kind::Int), "int");
  EXPECT_EQ(kind_name(Tree::Kind::Double), "double");
  EXPECT_EQ(kind_name(Tree::Kind::String), "string");
  EXPECT_EQ(kind_name(Tree::Kind::Tensor), "tensor");
  EXPECT_EQ(kind_name(Tree::Kind::List), "list");
  EXPECT_EQ(kind_name(Tree::Kind::Tuple), "tuple");
  EXPECT_EQ(kind_name(Tree::Kind::Dict), "dict");
  EXPECT_EQ(kind_name(Tree::Kind::Custom), "custom");
}

// --- equality ---

TEST(PyTree, Equality) {
  Tensor x = Tensor::zeros({2});
  Tensor x_copy = Tensor::zeros({2});
  Tensor y = Tensor::meta({});
  EXPECT_EQ(deep_tree(x, y), deep_tree(x, y));
  EXPECT_NE(deep_tree(x, y), deep_tree(x_copy, y));  // tensors compare by identity
  EXPECT_NE(Tree::integer(1), Tree::real(1.0));
  EXPECT_NE(Tree::integer(1), Tree::integer(2));
  EXPECT_NE(Tree::string("a"), Tree::string("b"));
  EXPECT_NE(Tree::boolean(true), Tree::boolean(false));
  EXPECT_EQ(Tree::real(std::nan("")), Tree::real(std::nan("")));
  EXPECT_NE(Tree::list({Tree::integer(1)}), Tree::tuple({Tree::integer(1)}));
  EXPECT_NE(Tree::list({Tree::integer(1)}), Tree::list({Tree::integer(1), Tree::integer(1)}));
  EXPECT_NE(Tree::dict({{"a", Tree()}}), Tree::dict({{"b", Tree()}}));
  EXPECT_NE(config(1, "x"), Tree::custom("Other", {{"dim", Tree::integer(1)}, {"act", Tree::string("x")}}));
  EXPECT_NE(config(1, "x"), config(1, "y"));
  EXPECT_EQ(Tree::none(), Tree());
}

TEST(PyTree, CopiesKeepStructureAndShareTensors) {
  Tensor x = Tensor::meta({2, 3});
  Tree tree = deep_tree(x, x);
  Tree copy = tree;
  EXPECT_EQ(copy, tree);
  EXPECT_EQ(copy.str(), tree.str());
  EXPECT_TRUE(copy[0].as_tensor().same(x));
  EXPECT_EQ(copy[2].at("cfg").type_name(), "Config");
  EXPECT_EQ(copy[2].keys(), (std::vector<std::string>{"a", "b", "cfg"}));
  Tree assigned;
  assigned = copy;
  EXPECT_EQ(assigned, tree);
  Tree moved = std::move(copy);
  EXPECT_EQ(moved, tree);
  Tree leaf = Tree::string("long enough to live on the heap, not in the small-string buffer");
  Tree leaf_copy = leaf;
  EXPECT_EQ(leaf_copy.as_string(), leaf.as_string());
  EXPECT_EQ(Tree::tensor(Tensor()).str(), "undefined");
}

// --- key paths ---

TEST(PyTree, KeyPathStr) {
  KeyPath root;
  EXPECT_EQ(root.str(), "");
  KeyPath path = root.child(index_entry(0)).child(key_entry("cfg")).child(field_entry("dim"));
  EXPECT_EQ(path.str(), "[0][\"cfg\"].dim");
  EXPECT_EQ(root.entries.size(), 0u);  // child() leaves the parent alone
  EXPECT_EQ(KeyPath{}.child(key_entry("a\"b")).str(), "[\"a\\\"b\"]");
  EXPECT_EQ(path, KeyPath{}.child(index_entry(0)).child(key_entry("cfg")).child(field_entry("dim")));
  EXPECT_NE(path, KeyPath{}.child(index_entry(0)).child(key_entry("cfg")).child(key_entry("dim")));
}

// --- specs ---

TEST(PyTree, SpecNodeAndStr) {
  TreeSpec spec = TreeSpec::node(
      TreeSpec::Kind::Tuple,
      {TreeSpec::leaf(),
       TreeSpec::node(TreeSpec::Kind::Dict, {TreeSpec::leaf(), TreeSpec::node(TreeSpec::Kind::None, {})}, {"a", "b"}),
       TreeSpec::node(TreeSpec::Kind::List, {TreeSpec::leaf(), TreeSpec::leaf()}),
       TreeSpec::node(TreeSpec::Kind::Custom, {TreeSpec::leaf()}, {"dim"}, "Config")});
  EXPECT_EQ(spec.str(), "(*, {\"a\": *, \"b\": None}, [*, *], Config(dim=*))");
  EXPECT_EQ(spec.num_leaves(), 5u);
  EXPECT_EQ(spec.kind(), TreeSpec::Kind::Tuple);
  EXPECT_EQ(spec.children().size(), 4u);
  EXPECT_EQ(spec.children()[3].type_name(), "Config");
  EXPECT_EQ(TreeSpec::leaf().str(), "*");
  EXPECT_EQ(TreeSpec::leaf().num_leaves(), 1u);
  EXPECT_EQ(TreeSpec::node(TreeSpec::Kind::Tuple, {TreeSpec::leaf()}).str(), "(*,)");
  EXPECT_EQ(TreeSpec::node(TreeSpec::Kind::None, {}).num_leaves(), 0u);
  std::ostringstream os;
  os << TreeSpec::node(TreeSpec::Kind::List, {});
  EXPECT_EQ(os.str(), "[]");
}

TEST(PyTree, SpecNodeValidates) {
  expect_value_error(
      [] {
        (void)TreeSpec::node(TreeSpec::Kind::Dict, {TreeSpec::leaf()}, {"a", "b"});
      },
      "TreeSpec::node(Dict): 2 keys for 1 children");
  expect_value_error([] { (void)TreeSpec::node(TreeSpec::Kind::Custom, {TreeSpec::leaf()}, {}, "C"); },
                     "TreeSpec::node(Custom): 0 keys for 1 children");
  expect_value_error([] { (void)TreeSpec::node(TreeSpec::Kind::List, {TreeSpec::leaf()}, {"a"}); },
                     "TreeSpec::node(List): lists and tuples have no keys, got 1");
  expect_value_error([] { (void)TreeSpec::node(TreeSpec::Kind::None, {TreeSpec::leaf()}); },
                     "TreeSpec::node(None): None has no children, got 1 children and 0 keys");
  expect_value_error([] { (void)TreeSpec::node(TreeSpec::Kind::Leaf, {}); },
                     "TreeSpec::node(Leaf): a leaf has no children; use TreeSpec::leaf()");
  expect_value_error([] { (void)TreeSpec::node(TreeSpec::Kind::Custom, {}, {}, ""); },
                     "TreeSpec::node(Custom): a custom node needs a type name");
  expect_value_error([] { (void)TreeSpec::node(TreeSpec::Kind::List, {}, {}, "C"); },
                     "TreeSpec::node(List): only custom nodes have a type name, got 'C'");
  expect_value_error(
      [] {
        (void)TreeSpec::node(TreeSpec::Kind::Dict, {TreeSpec::leaf(), TreeSpec::leaf()}, {"a", "a"});
      },
      "TreeSpec::node(Dict): duplicate key 'a'");
}

TEST(PyTree, LeafPathsPrintAsKeyPaths) {
  Tree tree = Tree::tuple({Tree::dict({{"cfg", config(4, "gelu")}, {"xs", Tree::list({Tree::integer(1)})}}),
                           Tree::tensor(Tensor::meta({1}))});
  std::vector<KeyPath> paths = flatten(tree).spec.leaf_paths();
  std::vector<std::string> printed;
  for (const KeyPath& path : paths) printed.push_back(path.str());
  EXPECT_EQ(printed, (std::vector<std::string>{"[0][\"cfg\"].dim", "[0][\"cfg\"].act", "[0][\"xs\"][0]", "[1]"}));
  EXPECT_EQ(paths[0], KeyPath{}.child(index_entry(0)).child(key_entry("cfg")).child(field_entry("dim")));
  EXPECT_EQ(TreeSpec::leaf().leaf_paths(), std::vector<KeyPath>{KeyPath{}});
}

TEST(PyTree, SpecEqualityAndHash) {
  Tensor x = Tensor::meta({2});
  Tensor y = Tensor::meta({3});
  TreeSpec a = flatten(deep_tree(x, y)).spec;
  TreeSpec b = flatten(deep_tree(y, x)).spec;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(std::hash<TreeSpec>{}(a), a.hash());

  // Leaf kinds are not part of the structure.
  EXPECT_EQ(flatten(Tree::list({Tree::integer(1)})).spec, flatten(Tree::list({Tree::tensor(x)})).spec);

  std::vector<TreeSpec> distinct = {
      flatten(Tree::dict({{"a", Tree::integer(1)}})).spec,
      flatten(Tree::dict({{"b", Tree::integer(1)}})).spec,
      flatten(Tree::list({Tree::integer(1)})).spec,
      flatten(Tree::list({Tree::integer(1), Tree::integer(2)})).spec,
      flatten(Tree::tuple({Tree::integer(1)})).spec,
      flatten(Tree::list({Tree::none()})).spec,
      flatten(Tree::custom("A", {{"a", Tree::integer(1)}})).spec,
      flatten(Tree::custom("B", {{"a", Tree::integer(1)}})).spec,
      flatten(Tree::integer(1)).spec,
      flatten(Tree::none()).spec,
      flatten(Tree::list({})).spec,
      flatten(Tree::tuple({})).spec,
      flatten(Tree::dict({{"a", Tree::integer(1)}, {"b", Tree::integer(1)}})).spec,
      flatten(Tree::dict({{"b", Tree::integer(1)}, {"a", Tree::integer(1)}})).spec,
  };
  std::unordered_set<size_t> hashes;
  for (size_t i = 0; i < distinct.size(); ++i) {
    hashes.insert(distinct[i].hash());
    for (size_t j = 0; j < distinct.size(); ++j) {
      EXPECT_EQ(distinct[i] == distinct[j], i == j) << distinct[i] << " vs " << distinct[j];
    }
  }
  EXPECT_EQ(hashes.size(), distinct.size());
}

// --- flatten / unflatten ---

TEST(PyTree, FlattenUnflattenRoundTrip) {
  Tensor x = Tensor::meta({2, 3});
  Tensor y = Tensor::meta({}, DType::Float64);
  Tree tree = deep_tree(x, y);
  FlatTree flat = flatten(tree);
  ASSERT_EQ(flat.leaves.size(), 8u);
  EXPECT_EQ(flat.spec.num_leaves(), 8u);
  EXPECT_TRUE(flat.leaves[0].as_tensor().same(x));
  EXPECT_EQ(flat.leaves[1].as_int(), 7);
  EXPECT_EQ(flat.leaves[2].as_double(), 1.5);
  EXPECT_TRUE(flat.leaves[3].as_bool());
  EXPECT_EQ(flat.leaves[4].as_string(), "s");
  EXPECT_EQ(flat.leaves[5].as_int(), 4);
  EXPECT_EQ(flat.leaves[6].as_string(), "gelu");
  EXPECT_TRUE(flat.leaves[7].as_tensor().same(y));
  EXPECT_EQ(flat.spec.str(), "(*, *, {\"a\": *, \"b\": [*, *], \"cfg\": Config(dim=*, act=*)}, None, (*,))");
  EXPECT_EQ(unflatten(flat.spec, flat.leaves), tree);

  std::vector<Tree> fast;
  flatten_leaves(tree, fast);
  EXPECT_EQ(fast, flat.leaves);
  flatten_leaves(Tree::list({Tree::integer(9)}), fast);  // appends
  ASSERT_EQ(fast.size(), 9u);
  EXPECT_EQ(fast.back().as_int(), 9);
}

TEST(PyTree, FlattenOfALeafAndOfNone) {
  FlatTree leaf = flatten(Tree::integer(3));
  EXPECT_TRUE(leaf.spec.is_leaf());
  ASSERT_EQ(leaf.leaves.size(), 1u);
  EXPECT_EQ(unflatten(leaf.spec, {Tree::string("z")}), Tree::string("z"));

  FlatTree none = flatten(Tree::none());
  EXPECT_EQ(none.spec.kind(), TreeSpec::Kind::None);
  EXPECT_TRUE(none.leaves.empty());
  EXPECT_EQ(unflatten(none.spec, {}), Tree::none());
}

TEST(PyTree, UnflattenPutsAnyTreeAtALeafAndChecksTheCount) {
  TreeSpec spec = flatten(Tree::dict({{"a", Tree::integer(1)}, {"b", Tree::integer(2)}})).spec;
  Tree rebuilt = unflatten(spec, {Tree::list({Tree::integer(1)}), Tree::none()});
  EXPECT_EQ(rebuilt.str(), "{\"a\": [1], \"b\": None}");
  expect_value_error([&] { (void)unflatten(spec, {Tree::integer(1)}); },
                     "unflatten: the spec has 2 leaves but 1 values were given");
  expect_value_error(
      [&] {
        (void)unflatten(spec, {Tree(), Tree(), Tree()});
      },
      "unflatten: the spec has 2 leaves but 3 values were given");
}

// --- tree_map ---

TEST(PyTree, TreeMapKeepsStructure) {
  Tree tree = Tree::tuple({Tree::integer(1), Tree::dict({{"a", Tree::integer(2)}, {"n", Tree::none()}}),
                           Tree::custom("P", {{"x", Tree::integer(3)}})});
  Tree doubled = tree_map(tree, [](const Tree& leaf) { return Tree::integer(leaf.as_int() * 2); });
  EXPECT_EQ(doubled.str(), "(2, {\"a\": 4, \"n\": None}, P(x=6))");
  EXPECT_EQ(flatten(doubled).spec, flatten(tree).spec);

  std::vector<std::string> seen;
  Tree named = tree_map_with_path(tree, [&](const KeyPath& path, const Tree& leaf) {
    seen.push_back(path.str());
    return Tree::string(path.str() + "=" + leaf.str());
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"[0]", "[1][\"a\"]", "[2].x"}));
  EXPECT_EQ(named.str(), "(\"[0]=1\", {\"a\": \"[1][\\\"a\\\"]=2\", \"n\": None}, P(x=\"[2].x=3\"))");
  EXPECT_EQ(
      tree_map_with_path(Tree::integer(5), [](const KeyPath& path, const Tree&) { return Tree::string(path.str()); })
          .as_string(),
      "");
}

// --- structure differences ---

struct DifferenceCase {
  Tree tree;
  std::string path;
  std::string expected;
  std::string given;
};

TEST(PyTree, StructureDifferences) {
  Tensor x = Tensor::meta({2});
  TreeSpec spec = flatten(deep_tree(x, x)).spec;
  EXPECT_FALSE(find_structure_difference(spec, deep_tree(x, x)).has_value());

  // A leaf position takes any leaf: an int where a tensor was is a value difference, not a structural one.
  Tree with_int = Tree::tuple({Tree::integer(0), Tree::string("seven"),
                               Tree::dict({{"a", Tree::tensor(x)},
                                           {"b", Tree::list({Tree::real(0), Tree::boolean(false)})},
                                           {"cfg", config(4, "gelu")}}),
                               Tree::none(), Tree::tuple({Tree::integer(1)})});
  EXPECT_FALSE(find_structure_difference(spec, with_int).has_value());

  auto replace = [&](size_t index, Tree child) {
    std::vector<Tree> items = deep_tree(x, x).children();
    items[index] = std::move(child);
    return Tree::tuple(std::move(items));
  };
  Tree bad_cfg =
      Tree::dict({{"a", Tree::real(1.5)},
                  {"b", Tree::list({Tree::boolean(true), Tree::string("s")})},
                  {"cfg", Tree::custom("Config", {{"dim", Tree::list({})}, {"act", Tree::string("gelu")}})}});
  std::vector<DifferenceCase> cases = {
      {Tree::list({}), "", "tuple of 5", "list of 0"},
      {Tree::tuple({}), "", "tuple of 5", "tuple of 0"},
      {replace(0, Tree::none()), "[0]", "a leaf", "None"},
      {replace(1, Tree::list({Tree::integer(7)})), "[1]", "a leaf", "list of 1"},
      {replace(3, Tree::integer(0)), "[3]", "None", "a leaf (int)"},
      {replace(4, Tree::tensor(x)), "[4]", "tuple of 1", "a leaf (tensor)"},
      {replace(4, Tree::tuple({Tree::tensor(x), Tree::tensor(x)})), "[4]", "tuple of 1", "tuple of 2"},
      {replace(2, Tree::dict({{"a", Tree()}, {"c", Tree()}})), "[2]", "dict with keys (\"a\", \"b\", \"cfg\")",
       "dict with keys (\"a\", \"c\")"},
      {replace(2, Tree::dict({{"b", Tree()}, {"a", Tree()}, {"cfg", Tree()}})), "[2]",
       "dict with keys (\"a\", \"b\", \"cfg\")", "dict with keys (\"b\", \"a\", \"cfg\")"},
      {replace(2, Tree::list({})), "[2]", "dict with keys (\"a\", \"b\", \"cfg\")", "list of 0"},
      {replace(2, bad_cfg), "[2][\"cfg\"].dim", "a leaf", "list of 0"},
  };
  for (const DifferenceCase& c : cases) {
    auto difference = find_structure_difference(spec, c.tree);
    ASSERT_TRUE(difference.has_value()) << c.tree;
    EXPECT_EQ(difference->path.str(), c.path) << c.tree;
    EXPECT_EQ(difference->expected, c.expected) << c.tree;
    EXPECT_EQ(difference->given, c.given) << c.tree;
  }
}

TEST(PyTree, StructureDifferencesOfCustomNodes) {
  TreeSpec spec = flatten(Tree::list({config(1, "a"), config(2, "b")})).spec;
  auto difference =
      find_structure_difference(spec, Tree::list({config(1, "a"), Tree::custom("Other", {{"dim", Tree()}})}));
  ASSERT_TRUE(difference.has_value());
  EXPECT_EQ(difference->path.str(), "[1]");
  EXPECT_EQ(difference->expected, "Config with fields (dim, act)");
  EXPECT_EQ(difference->given, "Other with fields (dim)");
  EXPECT_EQ(difference->path.entries, std::vector<KeyEntry>{index_entry(1)});

  difference = find_structure_difference(
      spec, Tree::list({Tree::custom("Config", {{"act", Tree()}, {"dim", Tree()}}), config(2, "b")}));
  ASSERT_TRUE(difference.has_value());
  EXPECT_EQ(difference->path.str(), "[0]");
  EXPECT_EQ(difference->given, "Config with fields (act, dim)");

  EXPECT_FALSE(find_structure_difference(TreeSpec::leaf(), Tree::tensor(Tensor::meta({}))).has_value());
  difference = find_structure_difference(TreeSpec::leaf(), Tree::dict({}));
  ASSERT_TRUE(difference.has_value());
  EXPECT_EQ(difference->path.str(), "");
  EXPECT_EQ(difference->expected, "a leaf");
  EXPECT_EQ(difference->given, "dict with keys ()");
}

TEST(PyTree, StructureCheckOfManyTensorsAgainstItsSpec) {
  std::vector<Tree> items;
  for (int i = 0; i < 100; ++i) items.push_back(Tree::tensor(Tensor::meta({i + 1})));
  Tree args = Tree::tuple(items);
  TreeSpec spec = flatten(args).spec;
  EXPECT_EQ(spec.num_leaves(), 100u);
  std::vector<Tree> leaves;
  leaves.reserve(100);
  for (int round = 0; round < 1000; ++round) {
    leaves.clear();
    flatten_leaves(args, leaves);
    ASSERT_FALSE(find_structure_difference(spec, args).has_value());
  }
  EXPECT_EQ(leaves.size(), 100u);
}

}  // namespace
}  // namespace px
