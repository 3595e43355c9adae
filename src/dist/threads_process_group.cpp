#include "dist/threads_process_group.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "dist/collective_checks.h"
#include "dist/reduce_kernels.h"
#include "parallax/core/error.h"

namespace px::dist::threads {
namespace {

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};

// The part of `count` elements that `rank` of `size` works on: equal parts rounded up to
// whole cache lines, so that no two ranks write into one line.
Range chunk_of(int64_t count, int size, int rank, int64_t element_size) {
  const int64_t unit = std::max<int64_t>(1, 64 / element_size);
  const int64_t per_rank = (count + size - 1) / size;
  const int64_t part = (per_rank + unit - 1) / unit * unit;
  const int64_t begin = std::min(count, part * rank);
  return {begin, std::min(count, begin + part)};
}

// A slot describing buffers (op and root keep their defaults unless set afterwards).
Slot buffer_slot(CollectiveKind kind, DType dtype, int64_t count, const std::byte* input, std::byte* output,
                 ReduceOp op = ReduceOp::Sum, int root = -1) {
  Slot slot;
  slot.kind = kind;
  slot.dtype = dtype;
  slot.op = op;
  slot.root = root;
  slot.count = count;
  slot.input = input;
  slot.output = output;
  return slot;
}

}  // namespace

ThreadsProcessGroup::ThreadsProcessGroup(std::shared_ptr<GroupState> state, int rank)
    : state_(std::move(state)), rank_(rank) {}

std::string ThreadsProcessGroup::where(CollectiveKind kind) const {
  return std::string(collective_name(kind)) + " on rank " + std::to_string(rank_) + state_->group_label();
}

const std::vector<Slot>& ThreadsProcessGroup::enter(Slot mine, bool into_phase) {
  const uint64_t round = round_++;
  const CollectiveKind kind = mine.kind;
  state_->slot(round, rank_) = std::move(mine);
  state_->arrive(rank_, into_phase, kind);
  const std::vector<Slot>& slots = state_->slots(round);
  std::string problem = agreement_problem(slots, state_->group_label());
  if (!problem.empty()) {
    // Every rank reads the same slots, so every rank gives up here, before touching any buffer.
    if (into_phase) state_->leave_phase(rank_);
    throw ValueError(problem);
  }
  return slots;
}

void ThreadsProcessGroup::finish(CollectiveKind kind) { state_->arrive(rank_, false, kind); }

// Rank r reduces chunk r of every rank's buffer and writes the result into chunk r of every
// rank's buffer: one pass, each byte read once and written once, the work split evenly.
void ThreadsProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op) {
  const CollectiveKind kind = CollectiveKind::AllReduce;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  check_buffer(tensor, at, "tensor");
  check_reduce_op(tensor.dtype(), op, at);

  const int n = size();
  std::vector<const std::byte*> sources(static_cast<size_t>(n));
  std::vector<std::byte*> targets(static_cast<size_t>(n));
  std::byte* data = bytes_of(tensor);
  const auto& slots = enter(buffer_slot(kind, tensor.dtype(), tensor.numel(), data, data, op), true);
  const int64_t element_size = dtype_size(tensor.dtype());
  const Range mine = chunk_of(tensor.numel(), n, rank_, element_size);
  const int64_t offset = mine.begin * element_size;
  for (int k = 0; k < n; ++k) {
    sources[static_cast<size_t>(k)] = slots[static_cast<size_t>(k)].input + offset;
    // This rank's own buffer first: the kernel writes it and copies it on to the others.
    targets[static_cast<size_t>(k)] = slots[static_cast<size_t>((rank_ + k) % n)].output + offset;
  }
  reduce_into(tensor.dtype(), op, sources.data(), n, targets.data(), n, mine.end - mine.begin);
  finish(kind);
}

