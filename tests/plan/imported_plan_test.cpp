// Another planner's parameter placements, priced under Parallax's cost model: the DTensor text
// they come in, _StridedShard's cost twin, the constraint set, and the comparison in words.

#include "parallax/plan/imported_plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

#include "parallax/core/error.h"
#include "parallax/dtensor/redistribute.h"
#include "parallax/plan/report.h"
#include "plan/builder_models.h"
#include "plan/plan_test_util.h"
#include "support/cli_runner.h"
#include "support/test_util.h"

namespace px::plan {
namespace {

using Kind = ForeignPlacement::Kind;
using P = std::vector<Placement>;

using px::testing::error_message;

TEST(ImportedPlan, ParsesDTensorPlacementText) {
  const auto strided = parse_foreign_placements("(_StridedShard(dim=0, sf=8), Shard(dim=0))");
  ASSERT_EQ(strided.size(), 2u);
  EXPECT_EQ(strided[0], (ForeignPlacement{Kind::StridedShard, 0, 8}));
  EXPECT_EQ(strided[1], (ForeignPlacement{Kind::Shard, 0}));
  const auto mixed = parse_foreign_placements(" ( Replicate(), Shard(dim=2), Partial(reduce_op='avg') ) ");
  ASSERT_EQ(mixed.size(), 3u);
  EXPECT_EQ(mixed[0].kind, Kind::Replicate);
  EXPECT_EQ(mixed[1], (ForeignPlacement{Kind::Shard, 2}));
  EXPECT_EQ(mixed[2].kind, Kind::Partial);
  EXPECT_EQ(mixed[2].reduce, ReduceOp::Avg);
  EXPECT_EQ(parse_foreign_placements("[S(1), R]"), (std::vector<ForeignPlacement>{{Kind::Shard, 1}, {}}));
  EXPECT_EQ(parse_foreign_placements("Shard(dim=1)"), (std::vector<ForeignPlacement>{{Kind::Shard, 1}}));
  // Python prints a one-element tuple with a trailing comma.
  EXPECT_EQ(parse_foreign_placements("(Shard(dim=0),)"), (std::vector<ForeignPlacement>{{Kind::Shard, 0}}));
}

TEST(ImportedPlan, RejectsMalformedPlacementText) {
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"(Shard(dim=0), Replicate()", "unbalanced '('"},
           {"(Shard(dim=x), Replicate())", "'x' is not a non-negative integer"},
           {"(Shard(dim=-1))", "'-1' is not a non-negative integer"},
           {"(Sharded(dim=0))", "unknown placement 'Sharded'"},
           {"(_StridedShard(dim=0))", "missing 'sf'"},
           {"(Shard(dim=0, sf=2))", "unknown argument 'sf'"},
           {"(Partial(reduce_op=prod))", "unknown reduction 'prod'"},
           {"(Shard(dim=0), , R)", "an empty entry"},
           {"", "empty text"},
           {"Shard(dim=0)x", "text after the closing ')'"}}) {
    EXPECT_NE(error_message([&] { parse_foreign_placements(text); }).find(message), std::string::npos)
        << text << ": " << error_message([&] { parse_foreign_placements(text); });
  }
}

