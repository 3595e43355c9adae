// Every sharding rule against the simulated mesh (tests/dtensor/simulate.h): for every sample
// call of an op that has a rule (tests/support plus the samples below, sized so that dims shard
// evenly and unevenly), every sound strategy on meshes 4, 2x2 and 2x4 gives back the
// single-device result. Also: rules offer more than all-Replicate, and every op with a tensor
// input has one.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "dtensor/simulate.h"
#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/dtensor/dtensor.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/registry.h"
#include "support/op_samples.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;
using testing::OpSample;

constexpr size_t kMaxStrategies = 200;  // per sample and mesh: a seeded random pick beyond this

Tensor f64(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return testing::random_tensor(shape, DType::Float64, seed, low, high);
}

Tensor f32(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return testing::random_tensor(shape, DType::Float32, seed, low, high);
}

Tensor i64(const Shape& shape, uint64_t seed) { return testing::random_ints(shape, -9, 9, seed); }

Attrs dims(std::vector<int64_t> reduced, bool keepdim = false) {
  return {{"dims", std::move(reduced)}, {"keepdim", keepdim}};
}

// Shapes whose dims split over 2 and 4 ranks, evenly and not, for the ops whose shared samples
// are small; and attribute values (signs of scalars, diagonals, offsets) the shared ones miss.
std::vector<OpSample> extra_samples() {
  std::vector<OpSample> all;
  auto add = [&](std::string op, std::vector<Tensor> inputs, Attrs attrs, std::string note) {
    all.push_back({std::move(op), std::move(inputs), std::move(attrs), false, "sim: " + std::move(note)});
  };
  // Elementwise.
  add("add", {f64({4, 6}, 1), f64({6}, 2)}, {}, "broadcast 4x6");
  add("mul", {f64({5, 1, 6}, 3), f64({4, 6}, 4)}, {}, "broadcast both 5x4x6");
  add("div", {f64({4, 6}, 5), f64({4, 6}, 6, 0.5, 2)}, {}, "4x6");
  add("add", {i64({4, 6}, 7), i64({6}, 8)}, {}, "i64");
  add("maximum", {i64({4, 4}, 9), i64({4, 4}, 10)}, {}, "i64");
  add("minimum", {f32({8, 3}, 11), f32({8, 3}, 12)}, {}, "f32");
  add("add", {testing::random_tensor({4, 4}, DType::BFloat16, 13), testing::random_tensor({4}, DType::BFloat16, 14)},
      {}, "bf16");
  for (double scalar : {2.5, 0.0}) {
    add("mul_scalar", {f64({4, 6}, 15)}, {{"scalar", scalar}}, "scalar " + std::to_string(scalar));
  }
  for (double scalar : {0.5, -0.5, 0.0}) {
    add("div_scalar", {f64({4, 6}, 16)}, {{"scalar", scalar}}, "scalar " + std::to_string(scalar));
  }
  add("mul_scalar", {i64({4, 6}, 17)}, {{"scalar", -3.0}}, "i64 negative");
  add("rsub_scalar", {f64({6, 4}, 18)}, {{"scalar", 2.0}}, "6x4");
  add("pow", {f64({4, 6}, 19, 0.5, 2)}, {{"exponent", 2.0}}, "4x6");
  add("neg", {i64({4, 3}, 20)}, {}, "i64");
  add("exp", {f32({4, 6}, 21)}, {}, "f32");
  add("relu", {i64({8}, 22)}, {}, "i64 1-d");
  add("gelu", {f32({4, 8}, 23, -3, 3)}, {}, "f32 4x8");
  add("gelu_backward", {f64({4, 6}, 24), f64({4, 6}, 25, -3, 3)}, {{"approximate", std::string("tanh")}}, "4x6");
  add("lt", {f64({4, 6}, 26), f64({6}, 27)}, {}, "broadcast 4x6");
  add("where", {testing::random_ints({4, 6}, 0, 2, 28).to(DType::Bool), f64({4, 1}, 29), f64({6}, 30)}, {},
      "broadcast 4x6");
  for (DType to : {DType::Float32, DType::Int64, DType::Float64}) {
    add("cast", {f64({4, 6}, 31, -3, 3)}, {{"dtype", to}}, "f64 to " + std::string(dtype_name(to)));
  }
  add("cast", {f32({4, 4}, 32)}, {{"dtype", DType::BFloat16}}, "f32 to bf16");
  add("dropout", {f64({6, 3, 2}, 33)}, {{"p", 0.5}, {"seed", int64_t{3}}, {"offset", int64_t{5}}}, "6x3x2");
  add("dropout", {f32({9}, 34)}, {{"p", 0.25}, {"seed", int64_t{4}}, {"offset", int64_t{1} << 40}}, "1-d f32");
  // Reductions: uneven shards of reduced dims (mean's global count; amax's empty parts).
  add("sum", {f64({5, 7}, 35)}, dims({1}), "5x7");
  add("sum", {i64({4, 6}, 36)}, dims({0, 1}, true), "i64 all keepdim");
  add("mean", {f64({5, 6}, 37)}, dims({0}), "5x6 uneven");
  add("mean", {f64({5, 6}, 38)}, dims({}, true), "5x6 all keepdim");
  add("mean", {f32({4, 5, 6}, 39)}, dims({0, 2}), "f32");
  add("amax", {f64({6, 5}, 40)}, dims({0}), "6x5");
  add("amin", {f64({5, 8}, 41)}, dims({1}, true), "5x8 keepdim");
  add("argmax", {f64({8, 4}, 42)}, {{"dim", int64_t{0}}}, "8x4 dim 0");
  add("argmax", {f64({4, 8, 3}, 43)}, {{"dim", int64_t{1}}, {"keepdim", true}}, "4x8x3 keepdim");
  // NN and triangles.
  add("softmax", {f64({4, 6, 5}, 44)}, {{"dim", int64_t{1}}}, "4x6x5");
  add("log_softmax", {f64({6, 4}, 45)}, {{"dim", int64_t{0}}}, "6x4");
  add("layer_norm", {f64({8, 4, 6}, 46), f64({6}, 47), f64({6}, 48)}, {}, "8x4x6 affine");
  add("rms_norm", {f64({6, 4, 8}, 49), f64({4, 8}, 50)}, {{"ndims", int64_t{2}}}, "6x4x8 two dims");
  add("rope", {f64({4, 6, 8}, 51)}, {}, "4x6x8");
  add("rope", {f64({2, 4, 6, 8}, 52)}, {{"inverse", true}}, "2x4x6x8");
  add("triu", {f64({2, 5, 6}, 53)}, {{"diagonal", int64_t{1}}}, "2x5x6");
  add("tril", {f64({6, 5}, 54)}, {{"diagonal", int64_t{-2}}}, "6x5");
  add("triu", {f64({8, 8}, 55)}, {}, "8x8");
  add("tril", {i64({3, 8, 8}, 56)}, {{"diagonal", int64_t{3}}}, "i64 3x8x8");
  add("triu", {f64({7, 6}, 57)}, {{"diagonal", int64_t{-1}}}, "7x6");
  return all;
}

