// The subclass protocol in eager mode: flatten/unflatten, subclass tensors, routing through
// dispatch, nesting, and the two scenario subclasses (ScaledTensor, MaskingTensor) without capture.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "parallax/ops/linalg.h"
#include "subclass/test_subclasses.h"
#include "support/test_util.h"

namespace px {
namespace {

using subclass_test::make_masking;
using subclass_test::make_nested;
using subclass_test::make_scaled;
using subclass_test::MaskingTensor;
using subclass_test::Nested;
using subclass_test::same_state;
using subclass_test::ScaledTensor;
using subclass_test::state_of;
using testing::random_ints;
using testing::random_tensor;

// Logs every op it implements into a log owned by the test (no global state), then forwards to `data`.
class CountingTensor : public TensorSubclass {
 public:
  CountingTensor(Tensor data, std::shared_ptr<std::vector<std::string>> log)
      : data_(std::move(data)), log_(std::move(log)) {}
  std::string type_name() const override { return "CountingTensor"; }
  SubclassState flatten() const override { return {{{"data", data_}}, Tree::none()}; }
  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override {
    return std::make_shared<CountingTensor>(state.at("data"), log_);
  }
  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) override {
    log_->push_back(op.name);
    std::vector<Tensor> unwrapped;
    for (const Tensor& arg : args) {
      CountingTensor* counting = subclass_as<CountingTensor>(arg);
      unwrapped.push_back(counting ? counting->data_ : arg);
    }
    return px::call(op, unwrapped, attrs);
  }

 private:
  Tensor data_;
  std::shared_ptr<std::vector<std::string>> log_;
};

// Hands the subclass tensors themselves to the layers below the hook: a bug the dispatcher must name.
class LeakyTensor : public TensorSubclass {
 public:
  explicit LeakyTensor(Tensor data) : data_(std::move(data)) {}
  std::string type_name() const override { return "LeakyTensor"; }
  SubclassState flatten() const override { return {{{"data", data_}}, Tree::none()}; }
  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override {
    return std::make_shared<LeakyTensor>(state.at("data"));
  }
  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) override {
    return redispatch(op, args, attrs);
  }

 private:
  Tensor data_;
};

TEST(SubclassProtocol, FlattenUnflattenRoundTrip) {
  Tensor data = random_tensor({2, 3}, DType::Float32, 1);
  Tensor scale = Tensor::scalar(2.0);
  ScaledTensor original(data, scale, true);
  SubclassState state = original.flatten();
  ASSERT_EQ(state.inner.size(), 2u);
  EXPECT_EQ(state.inner[0].first, "data");
  EXPECT_EQ(state.inner[1].first, "scale");
  EXPECT_TRUE(state.has("data"));
  EXPECT_TRUE(state.at("scale").same(scale));
  EXPECT_EQ(state.metadata.str(), "{\"scaled\": true}");

  std::shared_ptr<TensorSubclass> rebuilt = original.unflatten(state);
  auto* scaled = dynamic_cast<ScaledTensor*>(rebuilt.get());
  ASSERT_NE(scaled, nullptr);
  EXPECT_NE(scaled, &original);
  EXPECT_TRUE(scaled->data().same(data));
  EXPECT_TRUE(scaled->scale().same(scale));
  EXPECT_TRUE(scaled->scaled());
  SubclassState again = rebuilt->flatten();
  EXPECT_EQ(again.metadata, state.metadata);

  // An absent attribute survives the round trip as absent.
  MaskingTensor masking(random_ints({4}, 0, 8, 2), Tensor(), 2, 6, "plain");
  SubclassState masked = masking.flatten();
  EXPECT_FALSE(masked.has("mask"));
  testing::expect_value_error([&] { masked.at("mask"); }, "subclass attribute 'mask' is absent");
  testing::expect_value_error([&] { masked.at("nope"); }, "subclass state has no attribute 'nope'");
  std::shared_ptr<TensorSubclass> masked_again = masking.unflatten(masked);  // keeps the instance alive
  auto* back = dynamic_cast<MaskingTensor*>(masked_again.get());
  ASSERT_NE(back, nullptr);
  EXPECT_FALSE(back->mask().defined());
  EXPECT_EQ(back->lo(), 2);
  EXPECT_EQ(back->hi(), 6);
  EXPECT_EQ(back->state(), "plain");
}

