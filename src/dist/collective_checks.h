#pragma once
// Argument checks of the collectives: the local ones, shared by the threads and mpi
// backends (made before a rank enters a collective, so a bad call never leaves its peers
// half-way), and the threads backend's agreement check that every rank makes on every
// rank's published slot.

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "dist/threads_world.h"
#include "parallax/core/placement.h"
#include "parallax/core/tensor.h"

namespace px::dist::threads {

// ValueError "<where>: the <role> must be a dense contiguous tensor; got ..." unless it is one.
void check_buffer(const Tensor& tensor, const std::string& where, std::string_view role);
// ValueError unless input and output have one dtype.
void check_same_dtype(const Tensor& input, const Tensor& output, const std::string& where);
// ValueError "<where>: <role> <rank> is out of range for a group of <size> ranks".
void check_rank(int rank, int size, const std::string& where, std::string_view role);
// Whether the elements of a and b share any byte.
bool overlaps(const Tensor& a, const Tensor& b);
// The first byte of a dense tensor's elements.
std::byte* bytes_of(const Tensor& tensor);
// ValueError for Avg on bool (the one reduction a dtype does not define).
void check_reduce_op(DType dtype, ReduceOp op, const std::string& where);
// ValueError unless `whole` has `group_size` times the elements of `part` (all_gather's output,
// reduce_scatter's input): "<where>: the <whole_role> has W elements but must have size() * ...".
void check_chunked(const Tensor& whole, std::string_view whole_role, const Tensor& part, std::string_view part_role,
                   int64_t group_size, const std::string& where);
// The what() of an exception (for messages that name a failed rank).
std::string describe_exception(const std::exception_ptr& error);

// "" when every slot agrees with slot 0 (same collective, dtype, size, op and root), else the
// message of the ValueError that every rank raises. `group_label` as GroupState::group_label().
std::string agreement_problem(const std::vector<Slot>& slots, const std::string& group_label);

}  // namespace px::dist::threads
