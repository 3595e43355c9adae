// Sharding rules of the shape, linalg and NN-index ops: the single-mesh-dim lists for a
// few calls, how views map dims, localized attributes, the local facets' masks, and that
// expand_strategies drops what uneven shards break.

#include <gtest/gtest.h>

#include "dtensor/simulate.h"
#include "ops/defs/sharding_shape_rules.h"
#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "parallax/dtensor/strategy.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/registry.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;

const OpDef& op_def(std::string_view name) { return builtin_registry().get(name); }

TensorMeta f64(Shape shape) { return {std::move(shape), DType::Float64}; }
TensorMeta i64(Shape shape) { return {std::move(shape), DType::Int64}; }

std::vector<ShardingStrategy> rule(std::string_view op, const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  const OpDef& def = op_def(op);
  std::vector<Tensor> metas;
  for (const TensorMeta& meta : inputs) metas.push_back(Tensor::meta(meta.shape, meta.dtype));
  return sharding_rule_of(def)(inputs, check_call(def, metas, attrs));
}

// "S(0), R -> P(sum)" per strategy, for readable failures.
std::vector<std::string> strs(const std::vector<ShardingStrategy>& strategies) {
  std::vector<std::string> out;
  for (const ShardingStrategy& s : strategies) {
    std::string text;
    for (size_t i = 0; i < s.inputs.size(); ++i) text += (i ? ", " : "") + placement_str(s.inputs[i]);
    text += " ->";
    for (size_t o = 0; o < s.outputs.size(); ++o) text += (o ? ", " : " ") + placement_str(s.outputs[o]);
    out.push_back(text);
  }
  return out;
}