// _StridedShard(dim=0, sf=tp) on dp with Shard(0) on tp is FSDP over a column-parallel weight: each
// tp rank's rows, split again over dp. Its cost twin shards dim 1 over dp: the same bytes per
// device, and the tp shard comes back with one all-gather over dp of the same size, which the
// nested (dp outer) Shard(0) cannot do.
TEST(ImportedPlan, StridedShardIsPricedAsItsCostTwin) {
  const dist::DeviceMesh mesh({2, 4}, {"dp", "tp"});
  const TensorMeta weight{Shape{64, 32}, DType::BFloat16};
  std::string note;
  const P twin =
      resolve_placements(parse_foreign_placements("(_StridedShard(dim=0, sf=4), Shard(dim=0))"), weight, mesh, &note);
  EXPECT_EQ(twin, (P{Shard{1}, Shard{0}}));
  EXPECT_NE(note.find("_StridedShard(dim=0, sf=4) on mesh dim 0 priced as S(1)"), std::string::npos) << note;

  const dist::MeshTopology topology = dist::MeshTopology::uniform(mesh.ndim(), dist::LinkProfile{"link", 1e-6, 1e10});
  const auto twin_steps = plan_redistribute(DTensorSpec{mesh, twin, weight}, P{Replicate{}, Shard{0}}, topology);
  const auto nested_steps =
      plan_redistribute(DTensorSpec{mesh, P{Shard{0}, Shard{0}}, weight}, P{Replicate{}, Shard{0}}, topology);
  ASSERT_EQ(twin_steps.steps.size(), 1u);  // one all-gather over dp of the [16, 32] tp shard
  EXPECT_EQ(twin_steps.steps[0].kind, RedistributeKind::AllGather);
  EXPECT_EQ(twin_steps.steps[0].mesh_dim, 0);
  EXPECT_GT(nested_steps.seconds, twin_steps.seconds);

  // A vector has no other dim: nested in mesh order, and said so.
  EXPECT_EQ(resolve_placements(parse_foreign_placements("(_StridedShard(dim=0, sf=4), Shard(dim=0))"),
                               TensorMeta{Shape{64}, DType::Float32}, mesh, &note),
            (P{Shard{0}, Shard{0}}));
  EXPECT_NE(note.find("nested in mesh order"), std::string::npos) << note;
  // The factor must be the later dims' devices; placements must match the mesh and the tensor.
  EXPECT_NE(error_message([&] {
              resolve_placements(parse_foreign_placements("(_StridedShard(dim=0, sf=8), Shard(dim=0))"), weight, mesh);
            }).find("needs later mesh dims of 8 devices sharding dim 0, found 4"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              resolve_placements(parse_foreign_placements("(Shard(dim=0))"), weight, mesh);
            }).find("1 given for a mesh of 2 dims"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              resolve_placements(parse_foreign_placements("(Shard(dim=2), R)"), weight, mesh);
            }).find("tensor dim 2 out of range for bf16[64,32]"),
            std::string::npos);
}

TEST(ImportedPlan, FileErrorsNameTheirPlace) {
  EXPECT_NE(
      error_message([] { parse_imported_placements("{\"placements\": {\"a\": 3}}", "ap.json"); }).find("ap.json:1:"),
      std::string::npos);
  EXPECT_NE(error_message([] {
              parse_imported_placements("{\"placements\": {\"a\": 3}}", "ap.json");
            }).find("placements.a: expected a placements text"),
            std::string::npos);
  EXPECT_NE(error_message([] {
              parse_imported_placements("{\n \"placements\": {\n  \"w\": \"(Shard(dim=0), Bogus())\"}}", "ap.json");
            }).find("ap.json:3:8: placements.w: placement 'Bogus()': unknown placement 'Bogus'"),
            std::string::npos)
      << error_message([] {
           parse_imported_placements("{\n \"placements\": {\n  \"w\": \"(Shard(dim=0), Bogus())\"}}", "ap.json");
         });
  EXPECT_NE(
      error_message([] { parse_imported_placements("{\"model\": \"8b\"}", "ap.json"); }).find("missing \"placements\""),
      std::string::npos);
  EXPECT_NE(error_message([] { parse_imported_placements("{\"placements\": ", "ap.json"); }).find("ap.json:1:"),
            std::string::npos);
  const ImportedPlacements listed =
      parse_imported_placements(R"j({"label": "TorchTitan", "placements": {"w": ["Shard(dim=0)", "Replicate()"]}})j");
  EXPECT_EQ(listed.label, "TorchTitan");
  ASSERT_EQ(listed.parameters.size(), 1u);
  EXPECT_EQ(listed.parameters[0].text, "(Shard(dim=0), Replicate())");
  EXPECT_EQ(listed.parameters[0].placements.size(), 2u);
}