std::vector<OpSample> simulation_samples() {
  std::vector<OpSample> all = testing::all_op_samples();
  for (OpSample& sample : extra_samples()) all.push_back(std::move(sample));
  return all;
}

std::vector<TensorMeta> metas_of(const std::vector<Tensor>& tensors) {
  std::vector<TensorMeta> metas;
  for (const Tensor& tensor : tensors) metas.push_back(tensor.meta_info());
  return metas;
}

std::vector<DeviceMesh> meshes() { return {DeviceMesh({4}), DeviceMesh({2, 2}), DeviceMesh({2, 4})}; }

bool all_replicate(const NdStrategy& strategy) {
  for (const auto& list : {strategy.inputs, strategy.outputs}) {
    for (const auto& placements : list) {
      for (const Placement& placement : placements) {
        if (!std::holds_alternative<Replicate>(placement)) return false;
      }
    }
  }
  return true;
}

::testing::AssertionResult matches(const Tensor& got, const Tensor& expected) {
  if (got.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure() << "dtype " << got.meta_info().str() << " vs " << expected.meta_info().str();
  }
  switch (expected.dtype()) {
    case DType::Float64:
      return testing::all_close(got, expected, 1e-12, 1e-12);
    case DType::Float32:
      return testing::all_close(got, expected, 1e-5, 1e-5);
    case DType::BFloat16:
      return testing::all_close(got, expected, 1e-2, 1e-2);
    case DType::Int64:
    case DType::Bool:
      break;
  }
  return testing::all_close(got, expected, 0, 0);
}

