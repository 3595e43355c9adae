#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "parallax/core/generator.h"
#include "parallax/ir/provenance.h"
#include "parallax/nn/module.h"
#include "support/test_util.h"

namespace px::nn {
namespace {

// A module whose registration methods the tests can call from outside.
class Open : public ModuleBase<Open> {
 public:
  using Module::register_buffer;
  using Module::register_module;
  using Module::register_parameter;
  Tensor forward(const Tensor& x) { return x; }
};

class Leaf : public ModuleBase<Leaf> {
 public:
  explicit Leaf(DType dtype = DType::Float32) {
    weight_ = &register_parameter("weight", {3, 4}, Init::normal(0.5, 2.0), dtype);
    bias_ = &register_parameter("bias", {4}, Init::uniform(-1.0, 3.0), dtype);
    count_ = &register_buffer("count", {2}, Init::constant(7.0), DType::Int64);
  }
  Tensor* weight_;
  Tensor* bias_;
  Tensor* count_;
};

// Children `a` then `b`, or `b` then `a` (built in that order too).
class Pair : public ModuleBase<Pair> {
 public:
  explicit Pair(bool a_first) {
    scale_ = &register_parameter("scale", {1}, Init::ones());
    if (a_first) {
      a_ = register_module("a", std::make_shared<Leaf>());
      b_ = register_module("b", std::make_shared<Leaf>());
    } else {
      b_ = register_module("b", std::make_shared<Leaf>());
      a_ = register_module("a", std::make_shared<Leaf>());
    }
    register_buffer("step", {}, Init::zeros(), DType::Int64);
  }
  Tensor* scale_;
  std::shared_ptr<Leaf> a_, b_;
};

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& [name, tensor] : named) out.push_back(name);
  return out;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.meta_info() != b.meta_info()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(ca.meta_info().nbytes())) == 0;
}

TEST(NnModule, NamesFollowRegistrationOrder) {
  Pair pair(true);
  EXPECT_EQ(names(pair.named_parameters()),
            (std::vector<std::string>{"scale", "a.weight", "a.bias", "b.weight", "b.bias"}));
  EXPECT_EQ(names(pair.named_buffers()), (std::vector<std::string>{"step", "a.count", "b.count"}));
  std::vector<std::string> slot_names;
  for (const SlotRef& ref : pair.slots()) slot_names.push_back(ref.fqn);
  EXPECT_EQ(slot_names, (std::vector<std::string>{"scale", "a.weight", "a.bias", "b.weight", "b.bias", "step",
                                                  "a.count", "b.count"}));
  std::vector<std::string> module_paths;
  for (const auto& [path, module] : pair.named_modules()) module_paths.push_back(path);
  EXPECT_EQ(module_paths, (std::vector<std::string>{"", "a", "b"}));
  EXPECT_EQ(pair.a_->name(), "a");
  EXPECT_EQ(pair.name(), "");

  Pair swapped(false);
  EXPECT_EQ(names(swapped.named_parameters()),
            (std::vector<std::string>{"scale", "b.weight", "b.bias", "a.weight", "a.bias"}));
}

TEST(NnModule, NestedModulesDepthFirst) {
  Open root;
  auto outer = root.register_module("outer", std::make_shared<Open>());
  auto inner = outer->register_module("inner", std::make_shared<Open>());
  outer->register_parameter("w", {2}, Init::zeros());
  inner->register_parameter("w", {2}, Init::zeros());
  root.register_module("last", std::make_shared<Open>())->register_parameter("w", {2}, Init::zeros());
  EXPECT_EQ(names(root.named_parameters()), (std::vector<std::string>{"outer.w", "outer.inner.w", "last.w"}));
  std::vector<std::string> paths;
  for (const auto& [path, module] : root.named_modules()) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"", "outer", "outer.inner", "last"}));
}

TEST(NnModule, RegistrationErrorsNameTheProblem) {
  Open root;
  root.register_parameter("w", {2}, Init::zeros());
  EXPECT_THROW(root.register_parameter("w", {2}, Init::zeros()), ValueError);
  EXPECT_THROW(root.register_buffer("w", {2}, Init::zeros()), ValueError);
  EXPECT_THROW(root.register_module("w", std::make_shared<Open>()), ValueError);
  EXPECT_NE(error_of([&] { root.register_parameter("a.b", {2}, Init::zeros()); }).find("'a.b'"), std::string::npos);
  EXPECT_NE(error_of([&] { root.register_buffer("", {2}, Init::zeros()); }).find("empty name"), std::string::npos);
  EXPECT_THROW(root.register_parameter("undefined", Tensor()), ValueError);

  auto child = root.register_module("child", std::make_shared<Open>());
  child->register_parameter("w", {2}, Init::zeros());
  std::string duplicate = error_of([&] { child->register_parameter("w", {2}, Init::zeros()); });
  EXPECT_NE(duplicate.find("duplicate name 'w'"), std::string::npos) << duplicate;
  EXPECT_NE(duplicate.find("module 'child'"), std::string::npos) << duplicate;
  EXPECT_THROW(root.register_module("child", std::make_shared<Open>()), ValueError);
  EXPECT_THROW(child->register_parameter("child.x", {2}, Init::zeros()), ValueError);
  EXPECT_THROW(root.register_module("x.y", std::make_shared<Open>()), ValueError);
  EXPECT_THROW(root.register_module("null", std::shared_ptr<Open>()), ValueError);
  // One parent per module, and no cycles.
  EXPECT_THROW(root.register_module("again", child), ValueError);
  auto orphan = std::make_shared<Open>();
  EXPECT_THROW(orphan->register_module("self", orphan), ValueError);
  // A failed registration changes nothing.
  EXPECT_EQ(names(root.named_parameters()), (std::vector<std::string>{"w", "child.w"}));
}

