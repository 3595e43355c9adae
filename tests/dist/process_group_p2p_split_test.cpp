// Point-to-point messages and sub-groups of the threads backend.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dist/collectives_test_util.h"
#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"
#include "support/test_util.h"

namespace px::dist {
namespace {

using px::testing::launch_with_watchdog;
using px::testing::make_input;
using px::testing::reduce_reference;
using px::testing::same_bytes;

Tensor int_tensor(std::vector<double> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector(values, {n}, DType::Int64);
}

// --- send / recv ---

TEST(SendRecv, RingPassesEveryDtype) {
  for (int n : {2, 3, 4}) {
    for (DType dtype : kAllDTypes) {
      std::vector<Tensor> received(static_cast<size_t>(n));
      launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
        // Sends never wait for their receive, so every rank may send first.
        group.send(make_input(dtype, 37, static_cast<uint64_t>(rank)), (rank + 1) % n);
        Tensor in = Tensor::empty({37}, dtype);
        group.recv(in, (rank + n - 1) % n);
        received[static_cast<size_t>(rank)] = in;
      });
      for (int r = 0; r < n; ++r) {
        EXPECT_TRUE(
            same_bytes(received[static_cast<size_t>(r)], make_input(dtype, 37, static_cast<uint64_t>((r + n - 1) % n))))
            << n << " ranks, " << dtype_name(dtype) << ", rank " << r;
      }
    }
  }
}

TEST(SendRecv, TagsSelectMessagesAndEachTagIsFifo) {
  std::vector<int64_t> order;
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    if (rank == 0) {
      for (int i = 0; i < 3; ++i) group.send(int_tensor({static_cast<double>(10 + i)}), 1, /*tag=*/7);
      group.send(int_tensor({99}), 1, /*tag=*/3);
      return;
    }
    Tensor in = Tensor::empty({1}, DType::Int64);
    group.recv(in, 0, 3);  // sent last, received first: tags do not block each other
    order.push_back(in.item<int64_t>());
    for (int i = 0; i < 3; ++i) {
      group.recv(in, 0, 7);
      order.push_back(in.item<int64_t>());
    }
  });
  EXPECT_EQ(order, (std::vector<int64_t>{99, 10, 11, 12}));
}

TEST(SendRecv, SourcesAreKeptApart) {
  std::vector<int64_t> got;
  launch_with_watchdog(3, [&](int rank, ProcessGroup& group) {
    if (rank != 2) {
      group.send(int_tensor({static_cast<double>(rank + 100)}), 2);
      return;
    }
    Tensor in = Tensor::empty({1}, DType::Int64);
    group.recv(in, 1);
    got.push_back(in.item<int64_t>());
    group.recv(in, 0);
    got.push_back(in.item<int64_t>());
  });
  EXPECT_EQ(got, (std::vector<int64_t>{101, 100}));
}

TEST(SendRecv, ARankMaySendToItself) {
  launch_with_watchdog(1, [&](int, ProcessGroup& group) {
    group.send(int_tensor({5, 6}), 0, 1);
    Tensor in = Tensor::empty({2}, DType::Int64);
    group.recv(in, 0, 1);
    EXPECT_EQ(in.to_vector<int64_t>(), (std::vector<int64_t>{5, 6}));
  });
}

TEST(SendRecv, ASizeMismatchIsAValueErrorAndTheMessageStaysQueued) {
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    if (rank == 0) {
      group.send(int_tensor({1, 2, 3}), 1, 4);
      return;
    }
    Tensor wrong = Tensor::empty({2}, DType::Int64);
    px::testing::expect_value_error([&] { group.recv(wrong, 0, 4); },
                                    "recv on rank 1: the message from rank 0 with tag 4 holds 3 elements of i64 but "
                                    "the tensor has 2 elements of i64 (the message stays queued)");
    Tensor wrong_dtype = Tensor::empty({3}, DType::Float64);
    EXPECT_THROW(group.recv(wrong_dtype, 0, 4), ValueError);
    Tensor right = Tensor::empty({3}, DType::Int64);
    group.recv(right, 0, 4);
    EXPECT_EQ(right.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  });
}

TEST(SendRecv, PeersOutOfRangeAreValueErrors) {
  launch_with_watchdog(2, [&](int, ProcessGroup& group) {
    px::testing::expect_value_error(
        [&] { group.send(int_tensor({1}), 2); },
        "send on rank " + std::to_string(group.rank()) + ": destination 2 is out of range for a group of 2 ranks");
    Tensor in = Tensor::empty({1}, DType::Int64);
    px::testing::expect_value_error([&] { group.recv(in, -1); }, "recv on rank " + std::to_string(group.rank()) +
                                                                     ": source -1 is out of range for a group of 2 "
                                                                     "ranks");
  });
}