// AutoParallel's LLaMA-3 pattern (../shared/anchors/autoparallel-llama3-8b-8x8.json) on a small LLaMA
// and a dp x tp mesh, under AutoParallel's names (no "model." prefix).
ImportedPlacements autoparallel_like(int64_t layers, int64_t tp) {
  const std::string strided = "(_StridedShard(dim=0, sf=" + std::to_string(tp) + "), Shard(dim=0))";
  std::string json =
      R"j({"label": "AutoParallel", "placements": {"tok_embeddings.weight": "(Shard(dim=1), Shard(dim=1))", )j";
  for (int64_t l = 0; l < layers; ++l) {
    const std::string layer = "\"layers." + std::to_string(l) + ".";
    json += layer + "attention.wq.weight\": \"(Shard(dim=0), Shard(dim=0))\", ";
    json += layer + "attention.wk.weight\": \"(Shard(dim=0), Shard(dim=0))\", ";
    json += layer + "attention.wv.weight\": \"" + strided + "\", ";
    json += layer + "attention.wo.weight\": \"(Shard(dim=0), Shard(dim=0))\", ";
    json += layer + "feed_forward.w1.weight\": \"" + strided + "\", ";
    json += layer + "feed_forward.w2.weight\": \"(Shard(dim=0), Shard(dim=1))\", ";
    json += layer + "feed_forward.w3.weight\": \"" + strided + "\", ";
    json += layer + "attention_norm.weight\": \"(Shard(dim=0), Shard(dim=0))\", ";
    json += layer + "ffn_norm.weight\": \"(Shard(dim=0), Shard(dim=0))\", ";
  }
  json += R"j("norm.weight": "(Shard(dim=0), Shard(dim=0))", "output.weight": ")j" + strided + "\"}}";
  return parse_imported_placements(json, "autoparallel.json");
}

nn::LlamaConfig small_llama() {
  nn::LlamaConfig config = nn::llama_mini();
  config.dim = 64;
  config.ffn_hidden = 128;
  config.vocab = 128;
  config.max_seq = 32;
  return config;
}

TEST(ImportedPlan, PricedAtItsBestAndNeverBelowTheSolver) {
  JointProgram llama = testing::llama_joint(small_llama(), 8, 32);
  const PlanProblem plan = build_problem(llama, dist::DeviceMesh({2, 2}, {"dp", "tp"}));
  const ImportedPlacements imported = autoparallel_like(2, 2);
  const Baseline baseline = import_baseline(imported, llama, plan);
  EXPECT_EQ(baseline.kind, BaselineKind::Imported);
  EXPECT_EQ(baseline.name, "AutoParallel");
  ASSERT_EQ(baseline.constraints.inputs.size(), 21u);  // every parameter of 2 layers, the norm, embedding, head
  std::map<std::string, P> fixed;
  for (const InputConstraint& constraint : baseline.constraints.inputs) {
    P placements;
    for (const auto& placement : constraint.placements) placements.push_back(placement.value());
    fixed[llama.inputs[static_cast<size_t>(constraint.input)].fqns.front()] = placements;
  }
  EXPECT_EQ(fixed.at("model.layers.1.attention.wv.weight"), (P{Shard{1}, Shard{0}}));
  EXPECT_EQ(fixed.at("model.layers.0.attention.wq.weight"), (P{Shard{0}, Shard{0}}));
  EXPECT_EQ(fixed.at("model.layers.0.feed_forward.w2.weight"), (P{Shard{0}, Shard{1}}));
  EXPECT_EQ(fixed.at("model.tok_embeddings.weight"), (P{Shard{1}, Shard{1}}));
  ASSERT_FALSE(baseline.notes.empty());
  EXPECT_NE(baseline.notes[0].find("priced as S(1) there"), std::string::npos) << baseline.notes[0];
  EXPECT_NE(baseline.notes[0].find("(7 parameters)"), std::string::npos) << baseline.notes[0];  // wv, w1, w3 x2, output

  const SolveOptions exact = testing::exact_solver();
  const BaselineResult result = solve_imported(imported, llama, plan, {}, exact);
  ASSERT_TRUE(result.plan.has_value()) << result.error;
  const ShardingPlan solver = solve_plan(llama, plan, {}, exact);
  EXPECT_LE(solver.evaluation.cost, result.plan->evaluation.cost * (1 + 1e-9));
  const DecodedPlan decoded = decode(plan, result.plan->choice);
  for (const auto& [name, placements] : fixed) {
    EXPECT_EQ(decoded.inputs[static_cast<size_t>(input_index(llama, name))], placements) << name;
  }

  const PlanReport ours = make_report(llama, plan, solver);
  const PlanReport theirs = make_report(llama, plan, *result.plan);
  const std::string text = format_difference(ours, theirs, plan.mesh);
  std::cout << text;
  EXPECT_NE(text.find("solver against AutoParallel: step"), std::string::npos) << text;
  // Every line of a differing parameter names both plans with placements in words.
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(layers\.N\.[a-z_.0-9]+weight x2 )"))) << text;
  EXPECT_NE(text.find("AutoParallel  [S(0), S(0)] dim 0 over dp then tp"), std::string::npos) << text;
  // A parameter's collectives add up to no more than the plan's communication.
  double per_parameter = 0;
  for (const ParameterRow& row : theirs.parameters) per_parameter += row.communication_seconds;
  EXPECT_GT(per_parameter, 0);
  EXPECT_LE(per_parameter, theirs.communication_seconds * (1 + 1e-9));
}

