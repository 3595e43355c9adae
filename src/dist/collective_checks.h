#pragma once
// Argument checks of the threads backend's collectives: the local ones (made before a
// rank enters a collective, so a bad call never leaves its peers half-way) and the
// agreement check that every rank makes on every rank's published slot.

#include <string>
#include <string_view>
#include <vector>

#include "dist/threads_world.h"
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

// "" when every slot agrees with slot 0 (same collective, dtype, size, op and root), else the
// message of the ValueError that every rank raises. `group_label` as GroupState::group_label().
std::string agreement_problem(const std::vector<Slot>& slots, const std::string& group_label);

}  // namespace px::dist::threads