TEST(SubclassProtocol, SubclassTensorHasTheOuterMeta) {
  Tensor data = random_tensor({3, 5}, DType::Float32, 3);
  Tensor scaled = make_scaled(data);
  EXPECT_TRUE(scaled.is_subclass());
  EXPECT_FALSE(scaled.is_dense());
  EXPECT_EQ(scaled.kind(), TensorKind::Subclass);
  EXPECT_EQ(scaled.shape(), (Shape{3, 5}));
  EXPECT_EQ(scaled.dtype(), DType::Float32);
  EXPECT_EQ(subclass_of(scaled).type_name(), "ScaledTensor");
  EXPECT_EQ(to_string(scaled), "Tensor(f32[3,5], subclass)");

  ASSERT_NE(subclass_as<ScaledTensor>(scaled), nullptr);
  EXPECT_TRUE(subclass_as<ScaledTensor>(scaled)->data().same(data));
  EXPECT_EQ(subclass_as<MaskingTensor>(scaled), nullptr);
  EXPECT_EQ(subclass_as<ScaledTensor>(data), nullptr);

  EXPECT_THROW(make_subclass_tensor(nullptr, data.meta_info()), ValueError);
  EXPECT_THROW(subclass_of(data), ValueError);
  EXPECT_THROW(subclass_of(Tensor()), ValueError);
}

TEST(SubclassProtocol, SetSubclassStateReplacesWhatEveryHandleSees) {
  Tensor data = random_tensor({2, 2}, DType::Float32, 4);
  Tensor a = make_scaled(data);
  Tensor b = a;  // a second handle to the same tensor
  Tensor scale = Tensor::scalar(3.0);
  set_subclass_state(a, {{{"data", data}, {"scale", scale}}, Tree::dict({{"scaled", Tree::boolean(true)}})});
  for (const Tensor& handle : {a, b}) {
    ScaledTensor* seen = subclass_as<ScaledTensor>(handle);
    ASSERT_NE(seen, nullptr);
    EXPECT_TRUE(seen->scale().same(scale));
    EXPECT_TRUE(seen->scaled());
  }
  EXPECT_EQ(subclass_as<ScaledTensor>(a), subclass_as<ScaledTensor>(b));
  EXPECT_THROW(set_subclass_state(data, subclass_of(a).flatten()), ValueError);
  // A malformed state is rejected by the subclass's unflatten, and the tensor keeps its instance.
  ScaledTensor* before = subclass_as<ScaledTensor>(a);
  EXPECT_THROW(set_subclass_state(a, {{{"data", data}}, Tree::dict({{"scaled", Tree::boolean(false)}})}), ValueError);
  EXPECT_EQ(subclass_as<ScaledTensor>(a), before);
}

TEST(SubclassProtocol, DataAccessOnASubclassIsAValueError) {
  Tensor scaled = make_scaled(random_tensor({2}, DType::Float32, 5));
  std::string message = testing::error_message([&] { (void)scaled.data<float>(); });
  EXPECT_EQ(message, "ValueError: data access on a subclass tensor f32[2]: it has no storage");
  EXPECT_THROW((void)scaled.to_vector<float>(), ValueError);
  EXPECT_THROW((void)scaled.item<float>(), ValueError);
}

TEST(SubclassProtocol, OpsRouteThroughDispatch) {
  auto log = std::make_shared<std::vector<std::string>>();
  Tensor data = random_tensor({2, 3}, DType::Float64, 6);
  Tensor counting = make_subclass_tensor(std::make_shared<CountingTensor>(data, log), data.meta_info());
  Tensor other = random_tensor({2, 3}, DType::Float64, 7);

  Tensor sum = px::add(other, counting);  // the subclass is the second input
  Tensor scaled = counting * 2.0;
  Tensor reduced = px::sum(counting, {1});
  Tensor reshaped = counting.reshape({3, 2});  // Tensor methods are ops too
  EXPECT_EQ(*log, (std::vector<std::string>{"add", "mul_scalar", "sum", "reshape"}));
  EXPECT_FALSE(sum.is_subclass());
  EXPECT_TRUE(testing::all_close(sum, px::add(other, data), 0, 0));
  EXPECT_TRUE(testing::all_close(scaled, data * 2.0, 0, 0));
  EXPECT_TRUE(testing::all_close(reduced, px::sum(data, {1}), 0, 0));
  EXPECT_TRUE(testing::all_close(reshaped, data.reshape({3, 2}), 0, 0));

  // Both inputs are subclasses: the first one's hook gets the whole call once.
  Tensor product = px::mul(counting, counting);
  EXPECT_EQ(log->size(), 5u);
  EXPECT_TRUE(testing::all_close(product, px::mul(data, data), 0, 0));
}

