#include "dist/mpi_process_group.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "dist/collective_checks.h"
#include "dist/threads_world.h"
#include "parallax/core/error.h"

namespace px::dist::mpi {
namespace {

using threads::bytes_of;
using threads::check_buffer;
using threads::check_chunked;
using threads::check_rank;
using threads::check_reduce_op;
using threads::check_same_dtype;
using threads::overlaps;

// The wire type of each dtype. bfloat16 travels as its 16 bits; reductions stage it in float32.
MPI_Datatype wire_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::Bool:
      return MPI_UINT8_T;
    case DType::BFloat16:
      return MPI_UINT16_T;
  }
  PX_ASSERT(false && "unknown dtype");
  return MPI_BYTE;
}

// Bool: Sum and Max are "or", Min is "and" (as process_group.h); Avg is Sum, divided afterwards.
MPI_Op mpi_op(DType dtype, ReduceOp op) {
  if (dtype == DType::Bool) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return MPI_SUM;
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

// MPI counts are ints.
int to_count(int64_t count, const std::string& where, std::string_view role) {
  if (count <= INT_MAX) return static_cast<int>(count);
  throw ValueError(where + ": the " + std::string(role) + " has " + std::to_string(count) +
                   " elements, more than the mpi backend passes in one call (" + std::to_string(INT_MAX) + ")");
}

// Avg after a Sum: the threads backend's arithmetic (int64 truncates toward zero).
void divide_in_place(std::byte* data, DType dtype, int64_t count, int divisor) {
  switch (dtype) {
    case DType::Float32: {
      auto* v = reinterpret_cast<float*>(data);
      for (int64_t i = 0; i < count; ++i) v[i] /= static_cast<float>(divisor);
      return;
    }
    case DType::Float64: {
      auto* v = reinterpret_cast<double*>(data);
      for (int64_t i = 0; i < count; ++i) v[i] /= static_cast<double>(divisor);
      return;
    }
    case DType::Int64: {
      auto* v = reinterpret_cast<int64_t*>(data);
      for (int64_t i = 0; i < count; ++i) v[i] /= divisor;
      return;
    }
    case DType::Bool:
    case DType::BFloat16:
      break;
  }
  PX_ASSERT(false && "divide_in_place: bool has no avg and bfloat16 divides while staged");
}

std::vector<float> widen(const Tensor& tensor) {
  const auto* source = tensor.data<BFloat16>();
  std::vector<float> out(static_cast<size_t>(tensor.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(source[i]);
  return out;
}

// Rounds once, after the whole reduction (and the division of an Avg), as the threads backend.
void narrow_into(const std::vector<float>& staged, ReduceOp op, int size, const Tensor& target) {
  auto* out = target.data<BFloat16>();
  for (size_t i = 0; i < staged.size(); ++i) {
    out[i] = BFloat16(op == ReduceOp::Avg ? staged[i] / static_cast<float>(size) : staged[i]);
  }
}

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

// A 64-bit digest of a rank list, for checking that every rank passed the same one.
int64_t digest(const std::vector<int>& ranks) {
  uint64_t hash = 1469598103934665603ull;
  for (int r : ranks) {
    hash ^= static_cast<uint32_t>(r);
    hash *= 1099511628211ull;
  }
  return static_cast<int64_t>(hash);
}

}  // namespace

MpiProcessGroup::MpiProcessGroup(MPI_Comm comm, std::vector<int> world_ranks)
    : comm_(comm), world_ranks_(std::move(world_ranks)) {
  // Errors come back as codes (raised as CommError) instead of ending the job.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  PX_ASSERT(static_cast<int>(world_ranks_.size()) == size_);
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  // As the threads backend: the world group goes unnamed in messages, sub-groups are named.
  if (size_ != world_size || !std::is_sorted(world_ranks_.begin(), world_ranks_.end()))
    label_ = " in the group of world ranks " + threads::ranks_str(world_ranks_);
}

MpiProcessGroup::~MpiProcessGroup() {
  // A group may outlive MPI (kept past the end of a program that launch() finalizes at exit).
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::string MpiProcessGroup::where(std::string_view collective) const {
  return std::string(collective) + " on rank " + std::to_string(rank_) + label_;
}

void MpiProcessGroup::check(int code, const std::string& at) const {
  if (code == MPI_SUCCESS) return;
  throw CommError(at + ": MPI failed: " + error_string(code));
}

void MpiProcessGroup::check_tag(int tag, const std::string& at) const {
  void* value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found);
  const int upper = found ? *static_cast<int*>(value) : 32767;
  if (tag >= 0 && tag <= upper) return;
  throw ValueError(at + ": tag " + std::to_string(tag) + " is out of range [0, " + std::to_string(upper) + "]");
}

void MpiProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op) {
  const std::string at = where("all_reduce");
  check_buffer(tensor, at, "tensor");
  check_reduce_op(tensor.dtype(), op, at);
  const int count = to_count(tensor.numel(), at, "tensor");
  const DType dtype = tensor.dtype();
  if (dtype == DType::BFloat16) {
    std::vector<float> staged = widen(tensor);
    check(MPI_Allreduce(MPI_IN_PLACE, staged.data(), count, MPI_FLOAT, mpi_op(dtype, op), comm_), at);
    narrow_into(staged, op, size_, tensor);
    return;
  }
  check(MPI_Allreduce(MPI_IN_PLACE, tensor.raw_data(), count, wire_type(dtype), mpi_op(dtype, op), comm_), at);
  if (op == ReduceOp::Avg) divide_in_place(bytes_of(tensor), dtype, tensor.numel(), size_);
}

void MpiProcessGroup::all_gather(const Tensor& input, const Tensor& output) {
  const std::string at = where("all_gather");
  check_buffer(input, at, "input");
  check_buffer(output, at, "output");
  check_same_dtype(input, output, at);
  const int64_t n = size_;
  check_chunked(output, "output", input, "input", n, at);
  const int count = to_count(input.numel(), at, "input");
  to_count(output.numel(), at, "output");
  const int64_t nbytes = input.numel() * dtype_size(input.dtype());
  const bool in_place = overlaps(input, output);
  if (in_place && bytes_of(input) != bytes_of(output) + rank_ * nbytes) {
    throw ValueError(at + ": the input overlaps the output; in place, the input must be exactly chunk " +
                     std::to_string(rank_) + " of the output");
  }
  const MPI_Datatype type = wire_type(input.dtype());
  check(MPI_Allgather(in_place ? MPI_IN_PLACE : input.raw_data(), count, type, output.raw_data(), count, type, comm_),
        at);
}

void MpiProcessGroup::reduce_scatter(const Tensor& input, const Tensor& output, ReduceOp op) {
  const std::string at = where("reduce_scatter");
  check_buffer(input, at, "input");
  check_buffer(output, at, "output");
  check_same_dtype(input, output, at);
  check_reduce_op(input.dtype(), op, at);
  const int64_t n = size_;
  check_chunked(input, "input", output, "output", n, at);
  to_count(input.numel(), at, "input");
  const int count = to_count(output.numel(), at, "output");
  const DType dtype = input.dtype();
  const int64_t nbytes = output.numel() * dtype_size(dtype);
  const bool in_place = overlaps(input, output);
  if (in_place && bytes_of(output) != bytes_of(input) + rank_ * nbytes) {
    throw ValueError(at + ": the output overlaps the input; in place, the output must be exactly chunk " +
                     std::to_string(rank_) + " of the input");
  }
  const MPI_Op reduce = mpi_op(dtype, op);
  if (dtype == DType::BFloat16) {
    std::vector<float> staged = widen(input);
    std::vector<float> result(static_cast<size_t>(count));
    check(MPI_Reduce_scatter_block(staged.data(), result.data(), count, MPI_FLOAT, reduce, comm_), at);
    narrow_into(result, op, size_, output);
    return;
  }
  // MPI forbids aliased buffers; MPI_IN_PLACE would want the result at the start of the input.
  Tensor source = in_place ? input.clone() : input;
  check(MPI_Reduce_scatter_block(source.raw_data(), output.raw_data(), count, wire_type(dtype), reduce, comm_), at);
  if (op == ReduceOp::Avg) divide_in_place(bytes_of(output), dtype, output.numel(), size_);
}

void MpiProcessGroup::all_to_all(const Tensor& input, const Tensor& output) {
  const std::string at = where("all_to_all");
  check_buffer(input, at, "input");
  check_buffer(output, at, "output");
  check_same_dtype(input, output, at);
  const int n = size_;
  if (input.numel() != output.numel() || input.numel() % n != 0) {
    throw ValueError(at + ": the input has " + std::to_string(input.numel()) + " elements and the output " +
                     std::to_string(output.numel()) +
                     "; both must have the same number, a multiple of size() = " + std::to_string(n));
  }
  if (overlaps(input, output)) {
    throw ValueError(at + ": the input and the output overlap; all_to_all needs separate buffers");
  }
  to_count(input.numel(), at, "input");
  const int chunk = static_cast<int>(input.numel() / n);
  const MPI_Datatype type = wire_type(input.dtype());
  check(MPI_Alltoall(input.raw_data(), chunk, type, output.raw_data(), chunk, type, comm_), at);
}

void MpiProcessGroup::broadcast(const Tensor& tensor, int root) {
  const std::string at = where("broadcast");
  check_buffer(tensor, at, "tensor");
  check_rank(root, size_, at, "root");
  const int count = to_count(tensor.numel(), at, "tensor");
  check(MPI_Bcast(tensor.raw_data(), count, wire_type(tensor.dtype()), root, comm_), at);
}

void MpiProcessGroup::barrier() { check(MPI_Barrier(comm_), where("barrier")); }

void MpiProcessGroup::send(const Tensor& tensor, int destination, int tag) {
  const std::string at = where("send");
  check_buffer(tensor, at, "tensor");
  check_rank(destination, size_, at, "destination");
  check_tag(tag, at);
  const int count = to_count(tensor.numel(), at, "tensor");
  check(MPI_Send(tensor.raw_data(), count, wire_type(tensor.dtype()), destination, tag, comm_), at);
}

void MpiProcessGroup::recv(const Tensor& tensor, int source, int tag) {
  const std::string at = where("recv");
  check_buffer(tensor, at, "tensor");
  check_rank(source, size_, at, "source");
  check_tag(tag, at);
  const int count = to_count(tensor.numel(), at, "tensor");
  const MPI_Datatype type = wire_type(tensor.dtype());
  // Probe first, so that a message of the wrong size stays queued, as in the threads backend.
  MPI_Status status;
  check(MPI_Probe(source, tag, comm_, &status), at);
  int bytes = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &bytes), at);
  const int64_t expected = tensor.numel() * dtype_size(tensor.dtype());
  if (bytes != expected) {
    throw ValueError(at + ": the message from rank " + std::to_string(source) + " with tag " + std::to_string(tag) +
                     " holds " + std::to_string(bytes) + " bytes but the tensor has " + std::to_string(tensor.numel()) +
                     " elements of " + std::string(dtype_name(tensor.dtype())) + " = " + std::to_string(expected) +
                     " bytes (the message stays queued)");
  }
  check(MPI_Recv(tensor.raw_data(), count, type, source, tag, comm_, MPI_STATUS_IGNORE), at);
}

