#pragma once
// The main() of a gtest binary run under mpirun: every rank runs every test in one fixed order
// (collectives must be called in the same order everywhere, so shuffling is off); rank 0 prints
// gtest's report and the other ranks print only their failures, each tagged with its rank.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace px::testing {

class MpiFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit MpiFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

// This process's rank in the MPI job (0 when not started by mpirun).
inline int mpi_job_rank() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return rank != nullptr ? std::atoi(rank) : 0;
}

inline int run_all_tests_under_mpi(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // scripts/test.sh sets GTEST_SHUFFLE=1; ranks must not each pick their own order.
  GTEST_FLAG_SET(shuffle, false);
  GTEST_FLAG_SET(repeat, 1);
  if (const int rank = mpi_job_rank(); rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new MpiFailurePrinter(rank));
  }
  return RUN_ALL_TESTS();
}

}  // namespace px::testing