TEST(ImportedPlan, NamesAndLayersThatDoNotFit) {
  JointProgram llama = testing::llama_joint(small_llama(), 8, 32);
  const dist::DeviceMesh mesh({2, 2}, {"dp", "tp"});
  const PlanProblem plan = build_problem(llama, mesh);
  const std::string unknown = error_message([&] {
    import_baseline(parse_imported_placements(R"j({"placements": {"layers.0.attn.wq.weight": "(R, R)"}})j", "f.json"),
                    llama, plan);
  });
  EXPECT_NE(unknown.find("f.json: layers.0.attn.wq.weight: no parameter of the model has that name"), std::string::npos)
      << unknown;
  const std::string ambiguous = error_message([&] {
    import_baseline(parse_imported_placements(R"j({"placements": {"weight": "(R, R)"}})j", "f.json"), llama, plan);
  });
  EXPECT_NE(ambiguous.find("give its full name"), std::string::npos) << ambiguous;

  // Layers placed differently cannot share one decision; without clustering they can.
  const char* uneven = R"j({"placements": {"layers.0.attention.wq.weight": "(Shard(dim=0), Shard(dim=0))",
                                          "layers.1.attention.wq.weight": "(Replicate(), Shard(dim=0))"}})j";
  const std::string clustered =
      error_message([&] { import_baseline(parse_imported_placements(uneven, "f.json"), llama, plan); });
  EXPECT_NE(clustered.find("--no-cluster"), std::string::npos) << clustered;
  PlanOptions unclustered;
  unclustered.cluster_layers = false;
  const PlanProblem per_layer = build_problem(llama, mesh, unclustered);
  const Baseline baseline = import_baseline(parse_imported_placements(uneven, "f.json"), llama, per_layer);
  EXPECT_EQ(baseline.constraints.inputs.size(), 2u);
  ASSERT_FALSE(baseline.notes.empty());
  EXPECT_NE(baseline.notes.back().find("19 parameters not in f.json placed by the solver"), std::string::npos)
      << baseline.notes.back();
}

TEST(ImportedPlan, CliComparesAndExplains) {
  const std::string path = testing::temp_path("autoparallel.json");
  testing::spit(path, R"j({"placements": {
      "layers.0.attention.wq.weight": "(Shard(dim=0), Shard(dim=0))",
      "layers.1.attention.wq.weight": "(Shard(dim=0), Shard(dim=0))",
      "layers.0.feed_forward.w1.weight": "(_StridedShard(dim=0, sf=2), Shard(dim=0))",
      "layers.1.feed_forward.w1.weight": "(_StridedShard(dim=0, sf=2), Shard(dim=0))"}})j");
  const auto run = px::testing::run_cli(
      PARALLAX_CLI_PATH,
      "plan --model llama-mini --mesh 2x2 --batch 4 --seq 8 --device cpu --compare 'AutoParallel=" + path + "'");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* text : {"solver against the imported and the hand-written plans", "\nAutoParallel ",
                           "note (AutoParallel): _StridedShard(dim=0, sf=2) on mesh dim 0 priced as S(1) there",
                           "solver against AutoParallel: step"}) {
    EXPECT_NE(run.out.find(text), std::string::npos) << text << "\n" << run.out;
  }
  testing::spit(path, R"j({"placements": {"layers.0.attention.wq.weight": "(Shard(dim=0))"}})j");
  const auto bad = px::testing::run_cli(PARALLAX_CLI_PATH,
                                        "plan --model llama-mini --mesh 2x2 --no-baselines --compare '" + path + "'");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("layers.0.attention.wq.weight f32[32,32]: placements: 1 given for a mesh of 2 dims"),
            std::string::npos)
      << bad.err;
  const auto missing =
      px::testing::run_cli(PARALLAX_CLI_PATH, "plan --model llama-mini --mesh 2x2 --compare x=/nonexistent.json");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("/nonexistent.json"), std::string::npos) << missing.err;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace px::plan