// All-Replicate first, then a seeded random pick of the others when there are too many.
std::vector<NdStrategy> pick(std::vector<NdStrategy> strategies, uint64_t seed) {
  if (strategies.size() <= kMaxStrategies) return strategies;
  std::mt19937_64 rng(seed);
  std::shuffle(strategies.begin() + 1, strategies.end(), rng);
  strategies.resize(kMaxStrategies);
  return strategies;
}

std::string label(const OpSample& sample) { return sample.op + " [" + sample.note + "]"; }

class RulesSimulation : public ::testing::TestWithParam<OpSample> {};

TEST_P(RulesSimulation, EveryStrategyMatchesTheSingleDeviceOp) {
  const OpSample& sample = GetParam();
  const OpDef& op = builtin_registry().get(sample.op);
  if (!op.sharding) GTEST_SKIP() << sample.op << " has no sharding rule";
  std::vector<Tensor> expected = call(op, sample.inputs, sample.attrs);
  for (const DeviceMesh& mesh : meshes()) {
    std::vector<NdStrategy> strategies = expand_strategies(op, metas_of(sample.inputs), sample.attrs, mesh);
    ASSERT_FALSE(strategies.empty()) << label(sample) << " on " << mesh.str();
    EXPECT_TRUE(all_replicate(strategies.front())) << label(sample) << ": " << nd_strategy_str(strategies.front());
    uint64_t seed = 0;
    for (const NdStrategy& strategy : pick(std::move(strategies), 17)) {
      SCOPED_TRACE(label(sample) + " on " + mesh.str() + " under " + nd_strategy_str(strategy));
      ++seed;
      std::vector<Tensor> got;
      try {
        got = testing::simulate_strategy(op, sample.inputs, sample.attrs, strategy, mesh, seed);
      } catch (const Error& error) {
        ADD_FAILURE() << error.what();
        continue;
      }
      ASSERT_EQ(got.size(), expected.size());
      for (size_t o = 0; o < got.size(); ++o) EXPECT_TRUE(matches(got[o], expected[o])) << "output " << o;
    }
  }
}

// Samples whose shapes allow sharding but whose op has no exact non-Replicate strategy there.
std::map<std::string, std::string> replicate_only_samples() {
  return {
      {"argmax [flattened non-contiguous]",
       "argmax over every dim: no dim is left to shard, and the index of a part's maximum is not the global index"},
      {"rope [inverse_non_contiguous]", "rope on [T, D]: dim -2 carries positions and dim -1 the rotated pairs"},
  };
}

TEST_P(RulesSimulation, OffersMoreThanReplicateOnMesh4) {
  const OpSample& sample = GetParam();
  const OpDef& op = builtin_registry().get(sample.op);
  if (!op.sharding) GTEST_SKIP() << sample.op << " has no sharding rule";
  bool has_big_dim = false;
  for (const Tensor& input : sample.inputs) {
    for (int64_t size : input.shape()) has_big_dim |= size >= 4;
  }
  if (!has_big_dim) GTEST_SKIP() << "no input dim of size >= 4";
  std::map<std::string, std::string> exemptions = replicate_only_samples();
  auto exempt = exemptions.find(label(sample));
  if (exempt != exemptions.end()) GTEST_SKIP() << exempt->second;
  std::vector<NdStrategy> strategies = expand_strategies(op, metas_of(sample.inputs), sample.attrs, DeviceMesh({4}));
  EXPECT_TRUE(std::any_of(strategies.begin(), strategies.end(), [](const NdStrategy& s) { return !all_replicate(s); }))
      << label(sample) << " only offers all-Replicate";
}

std::string sample_name(const ::testing::TestParamInfo<OpSample>& info) {
  std::string name = std::to_string(info.index) + "_" + info.param.op + "_" + info.param.note;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllOps, RulesSimulation, ::testing::ValuesIn(simulation_samples()), sample_name);

