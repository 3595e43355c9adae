// The simulation harness itself (tests/dtensor/simulate.h): sound strategies give back the
// single-device result on 1-D and 2-D meshes, wrong ones are caught, and masks are honored.

#include "dtensor/simulate.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "parallax/core/error.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/registry.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;
using testing::all_close;
using testing::random_ints;
using testing::random_tensor;
using testing::simulate_strategy;

const OpDef& op_def(std::string_view name) { return builtin_registry().get(name); }

NdStrategy nd(std::vector<std::vector<Placement>> inputs, std::vector<std::vector<Placement>> outputs) {
  return {std::move(inputs), std::move(outputs)};
}

const Placement R = Replicate{};
const Placement S0 = Shard{0};
const Placement S1 = Shard{1};
const Placement Psum = Partial{ReduceOp::Sum};
const Placement Pavg = Partial{ReduceOp::Avg};
const Placement Pmax = Partial{ReduceOp::Max};
const Placement Pmin = Partial{ReduceOp::Min};

TEST(Simulate, ShardedAddOnOneAndTwoDimMeshes) {
  Tensor a = random_tensor({5, 6}, DType::Float64, 1);  // 5 rows over 4 ranks: 2, 2, 1, 0
  Tensor b = random_tensor({6}, DType::Float64, 2);
  Tensor expected = call1("add", {a, b});
  EXPECT_TRUE(all_close(simulate_strategy(op_def("add"), {a, b}, {}, nd({{S0}, {R}}, {{S0}}), DeviceMesh({4}), 0)[0],
                        expected));
  // Both mesh dims on dim 0 nest; a second tensor dim on the other mesh dim.
  EXPECT_TRUE(all_close(
      simulate_strategy(op_def("add"), {a, b}, {}, nd({{S0, S0}, {R, R}}, {{S0, S0}}), DeviceMesh({2, 2}), 0)[0],
      expected));
  EXPECT_TRUE(all_close(
      simulate_strategy(op_def("add"), {a, b}, {}, nd({{S1, S0}, {S0, R}}, {{S1, S0}}), DeviceMesh({2, 4}), 0)[0],
      expected));
}

TEST(Simulate, NestedPartialInputsReduceBackExactly) {
  Tensor a = random_tensor({3, 4}, DType::Float64, 3);
  Tensor b = random_tensor({3, 4}, DType::Float64, 4);
  DeviceMesh mesh({2, 4});
  EXPECT_TRUE(all_close(
      simulate_strategy(op_def("add"), {a, b}, {}, nd({{Psum, Pavg}, {Psum, Pavg}}, {{Psum, Pavg}}), mesh, 7)[0],
      call1("add", {a, b})));
  EXPECT_TRUE(all_close(simulate_strategy(op_def("neg"), {a}, {}, nd({{Pmax, Pmin}}, {{Pmin, Pmax}}), mesh, 8)[0],
                        call1("neg", {a})));
  EXPECT_TRUE(
      all_close(simulate_strategy(op_def("mul"), {a, b}, {}, nd({{Psum, S1}, {R, S1}}, {{Psum, S1}}), mesh, 9)[0],
                call1("mul", {a, b})));
}

TEST(Simulate, IntegerAndLowPrecisionSplitsAreExact) {
  Tensor a = random_ints({4, 3}, -9, 9, 5);
  Tensor b = random_ints({3}, -9, 9, 6);
  DeviceMesh mesh({2, 2});
  EXPECT_TRUE(all_close(
      simulate_strategy(op_def("add"), {a, b}, {}, nd({{Pavg, Psum}, {Pavg, Psum}}, {{Pavg, Psum}}), mesh, 1)[0],
      call1("add", {a, b}), 0, 0));
  EXPECT_TRUE(all_close(
      simulate_strategy(op_def("maximum"), {a, a}, {}, nd({{Pmax, S0}, {Pmax, S0}}, {{Pmax, S0}}), mesh, 2)[0], a, 0,
      0));
  Tensor h = random_tensor({4, 3}, DType::BFloat16, 7);
  Tensor w = random_tensor({3}, DType::BFloat16, 8);
  EXPECT_TRUE(
      all_close(simulate_strategy(op_def("mul"), {h, w}, {}, nd({{Psum, Psum}, {R, R}}, {{Psum, Psum}}), mesh, 3)[0],
                call1("mul", {h, w}), 0, 0));
}

TEST(Simulate, WrongPartialSplitsAreNotTheIdentity) {
  // Were the splits trivial (the whole value on one coordinate), a wrong strategy could pass.
  Tensor a = random_tensor({3, 4}, DType::Float64, 10);
  EXPECT_FALSE(all_close(simulate_strategy(op_def("neg"), {a}, {}, nd({{Pmax}}, {{Pmax}}), DeviceMesh({4}), 0)[0],
                         call1("neg", {a})));
  EXPECT_FALSE(all_close(simulate_strategy(op_def("exp"), {a}, {}, nd({{Psum}}, {{Psum}}), DeviceMesh({4}), 0)[0],
                         call1("exp", {a})));
}

// mul with a rule that also claims P(sum) * P(sum) -> P(sum), which is wrong: (sum a_r)(sum b_r) != sum a_r b_r.
OpDef wrong_mul() {
  OpDef def = op_def("mul");
  def.name = "wrong_mul";
  def.sharding = [](const std::vector<TensorMeta>&, const Attrs&) {
    return std::vector<ShardingStrategy>{{{R, R}, {R}}, {{Psum, Psum}, {Psum}}};
  };
  return def;
}

