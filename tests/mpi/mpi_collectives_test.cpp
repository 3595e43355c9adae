// The mpi backend under `mpirun -np 4`: every collective for every dtype against references
// computed locally from every rank's seeded inputs, on the world group and on the rows and
// columns of a 2x2 mesh; send/recv; argument errors.
//
// Every rank runs every test, in one fixed order (collectives are called in the same order on
// every rank, so shuffling is off), with EXPECT only: a rank that returned early from its
// function would leave the others waiting. Rank 0 prints gtest's report; the other ranks print
// their failures only. mpirun exits non-zero when any rank's tests fail.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "dist/collectives_test_util.h"
#include "mpi/mpi_test_main.h"
#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"

namespace px::dist {
namespace {

using px::testing::chunk;
using px::testing::concat;
using px::testing::make_input;
using px::testing::reduce_reference;
using px::testing::same_bytes;

const std::vector<DType> kDTypes = {DType::Float32, DType::Float64, DType::BFloat16, DType::Int64, DType::Bool};
// Empty, one element, fewer elements than ranks, and sizes past MPI's eager limits.
const std::vector<int64_t> kCounts = {0, 1, 3, 1000, 10007};

std::vector<ReduceOp> ops_for(DType dtype) {
  if (dtype == DType::Bool) return {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
  return {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};
}

uint64_t seed_of(int world_rank, uint64_t case_index) {
  return static_cast<uint64_t>(world_rank) * 100003 + case_index;
}

int job_size() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size != nullptr ? std::atoi(size) : 1;
}

// A group and the world rank of each of its ranks, from which every input is known locally.
struct Members {
  ProcessGroup& group;
  std::vector<int> world;  // world[i]: world rank of group rank i
  int me() const { return world[static_cast<size_t>(group.rank())]; }
  int n() const { return group.size(); }
};

// Sum and Avg of floats depend on MPI's order of summation, which need not be rank order:
// those are compared within rounding (bfloat16: one ulp after the float32 sum); everything
// else bit for bit.
::testing::AssertionResult matches(const Tensor& actual, const Tensor& expected, ReduceOp op) {
  const DType dtype = expected.dtype();
  if (!is_floating(dtype) || op == ReduceOp::Max || op == ReduceOp::Min || actual.numel() != expected.numel()) {
    return same_bytes(actual, expected);
  }
  const double tolerance = dtype == DType::Float64 ? 1e-12 : dtype == DType::Float32 ? 1e-5 : 1e-2;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = element_as_double(actual, i);
    const double e = element_as_double(expected, i);
    if (!(std::abs(a - e) <= tolerance * std::max(1.0, std::abs(e)))) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << expected.numel() << ": got " << a << ", expected " << e;
    }
  }
  return ::testing::AssertionSuccess();
}

std::string label(const Members& m, DType dtype, const std::string& what) {
  return what + " on world rank " + std::to_string(m.me()) + " of a group of " + std::to_string(m.n()) + ", " +
         std::string(dtype_name(dtype));
}

void check_all_reduce(const Members& m, DType dtype) {
  uint64_t c = 0;
  for (ReduceOp op : ops_for(dtype)) {
    for (int64_t count : kCounts) {
      ++c;
      Tensor tensor = make_input(dtype, count, seed_of(m.me(), c));
      m.group.all_reduce(tensor, op);
      std::vector<Tensor> inputs;
      for (int w : m.world) inputs.push_back(make_input(dtype, count, seed_of(w, c)));
      EXPECT_TRUE(matches(tensor, reduce_reference(inputs, op), op))
          << label(m, dtype, "all_reduce " + reduce_op_name(op) + " of " + std::to_string(count));
    }
  }
}

