#pragma once
// The threads backend's ProcessGroup: one object per rank and group, all ranks of a
// group sharing one GroupState (see threads_world.h for the protocol).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/threads_world.h"
#include "parallax/dist/process_group.h"

namespace px::dist::threads {

class ThreadsProcessGroup final : public ProcessGroup {
 public:
  ThreadsProcessGroup(std::shared_ptr<GroupState> state, int rank);

  int rank() const override { return rank_; }
  int size() const override { return state_->size(); }
  std::string backend() const override { return "threads"; }

  void all_reduce(const Tensor& tensor, ReduceOp op) override;
  void all_gather(const Tensor& input, const Tensor& output) override;
  void reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) override;
  void all_to_all(const Tensor& input, const Tensor& output) override;
  void broadcast(const Tensor& tensor, int root) override;
  void barrier() override;
  void send(const Tensor& tensor, int destination, int tag) override;
  void recv(const Tensor& tensor, int source, int tag) override;
  std::shared_ptr<ProcessGroup> split(const std::vector<int>& ranks) override;
  void abort(const std::string& reason) override;

 private:
  // Publishes `mine`, waits for every rank and checks that they agree (ValueError on every
  // rank otherwise). Returns this round's slots; with `into_phase` the caller then owns a
  // phase that finish() ends.
  const std::vector<Slot>& enter(Slot mine, bool into_phase);
  void finish(CollectiveKind kind);
  // "all_reduce on rank 1": the start of every error this rank raises.
  std::string where(CollectiveKind kind) const;

  std::shared_ptr<GroupState> state_;
  int rank_;
  uint64_t round_ = 0;  // collectives entered so far; picks the slot buffer
};

}  // namespace px::dist::threads
