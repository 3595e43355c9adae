#pragma once
// Process groups: the ranks of a parallel job and the collectives between them.
//
// Every collective works on contiguous dense tensors of any dtype (float32,
// float64, bfloat16, int64, bool) and is called by every rank of the group in
// the same order, as in MPI and NCCL. Outputs are written in place into the
// storage of the tensors given (a Tensor is a handle, so `const Tensor&` outputs
// are still written). Shapes: a collective checks that each rank's buffers have
// the element counts it needs and raises ValueError naming the collective, the
// rank and the sizes otherwise.
//
// Failure: if any rank of a job fails (throws out of its function, or calls
// abort()), every collective pending on the other ranks, and every later one,
// raises CommError naming the failed rank and the collective: never a hang. On the mpi
// backend, where a peer's pending collective cannot be made to return, the failing rank ends
// the whole job instead (MPI_Abort: the job exits non-zero, the failing rank named on stderr).
//
// Backends: `threads` (the embedded default: N ranks as threads of this
// process, collectives through shared memory) and `mpi` (Open MPI, one rank per
// process). launch() picks one at run time.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/tensor.h"

namespace px::dist {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;  // this rank, in [0, size())
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "threads" or "mpi"

  // tensor := op over every rank's tensor (same numel everywhere). Avg divides a Sum by size();
  // on int64 Avg truncates toward zero; on bool Sum and Max are "or", Min is "and", Avg is an error.
  virtual void all_reduce(const Tensor& tensor, ReduceOp op) = 0;
  // output (size() * input.numel() elements) := every rank's input, concatenated in rank order.
  virtual void all_gather(const Tensor& input, const Tensor& output) = 0;
  // input has size() * output.numel() elements; output := op over ranks of chunk rank() of their inputs.
  virtual void reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) = 0;
  // input and output have size() * n elements: chunk j of this rank's input goes to rank j, and chunk i
  // of the output comes from rank i.
  virtual void all_to_all(const Tensor& input, const Tensor& output) = 0;
  // tensor := root's tensor.
  virtual void broadcast(const Tensor& tensor, int root) = 0;
  virtual void barrier() = 0;
  // Point to point; a send matches the recv of the same (source, destination, tag).
  virtual void send(const Tensor& tensor, int destination, int tag = 0) = 0;
  virtual void recv(const Tensor& tensor, int source, int tag = 0) = 0;

  // A group of some ranks of this one, numbered in the order given. Every rank of this group
  // calls it with the same list (as torch.distributed.new_group); ranks outside the list get
  // nullptr. ValueError for duplicates or ranks out of range.
  virtual std::shared_ptr<ProcessGroup> split(const std::vector<int>& ranks) = 0;

  // Marks the job as failed by this rank (what a rank that throws does implicitly): every
  // pending and later collective of every rank raises CommError naming this rank.
  virtual void abort(const std::string& reason) = 0;
};

enum class Backend : uint8_t {
  Auto,     // MPI when the process was started by mpirun (OMPI_COMM_WORLD_SIZE is set), else threads;
            // the environment variable PARALLAX_BACKEND=threads|mpi overrides
  Threads,  // world_size threads in this process
  Mpi,      // this process is one rank of the MPI job
};

std::string backend_name(Backend backend);

// The backend launch() runs for `requested`: Threads or Mpi as asked, and for Auto what the
// environment says (PARALLAX_BACKEND first, then OMPI_COMM_WORLD_SIZE). ValueError for a
// PARALLAX_BACKEND that is neither "threads" nor "mpi". Never returns Auto.
Backend resolve_backend(Backend requested);

struct LaunchOptions {
  Backend backend = Backend::Auto;
  // Threads of each rank's kernel pool (core/parallel.h), the rank's own thread included; 0
  // applies the core-sharing rule: available_cores() / (ranks on this machine), at least 1.
  int threads_per_rank = 0;
};

// Runs fn(rank, group) on every rank and returns when all have finished. Every rank runs inside a
// ParallelScope of its own ThreadPool (options.threads_per_rank threads), and OpenBLAS runs
// single-threaded until launch returns (its previous thread count is restored then). Threads backend:
// world_size threads; MPI backend: this process's rank (world_size must equal the MPI job's
// size, or be 0 for "whatever mpirun started"). If any rank throws, every other rank's pending
// and later collectives fail with CommError, and launch rethrows the first error (by rank
// order among the ranks that failed first). MPI backend: a rank whose fn throws prints
// "parallax: rank R failed: <what>" and ends the job (see Failure above). launch initializes
// MPI if nobody has (and then finalizes it at exit), so it can be called again in a process.
void launch(int world_size, const std::function<void(int rank, ProcessGroup& group)>& fn, LaunchOptions options = {});

}  // namespace px::dist