TEST(SendRecv, RecvFromARankThatReturnedIsACommError) {
  std::string message;
  try {
    launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
      if (rank == 0) return;  // never sends
      Tensor in = Tensor::empty({1}, DType::Int64);
      group.recv(in, 0, 9);
    });
  } catch (const CommError& error) {
    message = error.what();
  }
  EXPECT_EQ(message,
            "CommError: rank 0 returned from its function without sending a message with tag 9; recv on rank 1 "
            "cannot complete");
}

// --- split ---

// Every rank calls split() with every list, in the same order; returns this rank's group of each.
std::vector<std::shared_ptr<ProcessGroup>> split_all(ProcessGroup& group, const std::vector<std::vector<int>>& lists) {
  std::vector<std::shared_ptr<ProcessGroup>> mine;
  for (const auto& list : lists) {
    if (auto sub = group.split(list)) mine.push_back(std::move(sub));
  }
  return mine;
}

// A rows x cols grid of ranks (rank = row * cols + col): all_reduce along rows, then along
// columns, equals the all_reduce over all ranks; each sub-group numbers its ranks in list order.
void check_grid(int rows, int cols) {
  const int n = rows * cols;
  std::vector<std::vector<int>> row_lists(static_cast<size_t>(rows)), col_lists(static_cast<size_t>(cols));
  for (int r = 0; r < n; ++r) {
    row_lists[static_cast<size_t>(r / cols)].push_back(r);
    col_lists[static_cast<size_t>(r % cols)].push_back(r);
  }
  std::vector<Tensor> row_sums(static_cast<size_t>(n)), totals(static_cast<size_t>(n));
  launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
    auto row = split_all(group, row_lists);
    auto col = split_all(group, col_lists);
    ASSERT_EQ(row.size(), 1u);
    ASSERT_EQ(col.size(), 1u);
    EXPECT_EQ(row[0]->size(), cols);
    EXPECT_EQ(row[0]->rank(), rank % cols);
    EXPECT_EQ(col[0]->size(), rows);
    EXPECT_EQ(col[0]->rank(), rank / cols);
    Tensor tensor = make_input(DType::Float64, 33, static_cast<uint64_t>(rank));
    row[0]->all_reduce(tensor, ReduceOp::Sum);
    row_sums[static_cast<size_t>(rank)] = tensor.clone();
    col[0]->all_reduce(tensor, ReduceOp::Sum);
    totals[static_cast<size_t>(rank)] = tensor;
  });
  for (int r = 0; r < n; ++r) {
    std::vector<Tensor> row_inputs;
    for (int member : row_lists[static_cast<size_t>(r / cols)]) {
      row_inputs.push_back(make_input(DType::Float64, 33, static_cast<uint64_t>(member)));
    }
    EXPECT_TRUE(same_bytes(row_sums[static_cast<size_t>(r)], reduce_reference(row_inputs, ReduceOp::Sum)))
        << rows << "x" << cols << ", rank " << r;
    // Sums in a different association than a flat sum: compare with a tolerance.
    std::vector<Tensor> all_inputs;
    for (int member = 0; member < n; ++member) {
      all_inputs.push_back(make_input(DType::Float64, 33, static_cast<uint64_t>(member)));
    }
    EXPECT_TRUE(px::testing::all_close(totals[static_cast<size_t>(r)], reduce_reference(all_inputs, ReduceOp::Sum),
                                       1e-12, 1e-12));
  }
}

TEST(Split, RowsAndColumnsOfA2x2Grid) { check_grid(2, 2); }
TEST(Split, RowsAndColumnsOfA2x4Grid) { check_grid(2, 4); }

TEST(Split, RanksAreNumberedInListOrderAndOutsidersGetNull) {
  std::vector<int> sub_ranks(4, -2);
  launch_with_watchdog(4, [&](int rank, ProcessGroup& group) {
    auto sub = group.split({3, 1});
    if (rank == 0 || rank == 2) {
      EXPECT_EQ(sub, nullptr);
      return;
    }
    ASSERT_NE(sub, nullptr);
    sub_ranks[static_cast<size_t>(rank)] = sub->rank();
    EXPECT_EQ(sub->size(), 2);
    EXPECT_EQ(sub->backend(), "threads");
    // Broadcast from sub-group rank 0 = world rank 3.
    Tensor value = int_tensor({static_cast<double>(rank)});
    sub->broadcast(value, 0);
    EXPECT_EQ(value.item<int64_t>(), 3);
    sub->send(int_tensor({static_cast<double>(rank * 10)}), 1 - sub->rank());
    Tensor in = Tensor::empty({1}, DType::Int64);
    sub->recv(in, 1 - sub->rank());
    EXPECT_EQ(in.item<int64_t>(), rank == 3 ? 10 : 30);
  });
  EXPECT_EQ(sub_ranks, (std::vector<int>{-2, 1, -2, 0}));
}