std::shared_ptr<ProcessGroup> MpiProcessGroup::split(const std::vector<int>& ranks) {
  const std::string at = where("split");
  if (ranks.empty()) throw ValueError(at + ": the list of ranks is empty");
  std::vector<char> seen(static_cast<size_t>(size_), 0);
  for (int r : ranks) {
    check_rank(r, size_, at, "rank");
    if (seen[static_cast<size_t>(r)]++) {
      throw ValueError(at + ": rank " + std::to_string(r) + " appears twice in " + threads::ranks_str(ranks));
    }
  }
  // Every rank sees every rank's digest, so a disagreement raises ValueError everywhere alike.
  const int64_t mine[2] = {static_cast<int64_t>(ranks.size()), digest(ranks)};
  std::vector<int64_t> all(2 * static_cast<size_t>(size_));
  check(MPI_Allgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm_), at);
  for (int r = 1; r < size_; ++r) {
    if (all[2 * r] != all[0] || all[2 * r + 1] != all[1]) {
      throw ValueError("split" + label_ + ": rank 0 and rank " + std::to_string(r) +
                       " passed different lists of ranks (every rank of the group must pass the same list)");
    }
  }
  const auto position = std::find(ranks.begin(), ranks.end(), rank_);
  const bool member = position != ranks.end();
  MPI_Comm child = MPI_COMM_NULL;
  check(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, member ? static_cast<int>(position - ranks.begin()) : 0,
                       &child),
        at);
  if (!member) return nullptr;
  std::vector<int> world_ranks;
  world_ranks.reserve(ranks.size());
  for (int r : ranks) world_ranks.push_back(world_ranks_[static_cast<size_t>(r)]);
  return std::make_shared<MpiProcessGroup>(child, std::move(world_ranks));
}

void MpiProcessGroup::abort(const std::string& reason) {
  std::fflush(stdout);
  std::fprintf(stderr, "rank %d called abort(): %s\n", world_ranks_[static_cast<size_t>(rank_)], reason.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);  // MPI_Abort does not return; this is for an MPI that does
}

}  // namespace px::dist::mpi
