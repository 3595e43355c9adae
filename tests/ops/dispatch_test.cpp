// The dispatcher's own contract: schema checks, attribute defaults, the
// interceptor scope, and the facets that may be missing.

#include "parallax/ops/dispatch.h"

#include <gtest/gtest.h>

namespace px {
namespace {

OpDef scale_op() {
  OpDef def;
  def.name = "test_scale";
  def.inputs = {{"x"}};
  def.attrs = {{"factor", AttrType::Float, AttrValue{2.0}}, {"tag", AttrType::String, std::nullopt}};
  def.infer = [](const std::vector<TensorMeta>& in, const Attrs&) { return in; };
  def.kernel = [](const std::vector<Tensor>& in, const Attrs& attrs) {
    std::vector<double> values = in[0].to_vector<double>();
    for (double& v : values) v *= attrs.get_float("factor");
    return std::vector<Tensor>{Tensor::from_vector(values, in[0].shape(), in[0].dtype())};
  };
  def.cost = [](const std::vector<TensorMeta>&, const std::vector<TensorMeta>&, const Attrs&) { return OpCost{}; };
  return def;
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

TEST(Dispatch, FillsDefaultsAndChecksAttributes) {
  Registry registry;
  registry.add(scale_op());
  const OpDef& op = registry.get("test_scale");
  Tensor x = Tensor::from_vector({1, 2}, {2});
  Attrs filled = check_call(op, {x}, {{"tag", std::string("a")}});
  EXPECT_EQ(filled.get_float("factor"), 2.0);
  EXPECT_EQ(call(op, {x}, {{"tag", std::string("a")}})[0].to_vector<double>(), (std::vector<double>{2, 4}));
  // Ints are accepted for floats and stored as double.
  EXPECT_EQ(check_call(op, {x}, {{"tag", std::string("a")}, {"factor", int64_t{3}}}).get("factor"), AttrValue{3.0});
  EXPECT_NE(message_of([&] { call(op, {x}); }).find("missing required attribute 'tag'"), std::string::npos);
  EXPECT_NE(message_of([&] {
              call(op, {x}, {{"tag", int64_t{1}}});
            }).find("attribute 'tag' expects str"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              call(op, {x}, {{"tag", std::string("a")}, {"bogus", true}});
            }).find("unknown attribute 'bogus'"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              call(op, {x, x}, {{"tag", std::string("a")}});
            }).find("expected 1 tensor inputs"),
            std::string::npos);
  EXPECT_THROW(call(op, {Tensor()}, {{"tag", std::string("a")}}), ValueError);
}

TEST(Dispatch, MetaInputsNeverRunTheKernel) {
  Registry registry;
  registry.add(scale_op());
  Tensor huge = Tensor::meta({70'000'000'000}, DType::Float32);
  std::vector<Tensor> out = call(registry.get("test_scale"), {huge}, {{"tag", std::string("a")}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].is_meta());
  EXPECT_EQ(out[0].shape(), (Shape{70'000'000'000}));
}

class CountingInterceptor : public DispatchInterceptor {
 public:
  std::vector<Tensor> intercept(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) override {
    ++calls;
    return redispatch(op, inputs, attrs);
  }
  int calls = 0;
};

TEST(Dispatch, InterceptorSeesCallsOnlyInsideItsScope) {
  Registry registry;
  registry.add(scale_op());
  const OpDef& op = registry.get("test_scale");
  Tensor x = Tensor::from_vector({1}, {1});
  CountingInterceptor counter;
  {
    InterceptScope scope(counter);
    call(op, {x}, {{"tag", std::string("a")}});
    call(op, {x}, {{"tag", std::string("a")}});
  }
  call(op, {x}, {{"tag", std::string("a")}});
  EXPECT_EQ(counter.calls, 2);
}

TEST(Dispatch, InterceptScopeUnwindsOnThrow) {
  Registry registry;
  registry.add(scale_op());
  const OpDef& op = registry.get("test_scale");
  CountingInterceptor counter;
  try {
    InterceptScope scope(counter);
    throw ValueError("boom");
  } catch (const ValueError&) {
  }
  call(op, {Tensor::from_vector({1}, {1})}, {{"tag", std::string("a")}});
  EXPECT_EQ(counter.calls, 0);
}

TEST(Dispatch, MissingFacetsAreNamedErrors) {
  Registry registry;
  registry.add(scale_op());
  const OpDef& op = registry.get("test_scale");
  EXPECT_NE(message_of([&] { vjp_of(op); }).find("'test_scale' is not differentiable"), std::string::npos);
  EXPECT_NE(message_of([&] { sharding_rule_of(op); }).find("no sharding rule for op 'test_scale'"), std::string::npos);
  EXPECT_NE(message_of([&] { registry.get("nope"); }).find("no op named 'nope'"), std::string::npos);
}

TEST(Registry, RejectsDuplicatesAndIncompleteDefs) {
  Registry registry;
  registry.add(scale_op());
  EXPECT_THROW(registry.add(scale_op()), ValueError);
  OpDef incomplete = scale_op();
  incomplete.name = "no_kernel";
  incomplete.kernel = nullptr;
  EXPECT_THROW(registry.add(incomplete), ValueError);
}

TEST(Registry, BuiltinRegistryIsBuiltOnce) {
  EXPECT_EQ(&builtin_registry(), &builtin_registry());
  EXPECT_GT(builtin_registry().size(), 0u);
}

}  // namespace
}  // namespace px
