#pragma once
// The shared state of one threads-backend job: the World (one per launch() call,
// owned by it and by every group made in it) and one GroupState per process group
// (the world group and each split()).
//
// A collective is a rendezvous: every rank writes a Slot describing its buffers,
// arrives, and once all have arrived each rank reads and writes the others'
// buffers directly (its "phase"), then arrives again so that no rank returns while
// another still touches its buffers. Slots are double-buffered by the parity of
// the collective's sequence number, so that a rank may read the slots of round k
// while faster ranks already publish round k + 1.
//
// Failure: a rank that fails (throws out of its function or calls abort()) marks
// the World failed and wakes every waiter of every group; a rank that returns from
// its function marks itself finished, which breaks every group it belongs to. A
// waiter of a broken group throws CommError, but only once no rank of the group is
// still inside a phase, so no rank ever touches a buffer that its owner has
// already released.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "parallax/core/dtype.h"
#include "parallax/core/placement.h"

namespace px::dist::threads {

enum class CollectiveKind : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  Barrier,
  Split,
  Send,
  Recv,
};
std::string_view collective_name(CollectiveKind kind);

class GroupState;

// What a rank publishes on entering a collective. `count` is the element count
// that every rank must agree on (its meaning depends on the collective).
struct Slot {
  CollectiveKind kind = CollectiveKind::Barrier;
  DType dtype = DType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int root = -1;
  int64_t count = 0;
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
  const std::vector<int>* split_ranks = nullptr;
  std::shared_ptr<GroupState> split_candidate;
};

class World {
 public:
  explicit World(int size);
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int size() const { return size_; }
  // Whether waiters may spin before sleeping: only when every rank can have a core.
  bool spin() const { return spin_; }

  // Records the job's first failure and wakes every waiter; later calls change nothing.
  void fail(int rank, const std::string& message, std::exception_ptr error);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Valid once failed() is true (written once, before the flag is set).
  int failed_rank() const { return failed_rank_; }
  const std::string& failure_message() const { return failure_message_; }
  std::exception_ptr failure_error() const { return failure_error_; }

  // A rank whose function returned (or threw): it will never arrive anywhere again.
  void mark_finished(int rank);
  bool finished(int rank) const { return finished_[static_cast<size_t>(rank)].load(std::memory_order_acquire); }

  // Groups to wake on a failure or a finished rank; held weakly (a group dies with its handles).
  void register_group(const std::shared_ptr<GroupState>& group);

 private:
  void wake_all();

  int size_;
  bool spin_;
  std::atomic<bool> failed_{false};
  int failed_rank_ = -1;
  std::string failure_message_;
  std::exception_ptr failure_error_;
  std::unique_ptr<std::atomic<bool>[]> finished_;
  std::mutex mutex_;  // guards the failure record (before failed_ is set) and groups_
  std::vector<std::weak_ptr<GroupState>> groups_;
};

// A buffered point-to-point message.
struct Message {
  DType dtype = DType::Float32;
  int64_t numel = 0;
  std::unique_ptr<std::byte[]> bytes;
};

class GroupState {
 public:
  // `world_ranks[i]` is the world rank of group rank i.
  GroupState(std::shared_ptr<World> world, std::vector<int> world_ranks);
  GroupState(const GroupState&) = delete;
  GroupState& operator=(const GroupState&) = delete;

  World& world() { return *world_; }
  const std::shared_ptr<World>& world_ptr() const { return world_; }
  int size() const { return static_cast<int>(world_ranks_.size()); }
  int world_rank(int group_rank) const { return world_ranks_[static_cast<size_t>(group_rank)]; }
  const std::vector<int>& world_ranks() const { return world_ranks_; }
  bool is_world_group() const;
  // "" for the world group, else " in the group of world ranks [2, 3]": appended to messages.
  std::string group_label() const;

  Slot& slot(uint64_t round, int rank) { return slots_[round & 1][static_cast<size_t>(rank)]; }
  const std::vector<Slot>& slots(uint64_t round) const { return slots_[round & 1]; }

  // Waits until every rank of the group has arrived. `into_phase`: after the rendezvous
  // this rank touches the others' buffers until its next arrive() or leave_phase().
  // Throws CommError naming the failed rank, `what` and this rank if the group breaks first.
  void arrive(int rank, bool into_phase, CollectiveKind what);
  // Ends this rank's phase without a rendezvous (a collective that gives up after its
  // first rendezvous, having touched no buffer).
  void leave_phase(int rank);

  // Point to point: post() never waits; take() waits for a message of (source, rank, tag),
  // checks its dtype and size against the receiving tensor's and removes it.
  void post(int source, int destination, int tag, Message message);
  Message take(int source, int destination, int tag, DType dtype, int64_t numel);

  // Wakes every waiter so that it re-checks the failure and finished flags.
  void wake();

  // Throws CommError if the job has failed (every later collective fails).
  void throw_if_failed(int rank, CollectiveKind what) const;

 private:
  // Why the group can never complete a rendezvous ("" while it can).
  std::string broken_reason() const;
  bool broken() const { return world_->failed() || any_member_finished(); }
  bool any_member_finished() const;
  [[noreturn]] void throw_broken(std::unique_lock<std::mutex>& lock, int rank, CollectiveKind what);
  void clear_phase(int rank);
  bool spin_until_changed(uint64_t generation) const;

  std::shared_ptr<World> world_;
  std::vector<int> world_ranks_;
  std::vector<Slot> slots_[2];

  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<uint64_t> generation_{0};  // completed rendezvous
  int arrived_ = 0;
  int sleepers_ = 0;
  int in_phase_ = 0;                                                    // ranks that may be touching others' buffers
  std::vector<char> phase_flags_;                                       // which ones
  std::map<std::tuple<int, int, int>, std::deque<Message>> mailboxes_;  // (source, destination, tag)
};

// "[0, 2, 3]"
std::string ranks_str(const std::vector<int>& ranks);

// "rank 3 failed (<message>); all_reduce on rank 1 cannot complete"
std::string comm_error_message(const std::string& reason, CollectiveKind what, int world_rank);

}  // namespace px::dist::threads
