// launch() on the mpi backend. The only process-wide state is MPI's own: whether MPI is
// initialized (MPI_Initialized) and, when launch() initialized it, the MPI_Finalize that it
// registered to run at exit.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <numeric>
#include <string>
#include <vector>

#include "dist/collective_checks.h"
#include "dist/mpi_process_group.h"
#include "parallax/core/error.h"

namespace px::dist::mpi {
namespace {

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// Initializes MPI unless the program (or an earlier launch) did. Only the rank's own thread
// calls MPI (FUNNELED): collectives run on the thread that called launch().
void ensure_initialized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    throw CommError("launch: MPI is already finalized in this process; the mpi backend cannot start again");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    throw CommError("launch: MPI_Init_thread failed");
  }
  // Whoever initializes MPI finalizes it: here, at exit, so that later launches still find it.
  std::atexit(finalize_at_exit);
}

}  // namespace

void launch_mpi(int world_size, const std::function<void(int rank, ProcessGroup& group)>& fn) {
  if (world_size < 0) {
    throw ValueError("launch: world_size must be 0 (whatever mpirun started) or the MPI job's size, got " +
                     std::to_string(world_size));
  }
  ensure_initialized();
  int size = 0;
  int rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (world_size != 0 && world_size != size) {
    throw ValueError("launch: world_size is " + std::to_string(world_size) + " but the MPI job has " +
                     std::to_string(size) + " ranks (pass 0 to take the job's size, or start mpirun with -np " +
                     std::to_string(world_size) + ")");
  }
  // A communicator of its own keeps the job's messages apart from any the program sends itself.
  MPI_Comm comm = MPI_COMM_NULL;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) throw CommError("launch: MPI_Comm_dup failed");
  std::vector<int> world_ranks(static_cast<size_t>(size));
  std::iota(world_ranks.begin(), world_ranks.end(), 0);
  MpiProcessGroup group(comm, std::move(world_ranks));
  try {
    fn(rank, group);
    // launch returns when every rank has finished, as on the threads backend.
    group.barrier();
  } catch (...) {
    // The other ranks may be waiting in a collective that this rank will never enter: ending
    // the job is the only way not to hang them.
    std::fflush(stdout);
    std::fprintf(stderr, "parallax: rank %d failed: %s\n", rank,
                 threads::describe_exception(std::current_exception()).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::_Exit(2);
  }
}

}  // namespace px::dist::mpi