TEST(NnModule, SlotLooksUpAndReplaces) {
  Pair pair(true);
  Tensor& slot = pair.slot("a.weight");
  EXPECT_EQ(&slot, pair.a_->weight_);
  Tensor replacement = Tensor::zeros({3, 4});
  pair.slot("a.weight") = replacement;
  EXPECT_TRUE(pair.a_->weight_->same(replacement));
  EXPECT_TRUE(pair.slot("b.count").is_meta());

  std::string typo = error_of([&] { pair.slot("a.wieght"); });
  EXPECT_NE(typo.find("no parameter or buffer named 'a.wieght'"), std::string::npos) << typo;
  EXPECT_NE(typo.find("'a.weight'"), std::string::npos) << typo;
  std::string module_path = error_of([&] { pair.slot("b"); });
  EXPECT_NE(module_path.find("'b.weight', 'b.bias', 'b.count'"), std::string::npos) << module_path;
  EXPECT_THROW(Open().slot("x"), ValueError);
}

TEST(NnModule, TiedParametersAreOneGroup) {
  Open root;
  auto a = root.register_module("a", std::make_shared<Open>());
  auto b = root.register_module("b", std::make_shared<Open>());
  Tensor& shared = a->register_parameter("weight", {4, 3}, Init::normal(0.0, 1.0));
  a->register_parameter("bias", {4}, Init::zeros());
  b->register_parameter("weight", shared);
  root.register_buffer("mask", {3}, Init::ones());
  EXPECT_EQ(names(root.named_parameters()), (std::vector<std::string>{"a.weight", "a.bias", "b.weight"}));
  EXPECT_EQ(root.num_parameters(), 12 + 4);

  std::vector<ParameterGroup> groups = root.parameter_groups();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].fqns, (std::vector<std::string>{"a.weight", "b.weight"}));
  EXPECT_EQ(groups[0].slots.size(), 2u);
  EXPECT_EQ(groups[0].slots[1], &root.slot("b.weight"));
  EXPECT_TRUE(groups[0].tensor.same(shared));
  EXPECT_EQ(groups[0].kind, SlotKind::Parameter);
  EXPECT_EQ(groups[1].fqns, (std::vector<std::string>{"a.bias"}));
  EXPECT_EQ(groups[2].fqns, (std::vector<std::string>{"mask"}));
  EXPECT_EQ(groups[2].kind, SlotKind::Buffer);

  root.materialize(11);
  EXPECT_FALSE(root.is_meta());
  const Tensor& wa = root.slot("a.weight");
  const Tensor& wb = root.slot("b.weight");
  EXPECT_TRUE(wa.is_dense());
  EXPECT_TRUE(wa.same(wb));
  // The values come from the canonical (first) name's stream.
  uint64_t key = init_stream_key(11, "a.weight");
  std::vector<float> values = wa.to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(values[i], static_cast<float>(philox_normal(key, 0, i)));
  }
}

TEST(NnModule, MaterializeIsDeterministicAndOrderFree) {
  Pair first(true), again(true), swapped(false), other_seed(true);
  EXPECT_TRUE(first.is_meta());
  first.materialize(42);
  again.materialize(42);
  swapped.materialize(42);
  other_seed.materialize(43);
  for (const auto& [fqn, tensor] : first.named_parameters()) {
    EXPECT_TRUE(tensor.is_dense()) << fqn;
    EXPECT_TRUE(bitwise_equal(tensor, again.slot(fqn))) << fqn;
    EXPECT_TRUE(bitwise_equal(tensor, swapped.slot(fqn))) << fqn;
  }
  EXPECT_FALSE(bitwise_equal(first.slot("a.weight"), other_seed.slot("a.weight")));
  // Same shape and initializer, different names: different streams.
  EXPECT_FALSE(bitwise_equal(first.slot("a.weight"), first.slot("b.weight")));
  EXPECT_FALSE(bitwise_equal(first.slot("a.bias"), first.slot("b.bias")));
}