TEST(Split, SubGroupsSplitFurtherAndRunIndependently) {
  std::vector<int64_t> results(8, -1);
  launch_with_watchdog(8, [&](int rank, ProcessGroup& group) {
    auto halves = split_all(group, {{0, 1, 2, 3}, {4, 5, 6, 7}});
    ASSERT_EQ(halves.size(), 1u);
    auto quarters = split_all(*halves[0], {{0, 1}, {2, 3}});
    ASSERT_EQ(quarters.size(), 1u);
    EXPECT_EQ(quarters[0]->size(), 2);
    Tensor value = int_tensor({static_cast<double>(rank)});
    quarters[0]->all_reduce(value, ReduceOp::Sum);
    results[static_cast<size_t>(rank)] = value.item<int64_t>();
    group.barrier();
  });
  EXPECT_EQ(results, (std::vector<int64_t>{1, 1, 5, 5, 9, 9, 13, 13}));
}

TEST(Split, ListsThatDisagreeAreAValueErrorOnEveryRank) {
  std::atomic<int> value_errors{0};
  std::vector<int64_t> after(3, -1);
  launch_with_watchdog(3, [&](int rank, ProcessGroup& group) {
    const std::vector<int> list = rank == 2 ? std::vector<int>{0, 2} : std::vector<int>{0, 1};
    try {
      group.split(list);
    } catch (const ValueError& error) {
      EXPECT_EQ(std::string(error.what()),
                "ValueError: split: rank 0 passed [0, 1] and rank 2 passed [0, 2] (every rank of the group must "
                "pass the same list)");
      value_errors.fetch_add(1);
    }
    // The group is still usable: nobody was left inside the split.
    Tensor value = int_tensor({1});
    group.all_reduce(value, ReduceOp::Sum);
    after[static_cast<size_t>(rank)] = value.item<int64_t>();
  });
  EXPECT_EQ(value_errors.load(), 3);
  EXPECT_EQ(after, (std::vector<int64_t>{3, 3, 3}));
}

TEST(Split, BadListsAreValueErrorsOnTheCallingRank) {
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    const std::string at = "split on rank " + std::to_string(rank) + ": ";
    px::testing::expect_value_error([&] { group.split({}); }, at + "the list of ranks is empty");
    px::testing::expect_value_error([&] { group.split({0, 2}); }, at + "rank 2 is out of range for a group of 2 ranks");
    px::testing::expect_value_error([&] { group.split({1, 0, 1}); }, at + "rank 1 appears twice in [1, 0, 1]");
  });
}

TEST(Split, ASubGroupSeesTheWorldsFailure) {
  std::vector<std::string> messages(4);
  std::atomic<int> pairs_done{0};
  auto body = [&](int rank, ProcessGroup& group) {
    auto pairs = split_all(group, {{0, 1}, {2, 3}});
    if (rank == 3) {
      while (pairs_done.load() < 2) std::this_thread::yield();
      throw std::runtime_error("rank three gives up");
    }
    try {
      Tensor value = int_tensor({1});
      pairs[0]->all_reduce(value, ReduceOp::Sum);  // ranks 0 and 1 complete theirs; rank 2 waits for 3
      if (rank < 2) pairs_done.fetch_add(1);
      group.barrier();  // waits for rank 3
    } catch (const CommError& error) {
      messages[static_cast<size_t>(rank)] = error.what();
      throw;
    }
  };
  EXPECT_THROW(launch_with_watchdog(4, body), std::runtime_error);
  EXPECT_EQ(messages[2], "CommError: rank 3 failed (rank three gives up); all_reduce on rank 2 cannot complete");
  for (int r : {0, 1}) {
    EXPECT_EQ(messages[static_cast<size_t>(r)], "CommError: rank 3 failed (rank three gives up); barrier on rank " +
                                                    std::to_string(r) + " cannot complete");
  }
}

}  // namespace
}  // namespace px::dist