void check_reduce_scatter(const Members& m, DType dtype) {
  const int n = m.n();
  const int r = m.group.rank();
  uint64_t c = 1000;
  for (ReduceOp op : ops_for(dtype)) {
    for (int64_t count : kCounts) {
      ++c;
      Tensor input = make_input(dtype, n * count, seed_of(m.me(), c));
      Tensor output = Tensor::empty({count}, dtype);
      m.group.reduce_scatter(input, output, op);
      // In place: the output is this rank's chunk of the input.
      Tensor shared = make_input(dtype, n * count, seed_of(m.me(), c));
      Tensor own_chunk = shared.narrow(0, r * count, count);
      m.group.reduce_scatter(shared, own_chunk, op);
      std::vector<Tensor> inputs;
      for (int w : m.world) inputs.push_back(make_input(dtype, n * count, seed_of(w, c)));
      const Tensor expected = chunk(reduce_reference(inputs, op), r, count);
      const std::string what = "reduce_scatter " + reduce_op_name(op) + " of " + std::to_string(count);
      EXPECT_TRUE(matches(output, expected, op)) << label(m, dtype, what);
      EXPECT_TRUE(matches(own_chunk.contiguous(), expected, op)) << label(m, dtype, "in place " + what);
    }
  }
}

void check_all_gather(const Members& m, DType dtype) {
  const int n = m.n();
  const int r = m.group.rank();
  uint64_t c = 2000;
  for (int64_t count : kCounts) {
    ++c;
    Tensor output = Tensor::empty({n * count}, dtype);
    m.group.all_gather(make_input(dtype, count, seed_of(m.me(), c)), output);
    // In place: the input is this rank's chunk of the output.
    Tensor in_place = concat({Tensor::zeros({r * count}, dtype), make_input(dtype, count, seed_of(m.me(), c)),
                              Tensor::zeros({(n - r - 1) * count}, dtype)});
    Tensor own_chunk = in_place.narrow(0, r * count, count);
    m.group.all_gather(own_chunk, in_place);
    std::vector<Tensor> parts;
    for (int w : m.world) parts.push_back(make_input(dtype, count, seed_of(w, c)));
    const Tensor expected = concat(parts);
    EXPECT_TRUE(same_bytes(output, expected)) << label(m, dtype, "all_gather of " + std::to_string(count));
    EXPECT_TRUE(same_bytes(in_place, expected)) << label(m, dtype, "in place all_gather of " + std::to_string(count));
  }
}

void check_all_to_all(const Members& m, DType dtype) {
  const int n = m.n();
  const int r = m.group.rank();
  uint64_t c = 3000;
  for (int64_t count : kCounts) {
    ++c;
    Tensor output = Tensor::empty({n * count}, dtype);
    m.group.all_to_all(make_input(dtype, n * count, seed_of(m.me(), c)), output);
    std::vector<Tensor> parts;  // chunk r of every rank's input, in rank order
    for (int w : m.world) parts.push_back(chunk(make_input(dtype, n * count, seed_of(w, c)), r, count));
    EXPECT_TRUE(same_bytes(output, concat(parts))) << label(m, dtype, "all_to_all of " + std::to_string(count));
  }
}

void check_broadcast(const Members& m, DType dtype) {
  uint64_t c = 4000;
  for (int root = 0; root < m.n(); ++root) {
    for (int64_t count : kCounts) {
      ++c;
      Tensor tensor = make_input(dtype, count, seed_of(m.me(), c));
      m.group.broadcast(tensor, root);
      const Tensor expected = make_input(dtype, count, seed_of(m.world[static_cast<size_t>(root)], c));
      EXPECT_TRUE(same_bytes(tensor, expected))
          << label(m, dtype, "broadcast from " + std::to_string(root) + " of " + std::to_string(count));
    }
  }
}

void check_every_collective(const Members& m) {
  for (DType dtype : kDTypes) {
    check_all_reduce(m, dtype);
    check_reduce_scatter(m, dtype);
    check_all_gather(m, dtype);
    check_all_to_all(m, dtype);
    check_broadcast(m, dtype);
    m.group.barrier();
  }
}

