#include "dist/threads_world.h"

#include <chrono>
#include <thread>
#include <utility>

#include "parallax/core/error.h"

namespace px::dist::threads {
namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Long enough to cover a peer that is a few microseconds behind (a futex sleep and wake
// costs more than that), short enough not to matter when it is much later.
constexpr auto kSpinLimit = std::chrono::microseconds(50);
constexpr int kBusyIterations = 64;

}  // namespace

std::string ranks_str(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::AllGather:
      return "all_gather";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::AllToAll:
      return "all_to_all";
    case CollectiveKind::Broadcast:
      return "broadcast";
    case CollectiveKind::Barrier:
      return "barrier";
    case CollectiveKind::Split:
      return "split";
    case CollectiveKind::Send:
      return "send";
    case CollectiveKind::Recv:
      return "recv";
  }
  return "collective";
}

std::string comm_error_message(const std::string& reason, CollectiveKind what, int world_rank) {
  return reason + "; " + std::string(collective_name(what)) + " on rank " + std::to_string(world_rank) +
         " cannot complete";
}

// --- World ---

World::World(int size)
    : size_(size),
      spin_(std::thread::hardware_concurrency() >= static_cast<unsigned>(size)),
      finished_(new std::atomic<bool>[static_cast<size_t>(size)]) {
  for (int r = 0; r < size; ++r) finished_[static_cast<size_t>(r)].store(false);
}

void World::fail(int rank, const std::string& message, std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failed_rank_ = rank;
    failure_message_ = message;
    failure_error_ = std::move(error);
    failed_.store(true, std::memory_order_release);
  }
  wake_all();
}

void World::mark_finished(int rank) {
  finished_[static_cast<size_t>(rank)].store(true, std::memory_order_release);
  wake_all();
}

void World::register_group(const std::shared_ptr<GroupState>& group) {
  std::lock_guard lock(mutex_);
  std::erase_if(groups_, [](const std::weak_ptr<GroupState>& g) { return g.expired(); });
  groups_.push_back(group);
}

void World::wake_all() {
  std::vector<std::shared_ptr<GroupState>> live;
  {
    std::lock_guard lock(mutex_);
    for (const auto& g : groups_) {
      if (auto group = g.lock()) live.push_back(std::move(group));
    }
  }
  for (const auto& group : live) group->wake();
}

// --- GroupState ---

GroupState::GroupState(std::shared_ptr<World> world, std::vector<int> world_ranks)
    : world_(std::move(world)), world_ranks_(std::move(world_ranks)), phase_flags_(world_ranks_.size(), 0) {
  slots_[0].resize(world_ranks_.size());
  slots_[1].resize(world_ranks_.size());
}

bool GroupState::is_world_group() const {
  if (size() != world_->size()) return false;
  for (int r = 0; r < size(); ++r) {
    if (world_rank(r) != r) return false;
  }
  return true;
}

std::string GroupState::group_label() const {
  return is_world_group() ? "" : " in the group of world ranks " + ranks_str(world_ranks_);
}

bool GroupState::any_member_finished() const {
  for (int w : world_ranks_) {
    if (world_->finished(w)) return true;
  }
  return false;
}

std::string GroupState::broken_reason() const {
  if (world_->failed()) {
    return "rank " + std::to_string(world_->failed_rank()) + " failed (" + world_->failure_message() + ")";
  }
  for (int w : world_ranks_) {
    if (world_->finished(w)) {
      return "rank " + std::to_string(w) +
             " returned from its function first (every rank of a group must call the same collectives in the "
             "same order)";
    }
  }
  return "the group is broken";
}

void GroupState::throw_if_failed(int rank, CollectiveKind what) const {
  if (!world_->failed()) return;
  throw CommError(comm_error_message(broken_reason(), what, world_rank(rank)));
}

void GroupState::clear_phase(int rank) {
  char& flag = phase_flags_[static_cast<size_t>(rank)];
  if (!flag) return;
  flag = 0;
  if (--in_phase_ == 0 && sleepers_ > 0) changed_.notify_all();
}