// Each rank writes its input into its chunk of every rank's output.
void ThreadsProcessGroup::all_gather(const Tensor& input, const Tensor& output) {
  const CollectiveKind kind = CollectiveKind::AllGather;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  check_buffer(input, at, "input");
  check_buffer(output, at, "output");
  check_same_dtype(input, output, at);
  const int n = size();
  check_chunked(output, "output", input, "input", n, at);
  const int64_t nbytes = input.numel() * dtype_size(input.dtype());
  const std::byte* source = bytes_of(input);
  if (overlaps(input, output) && source != bytes_of(output) + rank_ * nbytes) {
    throw ValueError(at + ": the input overlaps the output; in place, the input must be exactly chunk " +
                     std::to_string(rank_) + " of the output");
  }
  const auto& slots = enter(buffer_slot(kind, input.dtype(), input.numel(), source, bytes_of(output)), true);
  for (int j = 0; j < n; ++j) {
    const int k = (rank_ + j) % n;
    copy_bytes(slots[static_cast<size_t>(k)].output + rank_ * nbytes, source, nbytes);
  }
  finish(kind);
}

// Rank r reduces chunk r of every rank's input into its own output.
void ThreadsProcessGroup::reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) {
  const CollectiveKind kind = CollectiveKind::ReduceScatter;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  check_buffer(input, at, "input");
  check_buffer(output, at, "output");
  check_same_dtype(input, output, at);
  check_reduce_op(input.dtype(), op, at);
  const int n = size();
  check_chunked(input, "input", output, "output", n, at);
  const int64_t nbytes = output.numel() * dtype_size(output.dtype());
  std::byte* target = bytes_of(output);
  if (overlaps(input, output) && target != bytes_of(input) + rank_ * nbytes) {
    throw ValueError(at + ": the output overlaps the input; in place, the output must be exactly chunk " +
                     std::to_string(rank_) + " of the input");
  }
  std::vector<const std::byte*> sources(static_cast<size_t>(n));
  const auto& slots = enter(buffer_slot(kind, input.dtype(), output.numel(), bytes_of(input), target, op), true);
  for (int k = 0; k < n; ++k) sources[static_cast<size_t>(k)] = slots[static_cast<size_t>(k)].input + rank_ * nbytes;
  reduce_into(output.dtype(), op, sources.data(), n, &target, 1, output.numel());
  finish(kind);
}

// Each rank pulls its chunk of every rank's input.
void ThreadsProcessGroup::all_to_all(const Tensor& input, const Tensor& output) {
  const CollectiveKind kind = CollectiveKind::AllToAll;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  check_buffer(input, at, "input");
  check_buffer(output, at, "output");
  check_same_dtype(input, output, at);
  const int n = size();
  if (input.numel() != output.numel() || input.numel() % n != 0) {
    throw ValueError(at + ": the input has " + std::to_string(input.numel()) + " elements and the output " +
                     std::to_string(output.numel()) +
                     "; both must have the same number, a multiple of size() = " + std::to_string(n));
  }
  if (overlaps(input, output)) {
    throw ValueError(at + ": the input and the output overlap; all_to_all needs separate buffers");
  }
  const auto& slots = enter(buffer_slot(kind, input.dtype(), input.numel(), bytes_of(input), bytes_of(output)), true);
  const int64_t chunk = input.numel() / n * dtype_size(input.dtype());
  std::byte* target = bytes_of(output);
  for (int j = 0; j < n; ++j) {
    const int k = (rank_ + j) % n;
    copy_bytes(target + k * chunk, slots[static_cast<size_t>(k)].input + rank_ * chunk, chunk);
  }
  finish(kind);
}

// Rank r copies chunk r of the root's buffer into every other rank's buffer, so that the
// root works too.
void ThreadsProcessGroup::broadcast(const Tensor& tensor, int root) {
  const CollectiveKind kind = CollectiveKind::Broadcast;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  check_buffer(tensor, at, "tensor");
  const int n = size();
  check_rank(root, n, at, "root");
  std::byte* data = bytes_of(tensor);
  const auto& slots = enter(buffer_slot(kind, tensor.dtype(), tensor.numel(), data, data, ReduceOp::Sum, root), true);
  const int64_t element_size = dtype_size(tensor.dtype());
  const Range mine = chunk_of(tensor.numel(), n, rank_, element_size);
  const int64_t offset = mine.begin * element_size;
  const std::byte* source = slots[static_cast<size_t>(root)].input + offset;
  for (int j = 0; j < n; ++j) {
    const int k = (rank_ + j) % n;
    if (k == root) continue;
    copy_bytes(slots[static_cast<size_t>(k)].output + offset, source, (mine.end - mine.begin) * element_size);
  }
  finish(kind);
}

