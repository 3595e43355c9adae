// A job in which one rank fails while the others wait in a collective: the job must end
// (non-zero, the failing rank named on stderr) instead of hanging. Run under mpirun -np 4 by
// tests/mpi/expect_failure.cmake.
//
//   mpi_rank_failure throw    rank 2 throws out of its function
//   mpi_rank_failure abort    rank 1 calls ProcessGroup::abort()

#include <cstdio>
#include <string>

#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "throw";
  px::dist::launch(0, [&](int rank, px::dist::ProcessGroup& group) {
    group.barrier();
    if (mode == "throw" && rank == 2) throw px::ValueError("rank 2 gives up on purpose");
    if (mode == "abort" && rank == 1) group.abort("rank 1 gives up on purpose");
    px::Tensor tensor = px::Tensor::zeros({16});
    group.all_reduce(tensor, px::ReduceOp::Sum);  // the other ranks wait here for the failed one
  });
  std::puts("mpi_rank_failure: every rank finished, which it must not");
  return 0;
}
