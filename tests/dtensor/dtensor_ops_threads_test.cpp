// Every op with a sharding rule, called eagerly on DTensors on meshes 4, 2x2 and 2x4 (threads
// backend): for every combination of input placements (a seeded sample beyond 64), every
// output's full_tensor() equals the single-device result, and so does every gradient of the
// VJP run through DTensor (dtensor_checks.h). The shared samples (tests/support) are small, so
// larger ones below make real sharding happen, evenly (4, 6, 8) and not (5, 7).
//
// One test per op; each launches one job per mesh and runs all of the op's samples in it.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "dtensor/dtensor_checks.h"
#include "parallax/dist/process_group.h"
#include "parallax/ops/registry.h"
#include "support/op_samples.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;
using testing::OpSample;

Tensor f64(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return testing::random_tensor(shape, DType::Float64, seed, low, high);
}
Tensor f32(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return testing::random_tensor(shape, DType::Float32, seed, low, high);
}
Tensor ints(const Shape& shape, int64_t low, int64_t high, uint64_t seed) {
  return testing::random_ints(shape, low, high, seed);
}
Attrs reduce_dims(std::vector<int64_t> dims, bool keepdim = false) {
  return {{"dims", std::move(dims)}, {"keepdim", keepdim}};
}

// Shapes that split over 2 and 4 ranks, evenly and not, for the main op families.
std::vector<OpSample> larger_samples() {
  std::vector<OpSample> all;
  auto add = [&](std::string op, std::vector<Tensor> inputs, Attrs attrs, bool vjp, std::string note) {
    all.push_back({std::move(op), std::move(inputs), std::move(attrs), vjp, "large: " + std::move(note)});
  };
  // Elementwise.
  add("add", {f64({4, 6}, 1), f64({4, 6}, 2)}, {}, true, "4x6");
  add("add", {f64({8, 4}, 3), f64({4}, 4)}, {}, true, "broadcast 8x4");
  add("sub", {f64({5, 7}, 5), f64({5, 1}, 6)}, {}, true, "uneven broadcast 5x7");
  add("mul", {f64({5, 7}, 7), f64({7}, 8)}, {}, true, "uneven 5x7");
  add("div", {f64({4, 6}, 9), f64({4, 6}, 10, 0.5, 2)}, {}, true, "4x6");
  add("maximum", {f32({8, 4}, 11), f32({8, 4}, 12)}, {}, false, "f32 8x4");
  add("add", {ints({4, 6}, -9, 9, 13), ints({6}, -9, 9, 14)}, {}, false, "i64 4x6");
  add("mul_scalar", {f64({5, 7}, 15)}, {{"scalar", -2.5}}, true, "5x7");
  add("exp", {f64({4, 6}, 16)}, {}, true, "4x6");
  add("tanh", {f64({5, 7}, 17, -3, 3)}, {}, true, "5x7");
  add("gelu", {f32({8, 4}, 18, -3, 3)}, {}, false, "f32 8x4");
  add("relu", {f64({4, 6}, 19)}, {}, true, "4x6");
  add("lt", {f64({4, 6}, 20), f64({6}, 21)}, {}, false, "broadcast 4x6");
  add("where", {ints({4, 6}, 0, 2, 22).to(DType::Bool), f64({4, 6}, 23), f64({6}, 24)}, {}, true, "4x6");
  add("cast", {f64({5, 7}, 25)}, {{"dtype", DType::Float32}}, false, "5x7 to f32");
  // Reductions.
  add("sum", {f64({4, 6}, 30)}, reduce_dims({1}), true, "4x6 dim 1");
  add("sum", {f64({5, 7}, 31)}, reduce_dims({}), true, "5x7 all");
  add("sum", {f64({8, 4, 2}, 32)}, reduce_dims({0, 2}, true), true, "8x4x2 keepdim");
  add("mean", {f64({4, 6}, 33)}, reduce_dims({0}), true, "4x6 dim 0");
  add("mean", {f64({5, 7}, 34)}, reduce_dims({1}), true, "5x7 dim 1");
  add("amax", {f64({4, 6}, 35)}, reduce_dims({1}), true, "4x6");
  add("amin", {f64({5, 7}, 36)}, reduce_dims({0}), true, "5x7");
  add("argmax", {f64({4, 6}, 37)}, {{"dim", int64_t{1}}}, false, "4x6");
  // Linear algebra.
  add("matmul", {f64({4, 6}, 40), f64({6, 8}, 41)}, {}, true, "4x6 @ 6x8");
  add("matmul", {f64({5, 7}, 42), f64({7, 3}, 43)}, {}, true, "5x7 @ 7x3");
  add("matmul", {f64({2, 4, 6}, 44), f64({6, 4}, 45)}, {}, true, "batched 2x4x6 @ 6x4");
  add("matmul", {f64({8}, 46), f64({8, 4}, 47)}, {}, true, "vector 8 @ 8x4");
  add("linear", {f64({4, 6}, 48), f64({8, 6}, 49), f64({8}, 50)}, {}, true, "4x6, 8x6, 8");
  add("linear", {f64({5, 7}, 51), f64({3, 7}, 52)}, {}, true, "5x7, 3x7");
  // NN.
  add("softmax", {f64({4, 6}, 60)}, {}, true, "4x6");
  add("log_softmax", {f64({5, 7}, 61)}, {{"dim", int64_t{0}}}, true, "5x7 dim 0");
  add("layer_norm", {f64({4, 6}, 62), f64({6}, 63), f64({6}, 64)}, {}, true, "4x6");
  add("rms_norm", {f64({5, 8}, 65), f64({8}, 66)}, {}, true, "5x8");
  add("embedding", {f64({8, 4}, 67), ints({2, 4}, 0, 8, 68)}, {}, true, "8x4 table");
  add("embedding", {f64({7, 3}, 69), ints({5}, 0, 7, 70)}, {}, true, "uneven 7x3 table");
  add("cross_entropy", {f64({8, 5}, 71), ints({8}, 0, 5, 72)}, {}, true, "8x5 mean");
  add("nll_loss", {f64({4, 6}, 73), ints({4}, 0, 6, 74)}, {{"reduction", std::string("sum")}}, true, "4x6 sum");
  add("scaled_dot_product_attention", {f64({2, 4, 8}, 75), f64({2, 4, 8}, 76), f64({2, 4, 8}, 77)}, {{"causal", true}},
      true, "2x4x8 causal");
  add("rope", {f64({4, 4, 8}, 78)}, {}, true, "4x4x8");
  add("dropout", {f64({8, 4}, 79)}, {{"p", 0.5}, {"seed", int64_t{3}}, {"offset", int64_t{0}}}, true, "8x4");
  // Shapes.
  add("transpose", {f64({4, 6}, 80)}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, true, "4x6");
  add("permute", {f64({2, 4, 6}, 81)}, {{"dims", Shape{2, 0, 1}}}, true, "2x4x6");
  add("reshape", {f64({4, 6}, 82)}, {{"shape", Shape{2, 12}}}, true, "4x6 to 2x12");
  add("view", {f64({8, 4}, 83)}, {{"shape", Shape{8, 2, 2}}}, true, "8x4 to 8x2x2");
  add("expand", {f64({4, 1}, 84)}, {{"shape", Shape{4, 6}}}, true, "4x1 to 4x6");
  add("slice", {f64({8, 4}, 85)}, {{"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{7}}}, true, "8x4");
  add("narrow", {f64({5, 7}, 86)}, {{"dim", int64_t{1}}, {"start", int64_t{2}}, {"length", int64_t{4}}}, true, "5x7");
  add("select", {f64({4, 6}, 87)}, {{"dim", int64_t{0}}, {"index", int64_t{2}}}, true, "4x6");
  add("cat", {f64({4, 6}, 88), f64({4, 2}, 89)}, {{"dim", int64_t{1}}}, true, "4x6 + 4x2");
  add("stack", {f64({4, 6}, 90), f64({4, 6}, 91)}, {{"dim", int64_t{0}}}, true, "2 of 4x6");
  add("split", {f64({8, 4}, 92)}, {{"sizes", Shape{4, 4}}, {"dim", int64_t{0}}}, true, "8x4");
  add("triu", {f64({4, 6}, 93)}, {{"diagonal", int64_t{1}}}, true, "4x6");
  add("unsqueeze", {f64({4, 6}, 94)}, {{"dim", int64_t{1}}}, true, "4x6");
  add("squeeze", {f64({4, 1, 6}, 95)}, {}, true, "4x1x6");
  add("contiguous", {testing::non_contiguous(f64({4, 6}, 96))}, {}, true, "4x6");
  return all;
}

std::vector<OpSample> samples_of(const std::string& op) {
  std::vector<OpSample> out;
  for (auto source : {testing::all_op_samples, larger_samples}) {
    for (OpSample& sample : source()) {
      if (sample.op == op) out.push_back(std::move(sample));
    }
  }
  return out;
}

std::vector<std::string> sampled_op_names() {
  std::set<std::string> names;
  for (const OpSample& sample : testing::all_op_samples()) names.insert(sample.op);
  for (const OpSample& sample : larger_samples()) names.insert(sample.op);
  return {names.begin(), names.end()};
}

const std::vector<DeviceMesh>& meshes() {
  static const std::vector<DeviceMesh> all{DeviceMesh({4}), DeviceMesh({2, 2}), DeviceMesh({2, 4})};
  return all;
}

// Eager DTensor dispatch checks a strategy's soundness at every mesh coordinate on every rank,
// which costs most on 2-D meshes with many threads per core: fewer combinations there keep the
// suite near half a minute on 2 cores. Mesh 4 gets the full 64.
// PARALLAX_DTENSOR_MAX_COMBOS=<n> sets one limit for every mesh.
testing::OpCheckOptions options_for(const DeviceMesh& mesh) {
  testing::OpCheckOptions options;
  options.seed = 20240601;
  options.max_combos = mesh.ndim() == 1 ? 64 : mesh.size() > 4 ? 24 : 32;
  if (const char* limit = std::getenv("PARALLAX_DTENSOR_MAX_COMBOS"); limit != nullptr && std::atoi(limit) > 0) {
    options.max_combos = static_cast<size_t>(std::atoi(limit));
  }
  return options;
}

struct MeshRun {
  std::set<std::string> failures;
  testing::OpCheckStats totals;  // rank 0's, summed over samples
  size_t no_rule_samples = 0;
};

MeshRun run_on_mesh(const DeviceMesh& mesh, const std::vector<OpSample>& samples) {
  MeshRun run;
  std::mutex mutex;
  const testing::OpCheckOptions options = options_for(mesh);
  try {
    dist::launch(
        static_cast<int>(mesh.size()),
        [&](int rank, dist::ProcessGroup& world) {
          auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
          for (const OpSample& sample : samples) {
            testing::OpCheckStats stats;
            std::vector<std::string> found = testing::check_op_sample(sample, groups, options, &stats);
            std::lock_guard<std::mutex> lock(mutex);
            run.failures.insert(found.begin(), found.end());
            if (rank == 0) {
              run.totals.combos += stats.combos;
              run.totals.failed_combos += stats.failed_combos;
              run.totals.vjp_combos += stats.vjp_combos;
              run.no_rule_samples += stats.no_rule ? 1 : 0;
            }
          }
        },
        dist::LaunchOptions{dist::Backend::Threads});
  } catch (const std::exception& error) {
    run.failures.insert(mesh.str() + ": the job failed: " + error.what());
  }
  return run;
}

class DTensorOps : public ::testing::TestWithParam<std::string> {};

TEST_P(DTensorOps, MatchSingleDeviceOnMeshes) {
  const std::string& name = GetParam();
  const OpDef& op = builtin_registry().get(name);
  std::vector<OpSample> samples = samples_of(name);
  const bool any_input =
      std::any_of(samples.begin(), samples.end(), [](const OpSample& s) { return !s.inputs.empty(); });
  if (!any_input) GTEST_SKIP() << name << " takes no tensor input: nothing to distribute";
  const bool has_rule = static_cast<bool>(op.sharding);
  for (const DeviceMesh& mesh : meshes()) {
    auto start = std::chrono::steady_clock::now();
    MeshRun run = run_on_mesh(mesh, samples);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[dtensor-op] %s %s: %zu samples, %zu combos, %zu failed, %zu with VJP, %zu failure lines, %.2f s%s\n",
                name.c_str(), mesh.str().c_str(), samples.size(), run.totals.combos, run.totals.failed_combos,
                run.totals.vjp_combos, run.failures.size(), seconds, has_rule ? "" : " (no rule)");
    if (!run.failures.empty()) {
      std::string text;
      size_t shown = 0;
      for (const std::string& failure : run.failures) {
        if (shown++ == 12) break;
        text += "\n  " + failure;
      }
      ADD_FAILURE() << name << " on " << mesh.str() << ": " << run.failures.size() << " failures, "
                    << run.totals.failed_combos << " of " << run.totals.combos << " combinations:" << text;
    }
  }
  if (!has_rule) GTEST_SKIP() << name << " has no sharding rule yet: only its UnsupportedOp on DTensors was checked";
}

INSTANTIATE_TEST_SUITE_P(AllOps, DTensorOps, ::testing::ValuesIn(sampled_op_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Which sampled ops have no rule yet (informational: the rules are being written), and which ops
// of the registry have no sample at all, so cannot be checked here.
// Every sampled op that takes tensors has a sharding rule (factories, which take none, are
// placed by the planner), and the only registry ops without a sample are the collectives, which
// the DTensor machinery emits itself and the dist suites test.
TEST(DTensorOpsCoverage, SampledOpsHaveRulesAndOnlyCollectivesLackSamples) {
  std::vector<std::string> sampled = sampled_op_names();
  for (const std::string& name : sampled) {
    const OpDef& op = builtin_registry().get(name);
    const bool takes_tensors = !samples_of(name).front().inputs.empty();
    EXPECT_TRUE(op.sharding || !takes_tensors) << name << " has no sharding rule";
  }
  for (const std::string& name : builtin_registry().names()) {
    if (std::find(sampled.begin(), sampled.end(), name) != sampled.end()) continue;
    EXPECT_TRUE(builtin_registry().get(name).traits.collective) << name << " has no DTensor sample";
  }
}

}  // namespace
}  // namespace px