TEST(NnModule, MaterializeFollowsTheInitializers) {
  Pair pair(true);
  pair.materialize(5);
  EXPECT_EQ(pair.slot("scale").to_vector<float>(), std::vector<float>{1.0f});
  EXPECT_EQ(pair.slot("a.count").to_vector<int64_t>(), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(pair.slot("step").item<int64_t>(), 0);
  for (float v : pair.slot("a.bias").to_vector<float>()) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 3.0f);
  }
  // Normal(0.5, 2): the sample mean of 12 draws is loosely near 0.5.
  double sum = 0.0;
  for (float v : pair.slot("a.weight").to_vector<float>()) sum += v;
  EXPECT_NEAR(sum / 12.0, 0.5, 2.0);
}

TEST(NnModule, AShardEqualsThePhiloxValuesAtItsIndices) {
  Leaf leaf(DType::Float64);
  leaf.materialize(2024);
  const Tensor& weight = *leaf.weight_;  // [3, 4]
  uint64_t key = init_stream_key(2024, "weight");
  Tensor rows = weight.slice(0, 1, 3);
  Tensor cols = weight.slice(1, 2, 4);
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      uint64_t index = static_cast<uint64_t>((r + 1) * 4 + c);
      EXPECT_EQ(element_as_double(rows, r * 4 + c), 0.5 + 2.0 * philox_normal(key, 0, index));
    }
  }
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 2; ++c) {
      uint64_t index = static_cast<uint64_t>(r * 4 + c + 2);
      EXPECT_EQ(element_as_double(cols, r * 2 + c), init_value(Init::normal(0.5, 2.0), key, index));
    }
  }
  uint64_t bias_key = init_stream_key(2024, "bias");
  EXPECT_EQ(element_as_double(*leaf.bias_, 3), -1.0 + 4.0 * philox_uniform(bias_key, 0, 3));
  EXPECT_NE(init_stream_key(2024, "weight"), init_stream_key(2025, "weight"));
  EXPECT_NE(init_stream_key(2024, "a.weight"), init_stream_key(2024, "b.weight"));
}

TEST(NnModule, MaterializeBFloat16) {
  Leaf leaf(DType::BFloat16);
  leaf.materialize(3);
  const Tensor& weight = *leaf.weight_;
  ASSERT_EQ(weight.dtype(), DType::BFloat16);
  uint64_t key = init_stream_key(3, "weight");
  const BFloat16* data = weight.data<BFloat16>();
  for (int64_t i = 0; i < weight.numel(); ++i) {
    BFloat16 expected(static_cast<float>(0.5 + 2.0 * philox_normal(key, 0, static_cast<uint64_t>(i))));
    EXPECT_EQ(data[i].bits, expected.bits) << i;
  }
}

TEST(NnModule, GivenSlotsAreLeftAlone) {
  Open root;
  Tensor dense = Tensor::from_vector({1.0, 2.0}, {2});
  Tensor meta = Tensor::meta({2});
  root.register_parameter("dense", dense);
  root.register_buffer("meta_given", meta);
  root.register_parameter("drawn", {2}, Init::constant(3.5));
  root.materialize(1);
  EXPECT_TRUE(root.slot("dense").same(dense));
  EXPECT_TRUE(root.slot("meta_given").same(meta));
  EXPECT_TRUE(root.is_meta());
  EXPECT_EQ(root.slot("drawn").to_vector<float>(), (std::vector<float>{3.5f, 3.5f}));
  // Dense tensors are never redrawn, even when their slot has an initializer.
  Tensor before = root.slot("drawn");
  root.materialize(2);
  EXPECT_TRUE(root.slot("drawn").same(before));
}

TEST(NnModule, IntegerBuffersRejectRandomInitializers) {
  Open root;
  root.register_buffer("ids", {3}, Init::normal(0.0, 1.0), DType::Int64);
  std::string message = error_of([&] { root.materialize(0); });
  EXPECT_NE(message.find("'ids'"), std::string::npos) << message;
  Open fractional;
  fractional.register_buffer("ids", {3}, Init::constant(0.5), DType::Int64);
  EXPECT_THROW(fractional.materialize(0), ValueError);
  Open flags;
  flags.register_buffer("mask", {2}, Init::ones(), DType::Bool);
  flags.materialize(0);
  EXPECT_EQ(flags.slot("mask").to_vector<bool>(), (std::vector<bool>{true, true}));
}

TEST(NnModule, ConstructionAllocatesNothing) {
  Open root;
  root.register_parameter("huge", {1 << 20, 1 << 20}, Init::normal(0.0, 1.0));
  EXPECT_TRUE(root.slot("huge").is_meta());
  EXPECT_EQ(root.num_parameters(), int64_t{1} << 40);
}

TEST(NnModule, ModuleScopeNamesTheModule) {
  Open root;
  auto child = root.register_module("block", std::make_shared<Open>());
  {
    ModuleScope scope(root);
    EXPECT_EQ(ir::current_provenance().module_path, "");
    ModuleScope inner(*child);
    EXPECT_EQ(ir::current_provenance().module_path, "block");
  }
  EXPECT_EQ(ir::current_provenance().module_path, "");
}

}  // namespace
}  // namespace px::nn