TEST(Simulate, DetectsAWrongRule) {
  OpDef def = wrong_mul();
  Tensor a = random_tensor({3, 4}, DType::Float64, 11);
  Tensor b = random_tensor({3, 4}, DType::Float64, 12);
  Tensor expected = call1("mul", {a, b});
  DeviceMesh mesh({4});
  std::vector<NdStrategy> strategies = expand_strategies(def, {a.meta_info(), b.meta_info()}, {}, mesh);
  ASSERT_EQ(strategies.size(), 2u);
  EXPECT_TRUE(all_close(simulate_strategy(def, {a, b}, {}, strategies[0], mesh, 0)[0], expected));
  EXPECT_FALSE(all_close(simulate_strategy(def, {a, b}, {}, strategies[1], mesh, 0)[0], expected));
}

TEST(Simulate, ReplicatedOutputsMustAgree) {
  // sum over dim 0 of a row-sharded x has the replicated output's shape but not its value.
  Tensor x = random_tensor({4, 3}, DType::Float64, 13);
  std::string message = testing::error_message([&] {
    simulate_strategy(op_def("sum"), {x}, {{"dims", std::vector<int64_t>{0}}}, nd({{S0}}, {{R}}), DeviceMesh({4}), 0);
  });
  EXPECT_NE(message.find("differs between mesh coordinates"), std::string::npos) << message;
  EXPECT_NE(message.find("sum"), std::string::npos) << message;
}

TEST(Simulate, RejectsBoolPartialsAndMismatchedShapes) {
  Tensor flags = Tensor::from_vector({1, 0, 1, 1}, {4}, DType::Bool);
  EXPECT_THROW(simulate_strategy(op_def("eq"), {flags, flags}, {}, nd({{Pmax}, {Pmax}}, {{R}}), DeviceMesh({4}), 0),
               ValueError);
  Tensor x = random_tensor({4, 3}, DType::Float64, 14);
  // The local op's shapes disagree with the output placement: plan_local_call refuses it.
  EXPECT_THROW(simulate_strategy(op_def("neg"), {x}, {}, nd({{S0}}, {{R}}), DeviceMesh({4}), 0), ValueError);
}

// neg(x) computed with a MaskPartial output: each rank keeps the columns of x that its block of
// `table` (sharded on dim 0, one entry per column) covers and masks the others, as an
// embedding over a row-sharded table does. The mask [cols] broadcasts against the output.
OpDef masked_neg() {
  OpDef def = op_def("neg");
  def.name = "masked_neg";
  def.inputs = {{"x"}, {"table"}};
  def.infer = [](const std::vector<TensorMeta>& in, const Attrs&) { return std::vector<TensorMeta>{in[0]}; };
  def.kernel = [](const std::vector<Tensor>& in, const Attrs&) { return std::vector<Tensor>{call1("neg", {in[0]})}; };
  def.sharding = [](const std::vector<TensorMeta>&, const Attrs&) {
    return std::vector<ShardingStrategy>{{{R, R}, {R}}, {{R, S0}, {MaskPartial{}}}};
  };
  def.local = [](const std::vector<Tensor>& in, const Attrs&, const LocalContext& ctx) {
    int64_t start = ctx.input_offsets[1][0], size = ctx.local_inputs[1].shape[0];
    int64_t cols = in[0].shape().back();
    std::vector<double> mask;
    for (int64_t j = 0; j < cols; ++j) mask.push_back(j < start || j >= start + size ? 1.0 : 0.0);
    // Garbage under the mask: the harness must drop it.
    Tensor out = call1("add_scalar", {call1("neg", {in[0]})}, {{"scalar", 100.0 * static_cast<double>(start + 1)}});
    Tensor fixed = call1("where", {Tensor::from_vector(mask, {cols}, DType::Bool), out, call1("neg", {in[0]})});
    return LocalResult{{fixed}, {Tensor::from_vector(mask, {cols}, DType::Bool)}};
  };
  return def;
}

TEST(Simulate, MaskPartialOutputsDropMaskedValuesThenSum) {
  OpDef def = masked_neg();
  Tensor x = random_tensor({3, 4}, DType::Float64, 15);
  Tensor table = random_tensor({4}, DType::Float64, 16);
  Tensor expected = call1("neg", {x});
  for (const DeviceMesh& mesh : {DeviceMesh({4}), DeviceMesh({2, 2})}) {
    std::vector<NdStrategy> strategies = expand_strategies(def, {x.meta_info(), table.meta_info()}, {}, mesh);
    // 1-D: R and MP; 2-D: every pair but [MP, MP] (one mask per output).
    EXPECT_EQ(strategies.size(), mesh.ndim() == 1 ? 2u : 3u);
    for (const NdStrategy& strategy : strategies) {
      SCOPED_TRACE(nd_strategy_str(strategy));
      EXPECT_TRUE(all_close(simulate_strategy(def, {x, table}, {}, strategy, mesh, 0)[0], expected));
    }
  }
  // Without the mask the garbage would show: summing the raw local values is wrong.
  OpDef unmasked = def;
  unmasked.sharding = [](const std::vector<TensorMeta>&, const Attrs&) {
    return std::vector<ShardingStrategy>{{{R, R}, {R}}, {{R, S0}, {Psum}}};
  };
  LocalFn masked_local = def.local;
  unmasked.local = [masked_local](const std::vector<Tensor>& in, const Attrs& attrs, const LocalContext& ctx) {
    LocalResult result = masked_local(in, attrs, ctx);
    result.masks = {Tensor()};
    return result;
  };
  EXPECT_FALSE(all_close(simulate_strategy(unmasked, {x, table}, {}, nd({{R}, {S0}}, {{Psum}}), DeviceMesh({4}), 0)[0],
                         expected));
}

}  // namespace
}  // namespace px