void ThreadsProcessGroup::barrier() {
  state_->throw_if_failed(rank_, CollectiveKind::Barrier);
  Slot slot;
  slot.kind = CollectiveKind::Barrier;
  enter(std::move(slot), false);
}

void ThreadsProcessGroup::send(const Tensor& tensor, int destination, int tag) {
  const CollectiveKind kind = CollectiveKind::Send;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  check_buffer(tensor, at, "tensor");
  check_rank(destination, size(), at, "destination");
  const int64_t nbytes = tensor.numel() * dtype_size(tensor.dtype());
  Message message{.dtype = tensor.dtype(),
                  .numel = tensor.numel(),
                  .bytes = std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(nbytes))};
  copy_bytes(message.bytes.get(), bytes_of(tensor), nbytes);
  state_->post(rank_, destination, tag, std::move(message));
}

void ThreadsProcessGroup::recv(const Tensor& tensor, int source, int tag) {
  const CollectiveKind kind = CollectiveKind::Recv;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  check_buffer(tensor, at, "tensor");
  check_rank(source, size(), at, "source");
  Message message = state_->take(source, rank_, tag, tensor.dtype(), tensor.numel());
  copy_bytes(bytes_of(tensor), message.bytes.get(), tensor.numel() * dtype_size(tensor.dtype()));
}

std::shared_ptr<ProcessGroup> ThreadsProcessGroup::split(const std::vector<int>& ranks) {
  const CollectiveKind kind = CollectiveKind::Split;
  state_->throw_if_failed(rank_, kind);
  const std::string at = where(kind);
  const int n = size();
  if (ranks.empty()) throw ValueError(at + ": the list of ranks is empty");
  std::vector<char> seen(static_cast<size_t>(n), 0);
  for (int r : ranks) {
    check_rank(r, n, at, "rank");
    if (seen[static_cast<size_t>(r)]++) {
      throw ValueError(at + ": rank " + std::to_string(r) + " appears twice in " + ranks_str(ranks));
    }
  }
  // Rank 0's new group state becomes everyone's; the others make none.
  std::shared_ptr<GroupState> candidate;
  if (rank_ == 0) {
    std::vector<int> world_ranks;
    for (int r : ranks) world_ranks.push_back(state_->world_rank(r));
    candidate = std::make_shared<GroupState>(state_->world_ptr(), std::move(world_ranks));
    state_->world().register_group(candidate);
  }
  Slot slot;
  slot.kind = kind;
  slot.split_ranks = &ranks;
  slot.split_candidate = std::move(candidate);
  const auto& slots = enter(std::move(slot), true);
  std::string problem;
  for (int r = 1; r < n && problem.empty(); ++r) {
    const std::vector<int>& other = *slots[static_cast<size_t>(r)].split_ranks;
    if (other != *slots[0].split_ranks) {
      problem = "split" + state_->group_label() + ": rank 0 passed " + ranks_str(*slots[0].split_ranks) + " and rank " +
                std::to_string(r) + " passed " + ranks_str(other) +
                " (every rank of the group must pass the same list)";
    }
  }
  std::shared_ptr<GroupState> chosen = slots[0].split_candidate;
  // The lists live in the callers' frames: nobody returns before everyone has compared them.
  finish(kind);
  if (!problem.empty()) throw ValueError(problem);
  auto position = std::find(ranks.begin(), ranks.end(), rank_);
  if (position == ranks.end()) return nullptr;
  return std::make_shared<ThreadsProcessGroup>(std::move(chosen), static_cast<int>(position - ranks.begin()));
}

void ThreadsProcessGroup::abort(const std::string& reason) {
  const int world_rank = state_->world_rank(rank_);
  state_->world().fail(
      world_rank, "called abort(): " + reason,
      std::make_exception_ptr(CommError("rank " + std::to_string(world_rank) + " called abort(): " + reason)));
}

}  // namespace px::dist::threads
