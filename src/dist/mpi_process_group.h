#pragma once
// The mpi backend's ProcessGroup: one object per process and group, over an MPI communicator.
//
// Failure: MPI cannot make a peer's pending collective return, so where the threads backend
// raises CommError on every other rank, this backend ends the whole job instead (MPI_Abort,
// after printing the failing rank and why to stderr): the job exits non-zero with the failing
// rank named, and never hangs. Errors that MPI reports on one call (e.g. a message too large
// for the receiving tensor) raise CommError on that rank.
//
// State: none of its own beyond the objects; MPI itself holds the process-wide state (whether it
// is initialized, the communicators). launch() initializes MPI when nobody has, and then (only
// then) finalizes it at exit, so that launch can be called any number of times in a process.
//
// Differences from the threads backend: send is MPI's standard mode (large messages may wait
// for the matching recv to start, so two ranks that both send first must order their calls),
// and the collectives do not check that every rank passed the same dtype and size (that would
// cost a round trip per call); split does check that every rank passed the same list.

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/dist/process_group.h"

namespace px::dist::mpi {

class MpiProcessGroup final : public ProcessGroup {
 public:
  // Owns `comm` (freed in the destructor) unless it is MPI_COMM_WORLD. world_ranks[i] is the
  // MPI_COMM_WORLD rank of rank i of `comm`, for messages.
  MpiProcessGroup(MPI_Comm comm, std::vector<int> world_ranks);
  ~MpiProcessGroup() override;
  MpiProcessGroup(const MpiProcessGroup&) = delete;
  MpiProcessGroup& operator=(const MpiProcessGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void all_reduce(const Tensor& tensor, ReduceOp op) override;
  void all_gather(const Tensor& input, const Tensor& output) override;
  void reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  void all_to_all(const Tensor& input, const Tensor& output) override;
  void broadcast(const Tensor& tensor, int root) override;
  void barrier() override;
  void send(const Tensor& tensor, int destination, int tag) override;
  void recv(const Tensor& tensor, int source, int tag) override;
  std::shared_ptr<ProcessGroup> split(const std::vector<int>& ranks) override;
  [[noreturn]] void abort(const std::string& reason) override;

 private:
  // "all_reduce on rank 1 in the group of world ranks [1, 3]": the start of every error.
  std::string where(std::string_view collective) const;
  // CommError naming the call and MPI's message unless `code` is MPI_SUCCESS.
  void check(int code, const std::string& at) const;
  void check_tag(int tag, const std::string& at) const;

  MPI_Comm comm_;
  std::vector<int> world_ranks_;
  int rank_ = 0;
  int size_ = 0;
  std::string label_;  // "" for the world group, else " in the group of world ranks [...]"
};

// launch() on the mpi backend: this process is one rank of the MPI job (see process_group.h).
void launch_mpi(int world_size, const std::function<void(int rank, ProcessGroup& group)>& fn);

}  // namespace px::dist::mpi
