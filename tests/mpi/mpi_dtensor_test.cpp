// DTensor on the mpi backend under `mpirun -np 4`: every op sample with a sharding rule on
// meshes 4 and 2x2 against its single-device result, forward and VJP, and every pair of
// redistributions (tests/dtensor/dtensor_checks.h, the same checks as the threads tests).
//
// Every rank runs every test, in one fixed order (collectives are called in the same order on
// every rank, so shuffling is off), with EXPECT only; the checks themselves run every case on
// every rank and record failures instead of stopping. Rank 0 prints gtest's report; the other
// ranks print their failures only. mpirun exits non-zero when any rank's tests fail.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dtensor/dtensor_checks.h"
#include "mpi/mpi_test_main.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dist/process_group.h"
#include "support/op_samples.h"

namespace px::testing {
namespace {

using dist::DeviceMesh;

std::string first_failures(const std::vector<std::string>& failures, size_t count = 10) {
  std::string text;
  for (size_t i = 0; i < failures.size() && i < count; ++i) text += "\n  " + failures[i];
  return text;
}

// At most 32 combinations per sample on the 2-D mesh keep the run near half a minute on 2 cores.
void check_every_sample(const DeviceMesh& mesh) {
  OpCheckOptions options;
  options.seed = 20240601;
  options.max_combos = mesh.ndim() == 1 ? 64 : 32;
  // scripts/test.sh --sanitize sets a smaller limit, as for the threads suite.
  if (const char* limit = std::getenv("PARALLAX_DTENSOR_MAX_COMBOS"); limit != nullptr && std::atoi(limit) > 0) {
    options.max_combos = static_cast<size_t>(std::atoi(limit));
  }
  dist::launch(
      4,
      [&](int rank, dist::ProcessGroup& world) {
        auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
        size_t combos = 0, samples = 0, skipped = 0;
        std::vector<std::string> failures;
        auto start = std::chrono::steady_clock::now();
        for (const OpSample& sample : all_op_samples()) {
          OpCheckStats stats;
          std::vector<std::string> found = check_op_sample(sample, groups, options, &stats);
          failures.insert(failures.end(), found.begin(), found.end());
          combos += stats.combos;
          ++samples;
          skipped += stats.no_rule || stats.no_inputs ? 1 : 0;
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (rank == 0) {
          std::printf("[mpi-dtensor] %s: %zu samples (%zu without a rule or an input), %zu combinations, %.1f s\n",
                      mesh.str().c_str(), samples, skipped, combos, seconds);
        }
        EXPECT_TRUE(failures.empty()) << "rank " << rank << ", " << mesh.str() << ": " << failures.size()
                                      << " failures:" << first_failures(failures);
      },
      dist::LaunchOptions{dist::Backend::Mpi});
}

void check_pairs(const DeviceMesh& mesh, const Shape& shape) {
  dist::launch(
      4,
      [&](int rank, dist::ProcessGroup& world) {
        auto groups = std::make_shared<dist::MeshGroups>(mesh, world);
        std::vector<std::string> failures = check_redistribution_pairs(groups, shape);
        EXPECT_TRUE(failures.empty()) << "rank " << rank << ", " << mesh.str() << " " << shape_str(shape) << ": "
                                      << failures.size() << " failures:" << first_failures(failures);
      },
      dist::LaunchOptions{dist::Backend::Mpi});
}

TEST(MpiDTensorOps, EverySampleOnMesh4) { check_every_sample(DeviceMesh({4})); }
TEST(MpiDTensorOps, EverySampleOnMesh2x2) { check_every_sample(DeviceMesh({2, 2})); }

TEST(MpiDTensorRedistribute, EveryPairOnMesh4) {
  check_pairs(DeviceMesh({4}), {8, 4});
  check_pairs(DeviceMesh({4}), {5, 3});
}
TEST(MpiDTensorRedistribute, EveryPairOnMesh2x2) {
  check_pairs(DeviceMesh({2, 2}), {8, 4});
  check_pairs(DeviceMesh({2, 2}), {5, 3});
}

}  // namespace
}  // namespace px::testing

int main(int argc, char** argv) { return px::testing::run_all_tests_under_mpi(argc, argv); }
