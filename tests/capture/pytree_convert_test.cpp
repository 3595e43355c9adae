// to_tree / from_tree for the built-in types and for structs registered with PX_TREE_STRUCT.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/pytree/convert.h"
#include "support/test_util.h"

// User code lives outside px: registration must work through argument-dependent lookup alone.
namespace px_tree_user_test {

struct Activation {
  std::string name;
  double alpha = 0;
};
PX_TREE_STRUCT(Activation, name, alpha)

struct Block {
  int64_t dim = 0;
  Activation act;
  std::vector<px::Tensor> weights;
  std::optional<int32_t> heads;
};
PX_TREE_STRUCT(Block, dim, act, weights, heads)

// Same field names as Activation, another type.
struct OtherActivation {
  std::string name;
  double alpha = 0;
};
PX_TREE_STRUCT(OtherActivation, name, alpha)

struct Wide {
  int f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16;
};
PX_TREE_STRUCT(Wide, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16)

struct One {
  bool flag = false;
};
PX_TREE_STRUCT(One, flag)

}  // namespace px_tree_user_test

namespace px {
namespace {

using px_tree_user_test::Activation;
using px_tree_user_test::Block;

using testing::expect_value_error;

// Field by field: g++ 12 at -O3 wrongly reports the strings of a designated-initializer Block as
// maybe-uninitialized.
Block make_block(int64_t dim, const std::string& act, double alpha, std::vector<Tensor> weights,
                 std::optional<int32_t> heads) {
  Block block;
  block.dim = dim;
  block.act.name = act;
  block.act.alpha = alpha;
  block.weights = std::move(weights);
  block.heads = heads;
  return block;
}

template <class T>
T round_trip(const T& value) {
  return from_tree<T>(to_tree(value));
}

TEST(PyTreeConvert, Scalars) {
  EXPECT_EQ(to_tree(true), Tree::boolean(true));
  EXPECT_EQ(round_trip(false), false);
  EXPECT_EQ(to_tree(int64_t{-5}), Tree::integer(-5));
  EXPECT_EQ(to_tree(3), Tree::integer(3));
  EXPECT_EQ(to_tree(uint8_t{200}), Tree::integer(200));
  EXPECT_EQ(to_tree(int16_t{-300}), Tree::integer(-300));
  EXPECT_EQ(to_tree(size_t{7}), Tree::integer(7));
  EXPECT_EQ(to_tree('a'), Tree::integer(97));
  EXPECT_EQ(round_trip(int8_t{-128}), -128);
  EXPECT_EQ(round_trip(uint32_t{4000000000u}), 4000000000u);
  EXPECT_EQ(round_trip(uint64_t{1} << 62), uint64_t{1} << 62);
  EXPECT_EQ(round_trip(std::numeric_limits<int64_t>::min()), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(round_trip('z'), 'z');

  EXPECT_EQ(to_tree(2.5), Tree::real(2.5));
  EXPECT_EQ(to_tree(0.5f), Tree::real(0.5));
  EXPECT_EQ(round_trip(0.1), 0.1);
  EXPECT_EQ(round_trip(0.1f), 0.1f);
  EXPECT_EQ(from_tree<double>(Tree::integer(3)), 3.0);  // an int widens to a double
  EXPECT_EQ(from_tree<float>(Tree::integer(-2)), -2.0f);

  EXPECT_EQ(to_tree(std::string("gelu")), Tree::string("gelu"));
  EXPECT_EQ(to_tree("relu"), Tree::string("relu"));
  const char* c_string = "silu";
  EXPECT_EQ(to_tree(c_string), Tree::string("silu"));
  EXPECT_EQ(round_trip(std::string("x y")), "x y");
}

TEST(PyTreeConvert, NoneLikeTypes) {
  EXPECT_EQ(to_tree(std::nullopt), Tree::none());
  EXPECT_EQ(to_tree(nullptr), Tree::none());
  EXPECT_EQ(to_tree(std::monostate{}), Tree::none());
  EXPECT_EQ(from_tree<std::nullptr_t>(Tree::none()), nullptr);
  EXPECT_EQ(from_tree<std::monostate>(Tree::none()), std::monostate{});
  (void)from_tree<std::nullopt_t>(Tree::none());
  expect_value_error([] { (void)from_tree<std::monostate>(Tree::integer(0)); },
                     "from_tree: at the root: expected None, got int");
}

TEST(PyTreeConvert, TensorAndTree) {
  Tensor x = Tensor::meta({4, 4});
  EXPECT_TRUE(to_tree(x).as_tensor().same(x));
  EXPECT_TRUE(round_trip(x).same(x));
  Tree tree = Tree::list({Tree::none(), Tree::integer(1)});
  EXPECT_EQ(to_tree(tree), tree);
  EXPECT_EQ(from_tree<Tree>(tree), tree);
  expect_value_error([] { (void)from_tree<Tensor>(Tree::real(1)); },
                     "from_tree: at the root: expected tensor, got double");
}

TEST(PyTreeConvert, Optional) {
  std::optional<int> none;
  EXPECT_EQ(to_tree(none), Tree::none());
  EXPECT_EQ(to_tree(std::optional<int>(4)), Tree::integer(4));
  EXPECT_EQ(from_tree<std::optional<int>>(Tree::none()), std::nullopt);
  EXPECT_EQ(from_tree<std::optional<int>>(Tree::integer(4)), std::optional<int>(4));
  expect_value_error([] { (void)from_tree<std::optional<int>>(Tree::string("4")); },
                     "from_tree: at the root: expected int, got string");
}

TEST(PyTreeConvert, ContainersBothWays) {
  std::vector<int64_t> numbers = {1, 2, 3};
  EXPECT_EQ(to_tree(numbers).str(), "[1, 2, 3]");
  EXPECT_EQ(round_trip(numbers), numbers);
  EXPECT_EQ(round_trip(std::vector<bool>{true, false}), (std::vector<bool>{true, false}));
  EXPECT_EQ(round_trip(std::vector<std::string>{}), std::vector<std::string>{});

  std::array<double, 3> array = {0.5, 1.5, 2.0};
  EXPECT_EQ(to_tree(array).str(), "[0.5, 1.5, 2.0]");
  EXPECT_EQ(round_trip(array), array);
  EXPECT_EQ(round_trip(std::array<int, 0>{}), (std::array<int, 0>{}));

  auto tuple = std::make_tuple(int64_t{4}, std::string("a"), 1.5, true);
  EXPECT_EQ(to_tree(tuple).str(), "(4, \"a\", 1.5, true)");
  EXPECT_EQ(round_trip(tuple), tuple);
  EXPECT_EQ(to_tree(std::tuple<>{}).str(), "()");
  EXPECT_EQ(round_trip(std::tuple<>{}), std::tuple<>{});
  EXPECT_EQ(to_tree(std::make_tuple(1)).str(), "(1,)");

  std::pair<std::string, int> pair = {"k", 9};
  EXPECT_EQ(to_tree(pair).str(), "(\"k\", 9)");
  EXPECT_EQ(round_trip(pair), pair);

  // Dicts come out in key order, whatever order they were inserted in.
  std::map<std::string, double> map = {{"wd", 0.01}, {"lr", 0.1}, {"beta", 0.9}};
  Tree map_tree = to_tree(map);
  EXPECT_EQ(map_tree.str(), "{\"beta\": 0.9, \"lr\": 0.1, \"wd\": 0.01}");
  EXPECT_EQ(map_tree.keys(), (std::vector<std::string>{"beta", "lr", "wd"}));
  EXPECT_EQ(round_trip(map), map);
  // A dict in any key order reads back into a map.
  auto read = from_tree<std::map<std::string, int>>(Tree::dict({{"z", Tree::integer(1)}, {"a", Tree::integer(2)}}));
  EXPECT_EQ(read, (std::map<std::string, int>{{"a", 2}, {"z", 1}}));
}

TEST(PyTreeConvert, NestedContainers) {
  Tensor x = Tensor::meta({2});
  std::vector<std::tuple<std::string, std::optional<int>, std::vector<Tensor>>> rows = {
      {"a", 1, {x}},
      {"b", std::nullopt, {}},
  };
  Tree tree = to_tree(rows);
  EXPECT_EQ(tree.str(), "[(\"a\", 1, [f32[2]]), (\"b\", None, [])]");
  auto back = from_tree<decltype(rows)>(tree);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(std::get<0>(back[0]), "a");
  EXPECT_EQ(std::get<1>(back[0]), 1);
  ASSERT_EQ(std::get<2>(back[0]).size(), 1u);
  EXPECT_TRUE(std::get<2>(back[0])[0].same(x));
  EXPECT_EQ(std::get<1>(back[1]), std::nullopt);
  EXPECT_TRUE(std::get<2>(back[1]).empty());

  auto header_example = std::make_tuple(x, int64_t{4}, std::map<std::string, double>{{"lr", 0.1}});
  auto [x2, n, cfg] = from_tree<decltype(header_example)>(to_tree(header_example));
  EXPECT_TRUE(x2.same(x));
  EXPECT_EQ(n, 4);
  EXPECT_EQ(cfg.at("lr"), 0.1);
}

TEST(PyTreeConvert, IntegerRangeErrors) {
  expect_value_error([] { (void)from_tree<int8_t>(Tree::integer(300)); },
                     "from_tree: at the root: int 300 is out of range [-128, 127]");
  expect_value_error([] { (void)from_tree<uint8_t>(Tree::integer(-1)); },
                     "from_tree: at the root: int -1 is out of range [0, 255]");
  expect_value_error([] { (void)from_tree<uint64_t>(Tree::integer(-5)); },
                     "from_tree: at the root: int -5 is out of range [0, 18446744073709551615]");
  expect_value_error([] { (void)from_tree<int32_t>(Tree::integer(int64_t{1} << 31)); },
                     "from_tree: at the root: int 2147483648 is out of range [-2147483648, 2147483647]");
  EXPECT_EQ(from_tree<int32_t>(Tree::integer(-(int64_t{1} << 31))), std::numeric_limits<int32_t>::min());
  expect_value_error([] { (void)to_tree(std::numeric_limits<uint64_t>::max()); },
                     "to_tree: unsigned value 18446744073709551615 does not fit an int64 leaf");
  EXPECT_EQ(to_tree(uint64_t{std::numeric_limits<int64_t>::max()}).as_int(), std::numeric_limits<int64_t>::max());
  expect_value_error(
      [] {
        (void)from_tree<std::vector<int8_t>>(Tree::list({Tree::integer(1), Tree::integer(128)}));
      },
      "from_tree: at [1]: int 128 is out of range [-128, 127]");
}

TEST(PyTreeConvert, KindErrorsNameTheKeyPath) {
  expect_value_error([] { (void)from_tree<int64_t>(Tree::string("4")); },
                     "from_tree: at the root: expected int, got string");
  expect_value_error([] { (void)from_tree<bool>(Tree::integer(1)); }, "from_tree: at the root: expected bool, got int");
  expect_value_error([] { (void)from_tree<double>(Tree::boolean(true)); },
                     "from_tree: at the root: expected double, got bool");
  expect_value_error([] { (void)from_tree<std::string>(Tree::none()); },
                     "from_tree: at the root: expected string, got None");

  using Nested = std::tuple<int, std::map<std::string, int>>;
  Tree tree = Tree::tuple({Tree::integer(1), Tree::dict({{"dim", Tree::string("four")}})});
  expect_value_error([&] { (void)from_tree<Nested>(tree); }, "from_tree: at [1][\"dim\"]: expected int, got string");
  // The starting path is prepended.
  KeyPath args = KeyPath{}.child({.kind = KeyEntry::Kind::Key, .index = 0, .name = "args"});
  expect_value_error([&] { (void)from_tree<Nested>(tree, args); },
                     "from_tree: at [\"args\"][1][\"dim\"]: expected int, got string");

  expect_value_error([] { (void)from_tree<std::vector<int>>(Tree::tuple({})); },
                     "from_tree: at the root: expected list, got tuple of 0");
  expect_value_error(
      [] {
        (void)from_tree<std::array<int, 3>>(Tree::list({Tree::integer(1), Tree::integer(2)}));
      },
      "from_tree: at the root: expected list of 3, got list of 2");
  expect_value_error([] { (void)from_tree<std::tuple<int, int>>(Tree::tuple({Tree::integer(1)})); },
                     "from_tree: at the root: expected tuple of 2, got tuple of 1");
  expect_value_error(
      [] {
        (void)from_tree<std::pair<int, int>>(Tree::list({Tree::integer(1), Tree::integer(2)}));
      },
      "from_tree: at the root: expected tuple of 2, got list of 2");
  expect_value_error([] { (void)from_tree<std::map<std::string, int>>(Tree::list({})); },
                     "from_tree: at the root: expected dict, got list of 0");
  expect_value_error(
      [] {
        (void)from_tree<std::vector<std::map<std::string, int>>>(
            Tree::list({Tree::dict({}), Tree::dict({{"a", Tree::dict({{"x", Tree::integer(1)}})}})}));
      },
      "from_tree: at [1][\"a\"]: expected int, got dict with keys (\"x\")");
}

// --- registered structs ---

TEST(PyTreeConvert, RegisteredStructToTree) {
  Tensor w = Tensor::meta({4, 4});
  Tensor b = Tensor::meta({4});
  Block block = make_block(4, "gelu", 0.5, {w, b}, std::nullopt);
  Tree tree = to_tree(block);
  EXPECT_EQ(tree.kind(), Tree::Kind::Custom);
  EXPECT_EQ(tree.type_name(), "Block");
  EXPECT_EQ(tree.keys(), (std::vector<std::string>{"dim", "act", "weights", "heads"}));
  EXPECT_EQ(tree.str(),
            "Block(dim=4, act=Activation(name=\"gelu\", alpha=0.5), weights=[f32[4,4], f32[4]], heads=None)");
  EXPECT_TRUE(tree.at("weights")[1].as_tensor().same(b));

  std::vector<std::string> paths;
  for (const KeyPath& path : flatten(tree).spec.leaf_paths()) paths.push_back(path.str());
  EXPECT_EQ(paths, (std::vector<std::string>{".dim", ".act.name", ".act.alpha", ".weights[0]", ".weights[1]"}));
}

TEST(PyTreeConvert, RegisteredStructRoundTrip) {
  Tensor w = Tensor::meta({3});
  Block block = make_block(8, "relu", 0.0, {w}, 2);
  Block back = round_trip(block);
  EXPECT_EQ(back.dim, 8);
  EXPECT_EQ(back.act.name, "relu");
  EXPECT_EQ(back.act.alpha, 0.0);
  ASSERT_EQ(back.weights.size(), 1u);
  EXPECT_TRUE(back.weights[0].same(w));
  EXPECT_EQ(back.heads, std::optional<int32_t>(2));

  // Structs nest inside the built-in containers and back.
  std::map<std::string, std::vector<Activation>> acts = {{"mlp", {{"gelu", 1.0}, {"silu", 2.0}}}};
  Tree tree = to_tree(acts);
  EXPECT_EQ(tree.str(), "{\"mlp\": [Activation(name=\"gelu\", alpha=1.0), Activation(name=\"silu\", alpha=2.0)]}");
  auto acts_back = from_tree<decltype(acts)>(tree);
  ASSERT_EQ(acts_back.at("mlp").size(), 2u);
  EXPECT_EQ(acts_back.at("mlp")[1].name, "silu");
  EXPECT_EQ(acts_back.at("mlp")[1].alpha, 2.0);
}

TEST(PyTreeConvert, RegisteredStructLimits) {
  px_tree_user_test::Wide wide{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  Tree tree = to_tree(wide);
  EXPECT_EQ(tree.size(), 16u);
  EXPECT_EQ(tree.keys().front(), "f1");
  EXPECT_EQ(tree.keys().back(), "f16");
  EXPECT_EQ(tree.at("f16").as_int(), 16);
  EXPECT_EQ(round_trip(wide).f9, 9);
  EXPECT_EQ(to_tree(px_tree_user_test::One{true}).str(), "One(flag=true)");
  EXPECT_TRUE(round_trip(px_tree_user_test::One{true}).flag);
}

TEST(PyTreeConvert, RegisteredStructErrors) {
  Tree good = to_tree(make_block(1, "gelu", 0.5, {}, 1));
  auto with_field = [&](const std::string& name, Tree value) {
    std::vector<std::pair<std::string, Tree>> fields;
    for (size_t i = 0; i < good.size(); ++i) {
      fields.emplace_back(good.keys()[i], good.keys()[i] == name ? value : good[i]);
    }
    return Tree::custom("Block", std::move(fields));
  };
  EXPECT_EQ(from_tree<Block>(with_field("dim", Tree::integer(2))).dim, 2);
  expect_value_error([&] { (void)from_tree<Block>(with_field("dim", Tree::string("one"))); },
                     "from_tree: at .dim: expected int, got string");
  expect_value_error(
      [&] {
        (void)from_tree<Block>(with_field(
            "act", Tree::custom("Activation", {{"name", Tree::string("gelu")}, {"alpha", Tree::string("big")}})));
      },
      "from_tree: at .act.alpha: expected double, got string");
  expect_value_error(
      [&] {
        (void)from_tree<Block>(with_field("act", Tree::dict({{"name", Tree()}})));
      },
      "from_tree: at .act: expected Activation, got dict with keys (\"name\")");
  expect_value_error(
      [&] {
        (void)from_tree<Block>(with_field("weights", Tree::list({Tree::tensor(Tensor::meta({})), Tree::integer(3)})));
      },
      "from_tree: at .weights[1]: expected tensor, got int");
  expect_value_error([&] { (void)from_tree<Block>(with_field("heads", Tree::integer(int64_t{1} << 40))); },
                     "from_tree: at .heads: int 1099511627776 is out of range [-2147483648, 2147483647]");
  EXPECT_EQ(from_tree<Block>(with_field("heads", Tree())).heads, std::nullopt);

  // Same fields under another type name.
  expect_value_error(
      [] {
        (void)from_tree<Activation>(to_tree(px_tree_user_test::OtherActivation{"gelu", 1.0}));
      },
      "from_tree: at the root: expected Activation, got OtherActivation with fields (name, alpha)");
  expect_value_error(
      [] {
        (void)from_tree<Activation>(
            Tree::custom("Activation", {{"name", Tree::string("gelu")}, {"beta", Tree::real(1)}}));
      },
      "from_tree: at the root: expected Activation field 1 to be 'alpha', got 'beta'");
  expect_value_error(
      [] {
        (void)from_tree<Activation>(Tree::custom("Activation", {{"name", Tree::string("gelu")}}));
      },
      "from_tree: at the root: expected Activation, got Activation with fields (name)");
  expect_value_error([] { (void)from_tree<Activation>(Tree::integer(1)); },
                     "from_tree: at the root: expected Activation, got int");
  expect_value_error(
      [] {
        (void)from_tree<std::vector<Activation>>(
            Tree::list({to_tree(Activation{"a", 1}),
                        Tree::custom("Activation", {{"name", Tree::integer(5)}, {"alpha", Tree::real(1)}})}));
      },
      "from_tree: at [1].name: expected string, got int");
}

}  // namespace
}  // namespace px