std::vector<std::string> nd_strs(const std::vector<NdStrategy>& strategies) {
  std::vector<std::string> out;
  for (const NdStrategy& s : strategies) out.push_back(nd_strategy_str(s));
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

using Strs = std::vector<std::string>;

TEST(ShapeRules, MatmulOfMatrices) {
  EXPECT_EQ(strs(rule("matmul", {f64({3, 4}), f64({4, 5})}, {})),
            (Strs{"R, R -> R", "S(0), R -> S(0)", "R, S(1) -> S(1)", "S(1), S(0) -> P(sum)", "P(sum), R -> P(sum)",
                  "R, P(sum) -> P(sum)", "P(avg), R -> P(avg)", "R, P(avg) -> P(avg)"}));
}

TEST(ShapeRules, MatmulBroadcastBatchKeepsTheBroadcastOperandWhole) {
  // a [2,1,3,4] · b [3,4,2] -> [2,3,3,2]: batch dim 0 only a has; batch dim 1 a broadcasts.
  Strs got = strs(rule("matmul", {f64({2, 1, 3, 4}), f64({3, 4, 2})}, {}));
  EXPECT_EQ(Strs(got.begin(), got.begin() + 6), (Strs{"R, R -> R", "S(0), R -> S(0)", "R, S(0) -> S(1)",
                                                      "S(2), R -> S(2)", "R, S(2) -> S(3)", "S(3), S(1) -> P(sum)"}));
}

TEST(ShapeRules, MatmulOfVectors) {
  EXPECT_EQ(strs(rule("matmul", {f64({4}), f64({4})}, {})),
            (Strs{"R, R -> R", "S(0), S(0) -> P(sum)", "P(sum), R -> P(sum)", "R, P(sum) -> P(sum)",
                  "P(avg), R -> P(avg)", "R, P(avg) -> P(avg)"}));
  Strs row = strs(rule("matmul", {f64({4}), f64({2, 4, 5})}, {}));  // -> [2,5]
  EXPECT_TRUE(contains(row, "R, S(0) -> S(0)"));
  EXPECT_TRUE(contains(row, "R, S(2) -> S(1)"));
  EXPECT_TRUE(contains(row, "S(0), S(1) -> P(sum)"));
  Strs column = strs(rule("matmul", {f64({2, 3, 4}), f64({4})}, {}));  // -> [2,3]
  EXPECT_TRUE(contains(column, "S(1), R -> S(1)"));
  EXPECT_TRUE(contains(column, "S(2), S(0) -> P(sum)"));
}

TEST(ShapeRules, LinearWithAndWithoutBias) {
  EXPECT_EQ(strs(rule("linear", {f64({2, 3, 4}), f64({5, 4}), f64({5})}, {})),
            (Strs{"R, R, R -> R", "S(0), R, R -> S(0)", "S(1), R, R -> S(1)", "R, S(0), S(0) -> S(2)",
                  "S(2), S(1), P(sum) -> P(sum)", "P(sum), R, P(sum) -> P(sum)", "R, P(sum), P(sum) -> P(sum)",
                  "P(avg), R, P(avg) -> P(avg)", "R, P(avg), P(avg) -> P(avg)"}));
  EXPECT_EQ(strs(rule("linear", {f64({4}), f64({5, 4})}, {})),
            (Strs{"R, R -> R", "R, S(0) -> S(0)", "S(0), S(1) -> P(sum)", "P(sum), R -> P(sum)", "R, P(sum) -> P(sum)",
                  "P(avg), R -> P(avg)", "R, P(avg) -> P(avg)"}));
}

TEST(ShapeRules, EmbeddingFamily) {
  EXPECT_EQ(strs(rule("embedding", {f64({7, 4}), i64({2, 3})}, {})),
            (Strs{"R, R -> R", "R, S(0) -> S(0)", "R, S(1) -> S(1)", "S(1), R -> S(2)", "S(0), R -> MP(7)",
                  "P(sum), R -> P(sum)", "P(avg), R -> P(avg)", "P(max), R -> P(max)", "P(min), R -> P(min)"}));
  EXPECT_EQ(strs(rule("embedding_backward", {f64({2, 3, 4}), i64({2, 3})}, {{"num_weights", int64_t{7}}})),
            (Strs{"R, R -> R", "S(0), S(0) -> P(sum)", "S(1), S(1) -> P(sum)", "S(2), R -> S(1)", "R, R -> S(0)",
                  "P(sum), R -> P(sum)", "P(avg), R -> P(avg)"}));
  EXPECT_EQ(strs(rule("one_hot", {i64({2, 3})}, {{"num_classes", int64_t{8}}})),
            (Strs{"R -> R", "S(0) -> S(0)", "S(1) -> S(1)", "R -> S(2)"}));
}

TEST(ShapeRules, LossesByReduction) {
  auto loss = [](std::string op, std::string reduction) {
    return strs(rule(op, {f64({4, 5}), i64({4})}, {{"reduction", reduction}}));
  };
  EXPECT_EQ(loss("cross_entropy", "none"), (Strs{"R, R -> R", "S(0), S(0) -> S(0)"}));
  EXPECT_EQ(loss("cross_entropy", "sum"), (Strs{"R, R -> R", "S(0), S(0) -> P(sum)"}));
  EXPECT_EQ(loss("cross_entropy", "mean"), (Strs{"R, R -> R", "S(0), R -> P(sum)"}));
  EXPECT_EQ(loss("nll_loss", "mean"),
            (Strs{"R, R -> R", "S(0), R -> P(sum)", "P(sum), R -> P(sum)", "P(avg), R -> P(avg)"}));
}

TEST(ShapeRules, AttentionBatchQueriesAndValues) {
  // q [2,1,3,4] with k, v [2,2,5,4] / [2,2,5,6]: the head dim of q broadcasts.
  EXPECT_EQ(strs(rule("scaled_dot_product_attention", {f64({2, 1, 3, 4}), f64({2, 2, 5, 4}), f64({2, 2, 5, 6})}, {})),
            (Strs{"R, R, R -> R", "S(0), S(0), S(0) -> S(0)", "R, S(1), S(1) -> S(1)", "S(2), R, R -> S(2)",
                  "R, R, S(3) -> S(3)", "R, R, P(sum) -> P(sum)", "R, R, P(avg) -> P(avg)"}));
}

TEST(ShapeRules, AttentionBackwardFollowsTheForward) {
  // grad placed as the forward's output; an operand replicated where the others split gets a
  // partial gradient (q's broadcast head dim, k and v under split queries, q and k under split values).
  EXPECT_EQ(strs(rule("scaled_dot_product_attention_backward",
                      {f64({2, 1, 3, 4}), f64({2, 2, 5, 4}), f64({2, 2, 5, 6}), f64({2, 2, 3, 6})}, {})),
            (Strs{"R, R, R, R -> R, R, R", "S(0), S(0), S(0), S(0) -> S(0), S(0), S(0)",
                  "R, S(1), S(1), S(1) -> P(sum), S(1), S(1)", "S(2), R, R, S(2) -> S(2), P(sum), P(sum)",
                  "R, R, S(3), S(3) -> P(sum), P(sum), S(3)"}));
}

// The planner checks strategies on meta tensors through the local facets: the fused float32
// kernels must not hide the causal query split there (a rank's block of queries numbered globally).
TEST(ShapeRules, CausalQuerySplitIsSoundOnMetaFloat32) {
  const DeviceMesh mesh({4});
  const TensorMeta q{{2, 4, 64, 16}, DType::Float32};
  const Attrs causal{{"causal", true}};
  auto offers_query_split = [&](std::string_view op, const std::vector<TensorMeta>& inputs) {
    for (const NdStrategy& strategy : expand_strategies(builtin_registry().get(op), inputs, causal, mesh)) {
      if (strategy.inputs[0] == std::vector<Placement>{Shard{2}} &&
          strategy.inputs[1] == std::vector<Placement>{Replicate{}}) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(offers_query_split("scaled_dot_product_attention", {q, q, q}));
  EXPECT_TRUE(offers_query_split("scaled_dot_product_attention_backward", {q, q, q, q}));
}

TEST(ShapeRules, ViewDimMap) {
  using defs::view_dim_map;
  using Map = std::vector<int64_t>;
  EXPECT_EQ(view_dim_map(Shape{2, 3, 4}, Shape{6, 4}), (Map{0, -1, 1}));  // merged: only the first dim
  EXPECT_EQ(view_dim_map(Shape{6, 4}, Shape{2, 3, 4}), (Map{0, 2}));      // split: to the first piece
  EXPECT_EQ(view_dim_map(Shape{1, 4}, Shape{4}), (Map{-1, 0}));           // leading size-1 dims skipped
  EXPECT_EQ(view_dim_map(Shape{4, 1, 3}, Shape{4, 3}), (Map{0, -1, 1}));
  EXPECT_EQ(view_dim_map(Shape{4, 6}, Shape{6, 4}), (Map{0, -1}));  // one group of both
  EXPECT_EQ(view_dim_map(Shape{0, 3}, Shape{3, 0}), (Map{-1, -1}));
}

TEST(ShapeRules, ShapeOpsMapTheirDims) {
  EXPECT_EQ(strs(rule("permute", {f64({2, 3, 4})}, {{"dims", Shape{2, 0, 1}}})),
            (Strs{"R -> R", "S(0) -> S(1)", "S(1) -> S(2)", "S(2) -> S(0)", "P(sum) -> P(sum)", "P(avg) -> P(avg)",
                  "P(max) -> P(max)", "P(min) -> P(min)"}));
  Strs sel = strs(rule("select", {f64({3, 4, 5})}, {{"dim", int64_t{1}}, {"index", int64_t{0}}}));
  EXPECT_EQ(Strs(sel.begin(), sel.begin() + 3), (Strs{"R -> R", "S(0) -> S(0)", "S(2) -> S(1)"}));
  Strs squeeze = strs(rule("squeeze", {f64({1, 3, 1, 2})}, {}));
  EXPECT_EQ(Strs(squeeze.begin(), squeeze.begin() + 3), (Strs{"R -> R", "S(1) -> S(0)", "S(3) -> S(1)"}));
  Strs expand = strs(rule("expand", {f64({3, 1})}, {{"shape", Shape{2, 3, 4}}}));
  EXPECT_EQ(Strs(expand.begin(), expand.begin() + 2), (Strs{"R -> R", "S(0) -> S(1)"}));
  Strs cat = strs(rule("cat", {f64({2, 3}), f64({2, 1})}, {{"dim", int64_t{1}}}));
  EXPECT_EQ(Strs(cat.begin(), cat.begin() + 3), (Strs{"R, R -> R", "S(0), S(0) -> S(0)", "P(sum), P(sum) -> P(sum)"}));
  Strs stack = strs(rule("stack", {f64({2, 3}), f64({2, 3})}, {{"dim", int64_t{1}}}));
  EXPECT_EQ(Strs(stack.begin(), stack.begin() + 3), (Strs{"R, R -> R", "S(0), S(0) -> S(0)", "S(1), S(1) -> S(2)"}));
  Strs split = strs(rule("split", {f64({5, 3})}, {{"sizes", Shape{2, 3}}}));
  EXPECT_EQ(Strs(split.begin(), split.begin() + 2), (Strs{"R -> R, R", "S(1) -> S(1), S(1)"}));
  Strs slice_back = strs(rule(
      "slice_backward", {f64({2, 4})},
      {{"shape", Shape{5, 4}}, {"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}}));
  EXPECT_EQ(Strs(slice_back.begin(), slice_back.begin() + 2), (Strs{"R -> R", "S(1) -> S(1)"}));
}

TEST(ShapeRules, BoolTensorsGetNoPartials) {
  EXPECT_EQ(strs(rule("clone", {{{3}, DType::Bool}}, {})), (Strs{"R -> R", "S(0) -> S(0)"}));
}

// expand_strategies keeps a view's Shard only where the blocks line up at every coordinate.
TEST(ShapeRules, UnevenViewShardsAreDropped) {
  Attrs flat{{"shape", Shape{-1}}};
  // [3,4] -> [12] on 2 ranks: rows 2+1 give 8+4 elements, the output's split is 6+6.
  EXPECT_FALSE(
      contains(nd_strs(expand_strategies(op_def("view"), {f64({3, 4})}, flat, DeviceMesh({2}))), "[S(0)] -> [S(0)]"));
  EXPECT_TRUE(
      contains(nd_strs(expand_strategies(op_def("view"), {f64({4, 4})}, flat, DeviceMesh({2}))), "[S(0)] -> [S(0)]"));
  // [8] -> [2,4] on 4 ranks: 2 elements each cannot be one row of 4.
  EXPECT_FALSE(
      contains(nd_strs(expand_strategies(op_def("view"), {f64({8})}, {{"shape", Shape{2, 4}}}, DeviceMesh({4}))),
               "[S(0)] -> [S(0)]"));
}

TEST(ShapeRules, MaskPartialIsNeverNested) {
  Strs got = nd_strs(expand_strategies(op_def("embedding"), {f64({8, 4}), i64({2, 3})}, {}, DeviceMesh({2, 2})));
  EXPECT_TRUE(contains(got, "[S(0), R], [R, S(1)] -> [MP(8), S(1)]"));
  EXPECT_FALSE(contains(got, "[S(0), S(0)], [R, R] -> [MP(8), MP(8)]"));
}

LocalCallPlan plan_at(std::string_view op, const std::vector<TensorMeta>& inputs, const Attrs& attrs,
                      NdStrategy strategy, const DeviceMesh& mesh, std::vector<int64_t> coordinate) {
  std::vector<Tensor> metas;
  for (const TensorMeta& meta : inputs) metas.push_back(Tensor::meta(meta.shape, meta.dtype));
  const OpDef& def = op_def(op);
  return plan_local_call(def, inputs, check_call(def, metas, attrs), strategy, mesh, coordinate);
}

TEST(ShapeRules, LocalizedAttributes) {
  DeviceMesh mesh({2});
  NdStrategy s0{{{Shard{0}}}, {{Shard{0}}}};
  EXPECT_EQ(plan_at("reshape", {f64({4, 6})}, {{"shape", Shape{-1, 3}}}, s0, mesh, {1}).attrs.get_ints("shape"),
            (Shape{4, 3}));
  EXPECT_EQ(plan_at("expand", {f64({4, 1})}, {{"shape", Shape{4, 5}}}, s0, mesh, {0}).attrs.get_ints("shape"),
            (Shape{2, 5}));
  // [2,3] squeezed with no size-1 dim: the local [1,3] must keep its dim 0.
  LocalCallPlan squeeze = plan_at("squeeze", {f64({2, 3})}, {}, s0, mesh, {0});
  EXPECT_EQ(squeeze.attrs.get_ints("dims"), (Shape{1}));
  EXPECT_EQ(squeeze.local_outputs[0].shape, (Shape{1, 3}));
  NdStrategy slice_back{{{Shard{1}}}, {{Shard{1}}}};
  EXPECT_EQ(plan_at("slice_backward", {f64({2, 5})},
                    {{"shape", Shape{5, 5}},
                     {"dim", int64_t{0}},
                     {"start", int64_t{1}},
                     {"end", int64_t{5}},
                     {"step", int64_t{2}}},
                    slice_back, mesh, {1})
                .attrs.get_ints("shape"),
            (Shape{5, 2}));
  NdStrategy rows{{{Replicate{}}, {Replicate{}}}, {{Shard{0}}}};
  EXPECT_EQ(plan_at("embedding_backward", {f64({2, 3, 4}), i64({2, 3})}, {{"num_weights", int64_t{7}}}, rows, mesh, {1})
                .attrs.get_int("num_weights"),
            3);
}

// The "mean" row split, run through the local facet directly: expand_strategies drops it today,
// since the op's own shape check refuses a whole target beside split scores (see loss.cpp).
TEST(ShapeRules, RowSplitMeanLossDividesByTheGlobalCount) {
  Tensor target = Tensor::from_vector({1, -100, 4, 0, 2, 2, -100, 3}, {8}, DType::Int64);
  Tensor scores = testing::random_tensor({8, 5}, DType::Float64, 7);
  Attrs attrs{{"reduction", std::string("mean")}, {"ignore_index", int64_t{-100}}};
  const int64_t ranks = 3;  // rows 3 + 3 + 2
  for (std::string op : {"cross_entropy", "nll_loss"}) {
    const OpDef& def = op_def(op);
    double total = 0;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      int64_t offset = dist::shard_offset(8, ranks, rank), rows = dist::shard_size(8, ranks, rank);
      std::vector<TensorMeta> global_inputs{scores.meta_info(), target.meta_info()};
      std::vector<TensorMeta> global_outputs{f64({})}, local_outputs{f64({})};
      std::vector<TensorMeta> local_inputs{f64({rows, 5}), target.meta_info()};
      std::vector<Shape> input_offsets{{offset, 0}, {0}}, output_offsets{{}};
      std::vector<std::vector<Placement>> input_placements{{Shard{0}}, {Replicate{}}};
      std::vector<std::vector<Placement>> output_placements{{Partial{}}};
      LocalContext ctx{global_inputs, global_outputs, local_inputs,     local_outputs,
                       input_offsets, output_offsets, input_placements, output_placements};
      LocalResult result = def.local({scores.slice(0, offset, offset + rows), target}, attrs, ctx);
      total += result.outputs[0].to_vector<double>()[0];
    }
    EXPECT_NEAR(total, call1(op, {scores, target}, attrs).to_vector<double>()[0], 1e-12) << op;
  }
}

TEST(ShapeRules, EmbeddingMaskMarksOtherRanksRows) {
  DeviceMesh mesh({2});
  Tensor weight = testing::random_tensor({5, 3}, DType::Float64, 1);
  Tensor indices = Tensor::from_vector({0, 3, 4, 2}, {4}, DType::Int64);
  NdStrategy rows{{{Shard{0}}, {Replicate{}}}, {{MaskPartial{5}}}};
  LocalCallPlan plan = plan_at("embedding", {weight.meta_info(), indices.meta_info()}, {}, rows, mesh, {1});
  // Rank 1 holds rows [3, 5).
  Tensor local_weight = weight.slice(0, 3, 5);
  LocalResult result = run_local(op_def("embedding"), {local_weight, indices}, plan);
  Tensor expected_mask = Tensor::from_vector({1, 0, 0, 1}, {4, 1}, DType::Int64).to(DType::Bool);
  EXPECT_TRUE(testing::all_close(result.masks[0].to(DType::Float64), expected_mask.to(DType::Float64)));
  EXPECT_TRUE(testing::all_close(result.outputs[0].slice(0, 1, 3), weight.slice(0, 3, 5)));
}

TEST(ShapeRules, RowSplitEmbeddingBackwardKeepsItsRows) {
  DeviceMesh mesh({2});
  Tensor grad = testing::random_tensor({4, 2}, DType::Float64, 2);
  Tensor indices = Tensor::from_vector({4, 1, 4, 0}, {4}, DType::Int64);
  NdStrategy rows{{{Replicate{}}, {Replicate{}}}, {{Shard{0}}}};
  Attrs attrs{{"num_weights", int64_t{5}}};
  Tensor full = call1("embedding_backward", {grad, indices}, attrs);
  for (int64_t rank = 0; rank < 2; ++rank) {
    LocalCallPlan plan =
        plan_at("embedding_backward", {grad.meta_info(), indices.meta_info()}, attrs, rows, mesh, {rank});
    LocalResult result = run_local(op_def("embedding_backward"), {grad, indices}, plan);
    EXPECT_TRUE(testing::all_close(result.outputs[0], full.slice(0, rank * 3, std::min<int64_t>(5, rank * 3 + 3))));
  }
}

// ---- every strategy of every op, simulated on meshes 4, 2x2 and 2x4 ----

struct Sample {
  std::string op;
  std::vector<Tensor> inputs;
  Attrs attrs;
  bool shards = true;  // some strategy beyond all-Replicate is sound
};

void PrintTo(const Sample& sample, std::ostream* os) {
  *os << sample.op << "(";
  for (size_t i = 0; i < sample.inputs.size(); ++i) *os << (i ? ", " : "") << sample.inputs[i].meta_info().str();
  *os << ")" << sample.attrs.str();
}

Tensor rand(const Shape& shape, uint64_t seed) { return testing::random_tensor(shape, DType::Float64, seed); }
Tensor ints(const Shape& shape, int64_t high, uint64_t seed) { return testing::random_ints(shape, 0, high, seed); }

// Dims big enough to split on 4 ranks, evenly and not.
std::vector<Sample> samples() {
  std::vector<Sample> out = {
      {"matmul", {rand({4, 6}, 1), rand({6, 8}, 2)}, {}},
      {"matmul", {rand({5, 7}, 3), rand({7, 3}, 4)}, {}},
      {"matmul", {rand({2, 3, 4, 6}, 5), rand({6, 5}, 6)}, {}},
      {"matmul", {rand({4, 1, 4, 6}, 7), rand({3, 6, 4}, 8)}, {}},
      {"matmul", {rand({6}, 9), rand({2, 6, 4}, 10)}, {}},
      {"matmul", {rand({4, 2, 6}, 11), rand({6}, 12)}, {}},
      {"matmul", {rand({8}, 13), rand({8}, 14)}, {}},
      {"linear", {rand({4, 3, 8}, 20), rand({6, 8}, 21), rand({6}, 22)}, {}},
      {"linear", {rand({8}, 23), rand({5, 8}, 24)}, {}},
      {"embedding", {rand({8, 4}, 30), ints({4, 2}, 8, 31)}, {}},
      {"embedding", {rand({5, 6}, 32), ints({3, 4}, 5, 33)}, {}},
      {"embedding_backward", {rand({4, 3, 6}, 34), ints({4, 3}, 8, 35)}, {{"num_weights", int64_t{8}}}},
      {"embedding_backward", {rand({4, 2}, 36), ints({4}, 5, 37)}, {{"num_weights", int64_t{5}}}},
      {"one_hot", {ints({4, 3}, 8, 38)}, {{"num_classes", int64_t{8}}}},
      {"one_hot", {ints({5}, 6, 39)}, {{"num_classes", int64_t{6}}, {"dtype", DType::Int64}}},
      {"view", {rand({4, 6, 8}, 50)}, {{"shape", Shape{24, 8}}}},
      {"view", {rand({4, 6, 8}, 51)}, {{"shape", Shape{4, 2, 3, -1}}}},
      {"reshape", {rand({8, 6}, 52)}, {{"shape", Shape{4, 2, 6}}}},
      {"reshape", {rand({1, 8, 3}, 53)}, {{"shape", Shape{8, 3, 1}}}},
      {"permute", {rand({4, 6, 8}, 54)}, {{"dims", Shape{2, 0, 1}}}},
      {"transpose", {rand({4, 6, 8}, 55)}, {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}},
      {"slice",
       {rand({8, 6, 4}, 56)},
       {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{6}}, {"step", int64_t{2}}}},
      {"narrow", {rand({8, 6}, 57)}, {{"dim", int64_t{0}}, {"start", int64_t{2}}, {"length", int64_t{5}}}},
      {"slice_backward",
       {rand({8, 3, 4}, 58)},
       {{"shape", Shape{8, 6, 4}},
        {"dim", int64_t{1}},
        {"start", int64_t{1}},
        {"end", int64_t{6}},
        {"step", int64_t{2}}}},
      {"select", {rand({8, 6, 4}, 59)}, {{"dim", int64_t{1}}, {"index", int64_t{-2}}}},
      {"squeeze", {rand({4, 1, 6}, 60)}, {}},
      {"squeeze", {rand({2, 6}, 61)}, {{"dims", Shape{0}}}},
      {"unsqueeze", {rand({4, 6}, 62)}, {{"dim", int64_t{1}}}},
      {"expand", {rand({4, 1, 6}, 63)}, {{"shape", Shape{2, 4, 8, 6}}}},
      {"cat", {rand({4, 6}, 64), rand({4, 2}, 65)}, {{"dim", int64_t{1}}}},
      {"stack", {rand({4, 6}, 66), rand({4, 6}, 67), rand({4, 6}, 68)}, {{"dim", int64_t{1}}}},
      {"split", {rand({4, 8}, 69)}, {{"sizes", Shape{3, 5}}, {"dim", int64_t{1}}}},
      {"chunk", {rand({8, 6}, 70)}, {{"chunks", int64_t{3}}, {"dim", int64_t{0}}}},
      {"contiguous", {rand({4, 6, 8}, 71).transpose(0, 2)}, {}},
      {"clone", {rand({4, 6}, 72)}, {}},
  };
  const char* sdpa = "scaled_dot_product_attention";
  for (bool causal : {false, true}) {
    out.push_back(
        {sdpa, {rand({2, 4, 8, 4}, 80), rand({2, 4, 6, 4}, 81), rand({2, 4, 6, 8}, 82)}, {{"causal", causal}}});
    out.push_back({sdpa, {rand({2, 1, 7, 4}, 83), rand({2, 4, 7, 4}, 84), rand({4, 7, 5}, 85)}, {{"causal", causal}}});
  }
  Tensor target = Tensor::from_vector({1, -100, 4, 0, 2, 2, -100, 3}, {8}, DType::Int64);
  for (std::string op : {"cross_entropy", "nll_loss"}) {
    for (std::string reduction : {"mean", "sum", "none"}) {
      bool shards = op == "nll_loss" || reduction != "mean";
      out.push_back({op, {rand({8, 5}, 90), target}, {{"reduction", reduction}}, shards});
      out.push_back({op,
                     {rand({6, 5}, 91), Tensor::from_vector({2, 4, 0, 2, 1, 3}, {6}, DType::Int64)},
                     {{"reduction", reduction}, {"ignore_index", int64_t{2}}},
                     shards});
    }
  }
  return out;
}

class ShapeRulesSimulation : public ::testing::TestWithParam<Sample> {};

TEST_P(ShapeRulesSimulation, EveryStrategyGivesTheSingleDeviceResult) {
  const Sample& sample = GetParam();
  const OpDef& def = op_def(sample.op);
  std::vector<Tensor> expected = call(def, sample.inputs, sample.attrs);
  std::vector<TensorMeta> metas;
  for (const Tensor& input : sample.inputs) metas.push_back(input.meta_info());
  for (const DeviceMesh& mesh : {DeviceMesh({4}), DeviceMesh({2, 2}), DeviceMesh({2, 4})}) {
    std::vector<NdStrategy> strategies = expand_strategies(def, metas, sample.attrs, mesh);
    ASSERT_FALSE(strategies.empty());
    // Beyond all-Replicate: the samples are big enough for something to shard.
    if (sample.shards) {
      EXPECT_GT(strategies.size(), 1u) << mesh.str();
    }
    uint64_t seed = 0;
    for (const NdStrategy& strategy : strategies) {
      std::vector<Tensor> got;
      try {
        got = testing::simulate_strategy(def, sample.inputs, sample.attrs, strategy, mesh, ++seed);
      } catch (const Error& error) {
        ADD_FAILURE() << mesh.str() << " " << nd_strategy_str(strategy) << ": " << error.what();
        continue;
      }
      ASSERT_EQ(got.size(), expected.size());
      for (size_t o = 0; o < got.size(); ++o) {
        EXPECT_TRUE(testing::all_close(got[o].to(DType::Float64), expected[o].to(DType::Float64), 1e-9, 1e-9))
            << mesh.str() << " " << nd_strategy_str(strategy) << " output " << o;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, ShapeRulesSimulation, ::testing::ValuesIn(samples()));

}  // namespace
}  // namespace px