// The norms' VJPs are composed of ops (mean, sub, mul, rsqrt, add_scalar, sum, reshape): with x and
// the gradient sharded on the batch dim, every step keeps its sharding, so the weight and bias
// gradients come out P(sum) with no communication, as in DTensor.
TEST(NormBackwardOnDTensors, ParameterGradientsComeOutPartialOnBatchShardedInputs) {
  Tensor x = f64({8, 6}, 60), weight = f64({6}, 61), bias = f64({6}, 62), grad = f64({8, 6}, 63);
  for (const std::string name : {"layer_norm", "rms_norm"}) {
    SCOPED_TRACE(name);
    const OpDef& op = builtin_registry().get(name);
    std::vector<Tensor> inputs =
        name == "layer_norm" ? std::vector<Tensor>{x, weight, bias} : std::vector<Tensor>{x, weight};
    std::vector<Tensor> metas;
    for (const Tensor& input : inputs) metas.push_back(Tensor::meta(input.shape(), input.dtype()));
    const Attrs attrs = check_call(op, metas, {});
    std::vector<Tensor> outputs = call(op, inputs, attrs);
    std::vector<Tensor> grad_outputs{grad};
    std::vector<Tensor> expected = vjp_of(op)(VjpContext{inputs, outputs, grad_outputs, attrs});

    std::mutex mutex;
    std::vector<std::string> failures;
    dist::launch(
        4,
        [&](int rank, dist::ProcessGroup& world) {
          auto fail = [&](std::string what) {
            std::lock_guard<std::mutex> lock(mutex);
            failures.push_back("rank " + std::to_string(rank) + ": " + std::move(what));
          };
          auto groups = std::make_shared<dist::MeshGroups>(DeviceMesh({4}), world);
          std::vector<Tensor> dinputs{distribute_tensor(x, groups, {Shard{0}})};
          for (size_t i = 1; i < inputs.size(); ++i)
            dinputs.push_back(distribute_tensor(inputs[i], groups, {Replicate{}}));
          std::vector<Tensor> doutputs = call(op, dinputs, attrs);
          std::vector<Tensor> dgrad_outputs{distribute_tensor(grad, groups, {Shard{0}})};
          std::vector<Tensor> grads = vjp_of(op)(VjpContext{dinputs, doutputs, dgrad_outputs, attrs});
          for (size_t i = 0; i < grads.size(); ++i) {
            Placement want = i == 0 ? Placement(Shard{0}) : Placement(Partial{ReduceOp::Sum});
            const std::vector<Placement>& got = dtensor_spec(grads[i]).placements;
            if (got != std::vector<Placement>{want})
              fail("gradient " + std::to_string(i) + " is " + placements_str(got));
            if (!testing::all_close(full_tensor(grads[i]), expected[i], 1e-12, 1e-12)) {
              fail("gradient " + std::to_string(i) + " differs from the single-device one");
            }
          }
        },
        dist::LaunchOptions{dist::Backend::Threads});
    EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
  }
}

TEST(ShardingRuleCoverage, EveryOpWithATensorInputHasARule) {
  // Collectives run on local tensors by definition; DTensor never dispatches them through a rule.
  const std::set<std::string> collectives = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  for (const std::string& name : builtin_registry().names()) {
    const OpDef& op = builtin_registry().get(name);
    if (op.inputs.empty() || collectives.count(name)) continue;
    EXPECT_TRUE(static_cast<bool>(op.sharding)) << "op '" << name << "' has no sharding rule";
  }
}

TEST(ShardingRuleCoverage, AnOpWithoutARuleRaisesUnsupportedOpNamingIt) {
  OpDef op = builtin_registry().get("neg");
  op.name = "rule_less_neg";
  op.sharding = {};
  std::string message = testing::error_message([&] { sharding_rule_of(op); });
  EXPECT_NE(message.find("rule_less_neg"), std::string::npos) << message;
  EXPECT_THROW(sharding_rule_of(op), UnsupportedOp);
  EXPECT_THROW(expand_strategies(op, {{{4}, DType::Float64}}, {}, DeviceMesh({4})), UnsupportedOp);
}

}  // namespace
}  // namespace px
