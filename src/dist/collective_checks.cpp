#include "dist/collective_checks.h"

#include <functional>

#include "parallax/core/error.h"

namespace px::dist::threads {
namespace {

// The buffer whose size every rank must agree on, as named in messages.
std::string_view counted_role(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
      return "input";
    case CollectiveKind::ReduceScatter:
      return "output";
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
    case CollectiveKind::Barrier:
    case CollectiveKind::Split:
    case CollectiveKind::Send:
    case CollectiveKind::Recv:
      return "tensor";
  }
  return "tensor";
}

bool is_reduction(CollectiveKind kind) {
  return kind == CollectiveKind::AllReduce || kind == CollectiveKind::ReduceScatter;
}

// The bytes of one rank's buffer; empty ranges overlap nothing.
struct ByteRange {
  const std::byte* begin;
  const std::byte* end;
};

bool intersect(ByteRange a, ByteRange b) {
  std::less<const std::byte*> before;  // a total order, also across allocations
  return before(a.begin, b.end) && before(b.begin, a.end) && before(a.begin, a.end) && before(b.begin, b.end);
}

ByteRange input_range(const Slot& slot, int size) {
  const int64_t per_rank = slot.count * dtype_size(slot.dtype);
  return {slot.input, slot.input + (slot.kind == CollectiveKind::ReduceScatter ? size * per_rank : per_rank)};
}

ByteRange output_range(const Slot& slot, int size) {
  const int64_t per_rank = slot.count * dtype_size(slot.dtype);
  return {slot.output, slot.output + (slot.kind == CollectiveKind::AllGather ? size * per_rank : per_rank)};
}

// Two ranks whose buffers overlap where one of them writes: with threads for ranks, one
// tensor captured by reference is the same tensor on every rank.
std::string shared_buffer_problem(const std::vector<Slot>& slots, const std::string& name,
                                  const std::string& group_label) {
  const int size = static_cast<int>(slots.size());
  for (int r = 0; r < size; ++r) {
    for (int s = r + 1; s < size; ++s) {
      const Slot& a = slots[static_cast<size_t>(r)];
      const Slot& b = slots[static_cast<size_t>(s)];
      if (intersect(output_range(a, size), input_range(b, size)) ||
          intersect(output_range(a, size), output_range(b, size)) ||
          intersect(input_range(a, size), output_range(b, size))) {
        return name + group_label + ": rank " + std::to_string(r) + " and rank " + std::to_string(s) +
               " pass overlapping buffers (every rank needs its own tensors; a tensor that every rank's function "
               "captures by reference is one tensor for all ranks)";
      }
    }
  }
  return "";
}

}  // namespace

void check_buffer(const Tensor& tensor, const std::string& where, std::string_view role) {
  std::string got;
  if (!tensor.defined()) {
    got = "an undefined tensor";
  } else if (!tensor.is_dense()) {
    got = std::string(tensor.is_meta()    ? "a meta"
                      : tensor.is_proxy() ? "a traced"
                                          : "a subclass") +
          " tensor " + tensor.meta_info().str();
  } else if (!tensor.is_contiguous()) {
    got = "a non-contiguous " + tensor.meta_info().str() + " (call .contiguous() first)";
  } else {
    return;
  }
  throw ValueError(where + ": the " + std::string(role) + " must be a dense contiguous tensor; got " + got);
}

void check_same_dtype(const Tensor& input, const Tensor& output, const std::string& where) {
  if (input.dtype() == output.dtype()) return;
  throw ValueError(where + ": the input is " + std::string(dtype_name(input.dtype())) + " but the output is " +
                   std::string(dtype_name(output.dtype())) + " (they must have the same dtype)");
}

void check_rank(int rank, int size, const std::string& where, std::string_view role) {
  if (rank >= 0 && rank < size) return;
  throw ValueError(where + ": " + std::string(role) + " " + std::to_string(rank) + " is out of range for a group of " +
                   std::to_string(size) + " ranks");
}

std::byte* bytes_of(const Tensor& tensor) { return static_cast<std::byte*>(tensor.raw_data()); }

void check_reduce_op(DType dtype, ReduceOp op, const std::string& where) {
  if (dtype == DType::Bool && op == ReduceOp::Avg) {
    throw ValueError(where + ": avg is not defined on bool (sum or max give \"any\", min gives \"all\")");
  }
}

void check_chunked(const Tensor& whole, std::string_view whole_role, const Tensor& part, std::string_view part_role,
                   int64_t group_size, const std::string& where) {
  if (whole.numel() == group_size * part.numel()) return;
  throw ValueError(where + ": the " + std::string(whole_role) + " has " + std::to_string(whole.numel()) +
                   " elements but must have size() * " + std::string(part_role) +
                   " elements = " + std::to_string(group_size) + " * " + std::to_string(part.numel()) + " = " +
                   std::to_string(group_size * part.numel()));
}

std::string describe_exception(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return false;
  auto begin_a = static_cast<const std::byte*>(a.raw_data());
  auto begin_b = static_cast<const std::byte*>(b.raw_data());
  const std::byte* end_a = begin_a + a.numel() * dtype_size(a.dtype());
  const std::byte* end_b = begin_b + b.numel() * dtype_size(b.dtype());
  return begin_a < end_b && begin_b < end_a;
}

std::string agreement_problem(const std::vector<Slot>& slots, const std::string& group_label) {
  const Slot& first = slots[0];
  const std::string name(collective_name(first.kind));
  const std::string role(counted_role(first.kind));
  for (size_t r = 1; r < slots.size(); ++r) {
    const Slot& other = slots[r];
    const std::string pair = "rank 0 and rank " + std::to_string(r);
    if (other.kind != first.kind) {
      return "collective mismatch" + group_label + ": rank 0 called " + name + " and rank " + std::to_string(r) +
             " called " + std::string(collective_name(other.kind)) +
             " (every rank of a group must call the same collectives in the same order)";
    }
    if (first.kind == CollectiveKind::Barrier || first.kind == CollectiveKind::Split) continue;
    if (other.dtype != first.dtype) {
      return name + group_label + ": the " + role + " is " + std::string(dtype_name(first.dtype)) + " on rank 0 and " +
             std::string(dtype_name(other.dtype)) + " on rank " + std::to_string(r) +
             " (every rank must pass the same dtype)";
    }
    if (other.count != first.count) {
      return name + group_label + ": the " + role + " has " + std::to_string(first.count) + " elements on rank 0 and " +
             std::to_string(other.count) + " on rank " + std::to_string(r) + " (every rank must pass the same size)";
    }
    if (is_reduction(first.kind) && other.op != first.op) {
      return name + group_label + ": " + pair + " passed the ops " + reduce_op_name(first.op) + " and " +
             reduce_op_name(other.op) + " (every rank must pass the same op)";
    }
    if (first.kind == CollectiveKind::Broadcast && other.root != first.root) {
      return name + group_label + ": " + pair + " passed the roots " + std::to_string(first.root) + " and " +
             std::to_string(other.root) + " (every rank must pass the same root)";
    }
  }
  if (first.kind == CollectiveKind::Barrier || first.kind == CollectiveKind::Split) return "";
  return shared_buffer_problem(slots, name, group_label);
}

}  // namespace px::dist::threads