std::vector<int> iota(int n) {
  std::vector<int> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

// The ValueError's message contains `part`.
template <class Fn>
void expect_value_error(Fn&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no ValueError; expected one containing \"" << part << "\"";
  } catch (const ValueError& error) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

TEST(MpiLaunch, TheWorldGroupIsTheMpiJob) {
  const int size = job_size();
  for (int world_size : {0, size}) {  // twice: a second launch finds MPI initialized
    launch(world_size, [&](int rank, ProcessGroup& group) {
      EXPECT_EQ(group.backend(), "mpi");
      EXPECT_EQ(group.size(), size);
      EXPECT_EQ(group.rank(), rank);
      EXPECT_EQ(rank, std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")));
    });
  }
  expect_value_error(
      [&] { launch(size + 1, [](int, ProcessGroup&) {}); },
      "launch: world_size is " + std::to_string(size + 1) + " but the MPI job has " + std::to_string(size) + " ranks");
  EXPECT_EQ(resolve_backend(Backend::Auto), Backend::Mpi);
}

TEST(MpiCollectives, EveryCollectiveOnTheWorld) {
  launch(0, [](int, ProcessGroup& group) { check_every_collective({group, iota(group.size())}); });
}

// The rows {0, 1}, {2, 3} and the columns {0, 2}, {1, 3} of a 2x2 mesh.
TEST(MpiCollectives, EveryCollectiveOnTheRowsAndColumnsOf2x2) {
  ASSERT_EQ(job_size(), 4) << "run under mpirun -np 4";
  launch(0, [](int rank, ProcessGroup& group) {
    const std::vector<std::vector<int>> rows = {{0, 1}, {2, 3}}, columns = {{0, 2}, {1, 3}};
    std::shared_ptr<ProcessGroup> row, column;
    std::vector<int> row_ranks, column_ranks;
    for (const auto& ranks : rows) {
      if (auto sub = group.split(ranks)) row = sub, row_ranks = ranks;
    }
    for (const auto& ranks : columns) {
      if (auto sub = group.split(ranks)) column = sub, column_ranks = ranks;
    }
    EXPECT_TRUE(row && column);
    if (!row || !column) throw ValueError("split gave no row or column");  // ends the job, not a hang
    EXPECT_EQ(row->rank(), rank % 2);
    EXPECT_EQ(column->rank(), rank / 2);
    EXPECT_EQ(row->size(), 2);
    check_every_collective({*row, row_ranks});
    check_every_collective({*column, column_ranks});
    // A reversed list numbers the ranks in its order.
    auto reversed = group.split({3, 2, 1, 0});
    EXPECT_EQ(reversed->rank(), 3 - rank);
    check_all_reduce({*reversed, {3, 2, 1, 0}}, DType::Float64);
    check_all_gather({*reversed, {3, 2, 1, 0}}, DType::Int64);
  });
}

TEST(MpiPointToPoint, RingInEveryDTypeAndTagsMatchOutOfOrder) {
  launch(0, [](int rank, ProcessGroup& group) {
    const int n = group.size();
    if (n < 2) return;
    const int next = (rank + 1) % n, previous = (rank + n - 1) % n;
    uint64_t c = 5000;
    for (DType dtype : kDTypes) {
      for (int64_t count : {int64_t{0}, int64_t{5}, int64_t{100000}}) {
        ++c;
        Tensor received = Tensor::empty({count}, dtype);
        // Even ranks send first, odd ranks receive first: no cycle of blocked sends.
        if (rank % 2 == 0) group.send(make_input(dtype, count, seed_of(rank, c)), next, 7);
        group.recv(received, previous, 7);
        if (rank % 2 == 1) group.send(make_input(dtype, count, seed_of(rank, c)), next, 7);
        EXPECT_TRUE(same_bytes(received, make_input(dtype, count, seed_of(previous, c))))
            << "ring of " << count << " " << dtype_name(dtype) << " on rank " << rank;
      }
    }
    // Small messages with two tags, received in the other order; a recv of the wrong size
    // raises ValueError and leaves the message queued.
    if (rank == 0) {
      group.send(Tensor::from_vector({1.0}, {1}, DType::Float64), 1, 1);
      group.send(Tensor::from_vector({2.0, 3.0}, {2}, DType::Float64), 1, 2);
    } else if (rank == 1) {
      Tensor two = Tensor::empty({2}, DType::Float64), one = Tensor::empty({1}, DType::Float64);
      expect_value_error([&] { group.recv(one, 0, 2); }, "recv on rank 1: the message from rank 0 with tag 2 holds 16");
      group.recv(two, 0, 2);
      group.recv(one, 0, 1);
      EXPECT_EQ(two.data<double>()[0], 2.0);
      EXPECT_EQ(two.data<double>()[1], 3.0);
      EXPECT_EQ(one.data<double>()[0], 1.0);
    }
    expect_value_error([&] { group.send(Tensor::zeros({1}, DType::Float32), n, 0); },
                       "send on rank " + std::to_string(rank) + ": destination " + std::to_string(n) +
                           " is out of range for a group of " + std::to_string(n) + " ranks");
    expect_value_error([&] { group.recv(Tensor::zeros({1}, DType::Float32), 0, -1); }, "tag -1 is out of range");
  });
}

TEST(MpiErrors, BadArgumentsRaiseValueErrorOnTheCallingRank) {
  launch(0, [](int rank, ProcessGroup& group) {
    const int n = group.size();
    const std::string r = std::to_string(rank);
    expect_value_error([&] { group.all_gather(Tensor::zeros({2}), Tensor::zeros({2 * n + 1})); },
                       "all_gather on rank " + r + ": the output has " + std::to_string(2 * n + 1) + " elements");
    expect_value_error([&] { group.reduce_scatter(Tensor::zeros({n + 1}), Tensor::zeros({1}), ReduceOp::Sum); },
                       "reduce_scatter on rank " + r + ": the input has " + std::to_string(n + 1) + " elements");
    expect_value_error([&] { group.all_to_all(Tensor::zeros({n + 1}), Tensor::zeros({n + 1})); },
                       "all_to_all on rank " + r);
    expect_value_error([&] { group.all_reduce(Tensor::zeros({3}, DType::Bool), ReduceOp::Avg); },
                       "all_reduce on rank " + r + ": avg is not defined on bool");
    expect_value_error(
        [&] {
          group.all_reduce(Tensor::zeros({4, 4}).transpose(0, 1), ReduceOp::Sum);
        },
        "all_reduce on rank " + r + ": the tensor must be a dense contiguous tensor");
    expect_value_error([&] { group.all_gather(Tensor::zeros({1}, DType::Int64), Tensor::zeros({n})); },
                       "all_gather on rank " + r + ": the input is i64 but the output is f32");
    expect_value_error([&] { group.broadcast(Tensor::zeros({1}), n); },
                       "broadcast on rank " + r + ": root " + std::to_string(n) + " is out of range");
    expect_value_error([&] { group.split({}); }, "split on rank " + r + ": the list of ranks is empty");
    expect_value_error([&] { group.split({0, 0}); }, "split on rank " + r + ": rank 0 appears twice in [0, 0]");
    expect_value_error([&] { group.split({n}); }, "split on rank " + r + ": rank " + std::to_string(n));
    if (n >= 2) {
      // Different lists on different ranks: every rank raises, none hangs.
      expect_value_error([&] { group.split({rank == 1 ? 1 : 0}); },
                         "split: rank 0 and rank 1 passed different lists of ranks");
    }
    // The group still works after all that.
    Tensor one = Tensor::from_vector({1.0}, {1}, DType::Float64);
    group.all_reduce(one, ReduceOp::Sum);
    EXPECT_EQ(one.data<double>()[0], static_cast<double>(n));
    if (n == 4) {
      auto pair = group.split({1, 3});
      if (rank == 1 || rank == 3) {
        expect_value_error([&] { pair->broadcast(Tensor::zeros({1}), 2); },
                           "broadcast on rank " + std::to_string(rank / 2) +
                               " in the group of world ranks [1, 3]: root 2 is out of range");
      } else {
        EXPECT_EQ(pair, nullptr);
      }
    }
  });
}

}  // namespace
}  // namespace px::dist

int main(int argc, char** argv) { return px::testing::run_all_tests_under_mpi(argc, argv); }
