// The seed scenario with the real DTensor: an embedding over a row-sharded table gives a
// MaskPartial DTensor that carries its mask as an inner tensor (region A); redistributing it to
// Replicate applies the mask, releases it from the DTensor it reads, and reduces (region B).
// Each region runs eagerly or compiled (captured on each rank), in every combination, and every
// combination matches eager: the values bit for bit, and the mask's presence on the caller's
// DTensor after each region.

#include <gtest/gtest.h>

#include <mutex>
#include <optional>

#include "parallax/capture/capture.h"
#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/dtensor/dtensor.h"
#include "parallax/ir/printer.h"
#include "parallax/ops/nn.h"
#include "support/test_util.h"

namespace px {
namespace {

using dist::DeviceMesh;

enum class Mode : uint8_t { Eager, Compiled };

Tensor region_a(const Tensor& weight, const Tensor& idx) { return px::embedding(weight, idx); }
Tensor region_b(const Tensor& rows) {
  return redistribute(rows, std::vector<Placement>(dtensor_spec(rows).mesh.ndim(), Replicate{}));
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.meta_info() == b.meta_info() && a.to_vector<double>() == b.to_vector<double>();
}

struct Scenario {
  DeviceMesh mesh;
  std::vector<Placement> weight_placements;
  std::vector<Placement> rows_placements;  // what region A must produce
};

// Runs every mix on every rank of `scenario.mesh`; returns failures.
std::vector<std::string> run_scenario(const Scenario& scenario) {
  std::mutex mutex;
  std::vector<std::string> failures;
  Tensor weight = testing::random_tensor({10, 6}, DType::Float64, 3);
  Tensor idx = testing::random_ints({2, 5}, 0, 10, 4);
  Tensor expected = px::embedding(weight, idx);
  const std::vector<std::pair<Mode, Mode>> mixes = {{Mode::Eager, Mode::Eager},
                                                    {Mode::Eager, Mode::Compiled},
                                                    {Mode::Compiled, Mode::Eager},
                                                    {Mode::Compiled, Mode::Compiled}};
  dist::launch(
      static_cast<int>(scenario.mesh.size()),
      [&](int rank, dist::ProcessGroup& world) {
        auto fail = [&](const std::string& what) {
          std::lock_guard<std::mutex> lock(mutex);
          failures.push_back("rank " + std::to_string(rank) + ": " + what);
        };
        auto groups = std::make_shared<dist::MeshGroups>(scenario.mesh, world);
        std::vector<Placement> replicated(scenario.mesh.ndim(), Replicate{});
        Tensor weight_dt = distribute_tensor(weight, groups, scenario.weight_placements);
        Tensor idx_dt = distribute_tensor(idx, groups, replicated);

        // The eager reference on this rank.
        Tensor ref_rows = region_a(weight_dt, idx_dt);
        if (dtensor_spec(ref_rows).placements != scenario.rows_placements) {
          fail("embedding gave " + placements_str(dtensor_spec(ref_rows).placements));
          return;
        }
        Tensor ref_local = to_local(ref_rows);
        Tensor ref_mask = dtensor_of(ref_rows).mask();
        if (!ref_mask.defined()) fail("eager embedding stashed no mask");
        Tensor ref_out = to_local(region_b(ref_rows));
        if (dtensor_of(ref_rows).mask().defined()) fail("eager redistribute did not release the mask");
        if (!testing::all_close(ref_out, expected)) fail("eager result differs from the single-device embedding");

        for (const auto& [mode_a, mode_b] : mixes) {
          std::string mix = std::string("A ") + (mode_a == Mode::Eager ? "eager" : "compiled") + ", B " +
                            (mode_b == Mode::Eager ? "eager" : "compiled");
          std::optional<CapturedProgram> program_a;
          std::optional<CapturedProgram> program_b;
          for (int round = 0; round < 2; ++round) {
            std::string where = mix + ", round " + std::to_string(round) + ": ";
            Tensor rows;
            if (mode_a == Mode::Eager) {
              rows = region_a(weight_dt, idx_dt);
            } else {
              if (!program_a) program_a.emplace(px::capture(region_a, std::make_tuple(weight_dt, idx_dt)));
              rows = program_a->call<Tensor>(weight_dt, idx_dt);
            }
            if (!is_dtensor(rows) || dtensor_spec(rows).placements != scenario.rows_placements) {
              fail(where + "region A did not give a MaskPartial DTensor");
              return;
            }
            if (!bitwise_equal(to_local(rows), ref_local)) fail(where + "region A's local values differ from eager");
            const Tensor& mask = dtensor_of(rows).mask();
            if (!mask.defined() || !bitwise_equal(mask, ref_mask)) fail(where + "region A's mask differs from eager");
            Tensor out;
            if (mode_b == Mode::Eager) {
              out = region_b(rows);
            } else {
              if (!program_b) program_b.emplace(px::capture(region_b, std::make_tuple(rows)));
              out = program_b->call<Tensor>(rows);
            }
            if (!bitwise_equal(to_local(out), ref_out)) fail(where + "region B's result differs from eager");
            if (dtensor_of(rows).mask().defined()) fail(where + "the mask was not released after region B");
            if (dtensor_spec(out).placements != replicated) fail(where + "region B did not give Replicate");
          }
          if (program_a && program_a->cache().size() != 1) fail(mix + ": region A recompiled");
          if (program_b && program_b->cache().size() != 1) fail(mix + ": region B recompiled");
          if (program_b) {
            // The compiled region reduces through a collective op and releases the mask as a mutation.
            const CapturedGraph& entry = *program_b->cache().front();
            if (ir::print(entry.graph).find("all_reduce") == std::string::npos) fail(mix + ": no all_reduce in B");
            if (entry.mutations.size() != 1)
              fail(mix + ": B records " + std::to_string(entry.mutations.size()) + " mutations");
          }
        }
      },
      dist::LaunchOptions{dist::Backend::Threads});
  return failures;
}

TEST(DTensorSeedScenario, RowShardedEmbeddingOnMesh4EveryMixMatchesEager) {
  auto failures = run_scenario({DeviceMesh({4}), {Shard{0}}, {MaskPartial{10}}});
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
}

TEST(DTensorSeedScenario, RowAndColumnShardedEmbeddingOn2x2EveryMixMatchesEager) {
  auto failures = run_scenario({DeviceMesh({2, 2}), {Shard{0}, Shard{1}}, {MaskPartial{10}, Shard{2}}});
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
}

TEST(DTensorSeedScenario, AReleasedMaskCannotBeReducedTwice) {
  std::mutex mutex;
  std::vector<std::string> messages;
  Tensor weight = testing::random_tensor({8, 2}, DType::Float64, 1);
  Tensor idx = testing::random_ints({3}, 0, 8, 2);
  dist::launch(
      2,
      [&](int, dist::ProcessGroup& world) {
        auto groups = std::make_shared<dist::MeshGroups>(DeviceMesh({2}), world);
        Tensor rows =
            px::embedding(distribute_tensor(weight, groups, {Shard{0}}), distribute_tensor(idx, groups, {Replicate{}}));
        redistribute(rows, {Replicate{}});
        std::string message = testing::error_message([&] { redistribute(rows, {Replicate{}}); });
        std::lock_guard<std::mutex> lock(mutex);
        messages.push_back(message);
      },
      dist::LaunchOptions{dist::Backend::Threads});
  ASSERT_EQ(messages.size(), 2u);
  for (const std::string& message : messages) {
    EXPECT_NE(message.find("mask was already released"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace px