TEST(SubclassProtocol, NestingWorks) {
  Tensor data = random_tensor({2, 3}, DType::Float32, 8);
  Tensor inner = make_scaled(data);
  Tensor nested = make_nested(inner);
  EXPECT_EQ(nested.shape(), (Shape{2, 3}));
  ASSERT_NE(subclass_as<Nested>(nested), nullptr);
  EXPECT_TRUE(subclass_as<Nested>(nested)->inner().same(inner));

  Tensor out = px::neg(nested);
  EXPECT_FALSE(out.is_subclass());
  // The inner ScaledTensor computed its scale through the outer Nested's dispatch.
  ScaledTensor* scaled = subclass_as<ScaledTensor>(inner);
  ASSERT_NE(scaled, nullptr);
  ASSERT_TRUE(scaled->scale().defined());
  EXPECT_TRUE(testing::all_close(scaled->scale(), px::amax(px::abs(data)), 0, 0));
  Tensor scale = scaled->scale();
  EXPECT_TRUE(testing::all_close(out, px::neg(px::mul(px::div(data, scale), scale)), 0, 0));
  EXPECT_NE(state_of(nested).find("Nested{inner=ScaledTensor{data="), std::string::npos) << state_of(nested);

  // A plain inner tensor, and two levels of nesting.
  Tensor twice = make_nested(make_nested(data));
  EXPECT_TRUE(testing::all_close(twice + 1.0, data + 1.0, 0, 0));
}

TEST(SubclassProtocol, ASubclassReachingAKernelIsAClearValueError) {
  Tensor data = random_tensor({2, 3}, DType::Float32, 9);
  Tensor leaky = make_subclass_tensor(std::make_shared<LeakyTensor>(data), data.meta_info());
  testing::expect_value_error([&] { px::abs(leaky); },
                              "abs: got a subclass tensor (LeakyTensor, f32[2,3]) below the subclass hook; its "
                              "dispatch must call ops on inner tensors");
}

TEST(ScaledTensorEager, CachesTheScaleOnFirstUseAndReusesIt) {
  Tensor data = random_tensor({3, 4}, DType::Float32, 10, -3.0, 2.0);
  Tensor weight = make_scaled(data);
  EXPECT_FALSE(subclass_as<ScaledTensor>(weight)->scale().defined());
  EXPECT_EQ(subclass_of(weight).flatten().metadata.str(), "{\"scaled\": false}");

  Tensor x = random_tensor({2, 3}, DType::Float32, 11);
  Tensor first = px::matmul(x, weight);
  ScaledTensor* after_first = subclass_as<ScaledTensor>(weight);
  ASSERT_TRUE(after_first->scale().defined());
  Tensor scale = after_first->scale();
  std::vector<float> values = data.to_vector<float>();
  float amax = 0;
  for (float v : values) amax = std::max(amax, std::abs(v));
  EXPECT_EQ(scale.shape(), Shape{});
  EXPECT_EQ(scale.item<float>(), amax);
  EXPECT_EQ(subclass_of(weight).flatten().metadata.str(), "{\"scaled\": true}");
  Tensor dequantized = px::mul(px::div(data, scale), scale);
  EXPECT_TRUE(subclass_test::bitwise_equal(first, px::matmul(x, dequantized)));

  // The second use reuses the cached scale object.
  Tensor second = px::matmul(x * 2.0, weight);
  EXPECT_TRUE(subclass_as<ScaledTensor>(weight)->scale().same(scale));
  EXPECT_TRUE(subclass_test::bitwise_equal(second, px::matmul(x * 2.0, dequantized)));
}

TEST(ScaledTensorEager, WorksOnMetaInnerTensors) {
  Tensor weight = make_scaled(Tensor::meta({3, 4}));
  Tensor out = px::matmul(Tensor::meta({2, 3}), weight);
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.shape(), (Shape{2, 4}));
  EXPECT_TRUE(subclass_as<ScaledTensor>(weight)->scale().is_meta());
}

// Hand computation of region A (embedding over the local shard) followed by region B (masked sum).
struct MaskingExpectation {
  std::vector<double> rows;  // [N, D]
  std::vector<bool> mask;    // [N]
  std::vector<double> out;   // [N]
};