void GroupState::throw_broken(std::unique_lock<std::mutex>& lock, int rank, CollectiveKind what) {
  clear_phase(rank);
  // The caller's buffers may be released as soon as this throws: first let every rank
  // that is still reading or writing them finish (each one is at most one phase away).
  ++sleepers_;
  changed_.wait(lock, [&] { return in_phase_ == 0; });
  --sleepers_;
  throw CommError(comm_error_message(broken_reason(), what, world_rank(rank)));
}

bool GroupState::spin_until_changed(uint64_t generation) const {
  auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (generation_.load(std::memory_order_acquire) != generation) return true;
    // After a short busy wait, yield: a peer that the scheduler put on this same core
    // (threads start that way) can then run instead of waiting for the spin to end.
    if (i < kBusyIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
    if (i % 64 == 0 && (broken() || std::chrono::steady_clock::now() - start > kSpinLimit)) return false;
  }
}

void GroupState::arrive(int rank, bool into_phase, CollectiveKind what) {
  std::unique_lock lock(mutex_);
  clear_phase(rank);
  if (broken()) throw_broken(lock, rank, what);
  if (into_phase) {
    phase_flags_[static_cast<size_t>(rank)] = 1;
    ++in_phase_;
  }
  uint64_t generation = generation_.load(std::memory_order_relaxed);
  if (++arrived_ == size()) {
    arrived_ = 0;
    generation_.store(generation + 1, std::memory_order_release);
    if (sleepers_ > 0) changed_.notify_all();
    return;
  }
  if (world_->spin()) {
    lock.unlock();
    if (spin_until_changed(generation)) return;
    lock.lock();
  }
  ++sleepers_;
  changed_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != generation || broken(); });
  --sleepers_;
  // A rendezvous that completed is kept even if the job failed meanwhile: the next one fails.
  if (generation_.load(std::memory_order_acquire) != generation) return;
  throw_broken(lock, rank, what);
}

void GroupState::leave_phase(int rank) {
  std::lock_guard lock(mutex_);
  clear_phase(rank);
}

void GroupState::post(int source, int destination, int tag, Message message) {
  std::lock_guard lock(mutex_);
  throw_if_failed(source, CollectiveKind::Send);
  mailboxes_[{source, destination, tag}].push_back(std::move(message));
  if (sleepers_ > 0) changed_.notify_all();
}

Message GroupState::take(int source, int destination, int tag, DType dtype, int64_t numel) {
  std::unique_lock lock(mutex_);
  std::tuple<int, int, int> key{source, destination, tag};
  for (;;) {
    throw_if_failed(destination, CollectiveKind::Recv);
    auto it = mailboxes_.find(key);
    if (it != mailboxes_.end() && !it->second.empty()) {
      Message& front = it->second.front();
      if (front.dtype != dtype || front.numel != numel) {
        throw ValueError("recv on rank " + std::to_string(destination) + group_label() + ": the message from rank " +
                         std::to_string(source) + " with tag " + std::to_string(tag) + " holds " +
                         std::to_string(front.numel) + " elements of " + std::string(dtype_name(front.dtype)) +
                         " but the tensor has " + std::to_string(numel) + " elements of " +
                         std::string(dtype_name(dtype)) + " (the message stays queued)");
      }
      Message out = std::move(front);
      it->second.pop_front();
      if (it->second.empty()) mailboxes_.erase(it);
      return out;
    }
    if (world_->finished(world_rank(source))) {
      throw CommError("rank " + std::to_string(world_rank(source)) +
                      " returned from its function without sending a message with tag " + std::to_string(tag) +
                      "; recv on rank " + std::to_string(world_rank(destination)) + " cannot complete");
    }
    ++sleepers_;
    changed_.wait(lock, [&] {
      auto found = mailboxes_.find(key);
      return (found != mailboxes_.end() && !found->second.empty()) || world_->failed() ||
             world_->finished(world_rank(source));
    });
    --sleepers_;
  }
}

void GroupState::wake() {
  std::lock_guard lock(mutex_);
  changed_.notify_all();
}

}  // namespace px::dist::threads