MaskingExpectation by_hand(const Tensor& weight, const Tensor& indices, int64_t lo, int64_t hi) {
  std::vector<double> w = weight.to_vector<double>();
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  int64_t dim = weight.size(1);
  MaskingExpectation expected;
  for (int64_t index : idx) {
    bool masked = index < lo || index >= hi;
    int64_t local = masked ? 0 : index - lo;
    double total = 0;
    for (int64_t d = 0; d < dim; ++d) {
      double value = w[static_cast<size_t>(local * dim + d)];
      expected.rows.push_back(value);
      total += masked ? 0.0 : value;
    }
    expected.mask.push_back(masked);
    expected.out.push_back(total);
  }
  return expected;
}

TEST(MaskingTensorEager, RegionAThenBEqualsAHandComputation) {
  const int64_t lo = 4, hi = 10;
  Tensor weight = random_tensor({hi - lo, 3}, DType::Float64, 12);
  Tensor raw = Tensor::from_vector({0, 4, 9, 10, 5, 3, 11, 7}, {8}, DType::Int64);
  Tensor idx = make_masking(raw, lo, hi);
  MaskingExpectation expected = by_hand(weight, raw, lo, hi);

  Tensor rows = px::embedding(weight, idx);  // region A
  EXPECT_FALSE(rows.is_subclass());
  EXPECT_TRUE(testing::all_close(rows, expected.rows, 0, 0));
  MaskingTensor* stashed = subclass_as<MaskingTensor>(idx);
  ASSERT_TRUE(stashed->mask().defined());
  EXPECT_EQ(stashed->mask().dtype(), DType::Bool);
  EXPECT_EQ(stashed->mask().to_vector<bool>(), expected.mask);
  EXPECT_EQ(stashed->state(), "stashed");
  EXPECT_EQ(subclass_of(idx).flatten().metadata.str(), "{\"lo\": 4, \"hi\": 10, \"state\": \"stashed\"}");
  EXPECT_TRUE(stashed->data().same(raw));

  Tensor out = px::sum(px::mul(rows, idx), {1});  // region B
  EXPECT_TRUE(testing::all_close(out, expected.out, 0, 0));
  MaskingTensor* released = subclass_as<MaskingTensor>(idx);
  EXPECT_FALSE(released->mask().defined());
  EXPECT_EQ(released->state(), "plain");

  // Again from the start: the same results (the stash does not leak between rounds).
  Tensor rows2 = px::embedding(weight, idx);
  EXPECT_TRUE(subclass_test::bitwise_equal(rows2, rows));
  EXPECT_TRUE(subclass_test::bitwise_equal(px::sum(px::mul(rows2, idx), {1}), out));
}

TEST(MaskingTensorEager, MisuseIsAValueErrorAndLeavesTheStateAlone) {
  Tensor weight = random_tensor({6, 3}, DType::Float64, 13);
  Tensor idx = make_masking(random_ints({5}, 0, 12, 14), 4, 10);
  Tensor rows = random_tensor({5, 3}, DType::Float64, 15);
  Tensor before = subclass_test::copy_of(idx);
  testing::expect_value_error([&] { px::mul(rows, idx); }, "MaskingTensor: no mask stashed");
  testing::expect_value_error([&] { px::add(rows, idx); }, "MaskingTensor: op 'add' is not supported");
  EXPECT_TRUE(same_state(idx, before));

  px::embedding(weight, idx);
  Tensor stashed = subclass_test::copy_of(idx);
  testing::expect_value_error([&] { px::embedding(weight, idx); }, "MaskingTensor: a mask is already stashed");
  EXPECT_TRUE(same_state(idx, stashed));
}

TEST(SubclassHelpers, StateOfAndSameState) {
  Tensor data = Tensor::from_vector({1, -2}, {2});
  Tensor a = make_scaled(data);
  EXPECT_EQ(state_of(a), "ScaledTensor{data=Tensor(f32[2], [1, -2]), scale=absent, metadata={\"scaled\": false}}");
  Tensor b = make_scaled(Tensor::from_vector({1, -2}, {2}));
  EXPECT_TRUE(same_state(a, b));
  px::neg(b);
  EXPECT_FALSE(same_state(a, b));  // presence and metadata differ
  px::neg(a);
  EXPECT_TRUE(same_state(a, b));
  Tensor c = make_scaled(Tensor::from_vector({1, -3}, {2}));
  px::neg(c);
  EXPECT_FALSE(same_state(a, c));  // values differ
  EXPECT_FALSE(same_state(a, make_masking(Tensor::from_vector({1, 2}, {2}, DType::Int64), 0, 1)));
}

}  // namespace
}  // namespace px
