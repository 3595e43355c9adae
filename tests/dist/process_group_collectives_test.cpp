// Every collective of the threads backend against a single-threaded reference, on world
// sizes 1 to 4 (and 8), for every dtype and reduce op, on sizes that split unevenly.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <tuple>
#include <vector>

#include "dist/collectives_test_util.h"
#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"

namespace px::dist {
namespace {

using px::testing::chunk;
using px::testing::concat;
using px::testing::launch_with_watchdog;
using px::testing::make_input;
using px::testing::reduce_reference;
using px::testing::same_bytes;

// Sizes around the kernels' boundaries: empty, one element, fewer elements than ranks, a
// cache line, several reduction tiles with a remainder.
const std::vector<int64_t> kCounts = {0, 1, 3, 16, 1000, 10007};

std::vector<ReduceOp> ops_for(DType dtype) {
  if (dtype == DType::Bool) return {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
  return {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};
}

uint64_t seed_of(int rank, size_t case_index) { return static_cast<uint64_t>(rank) * 100003 + case_index; }

struct ReduceCase {
  ReduceOp op;
  int64_t count;
};

std::vector<ReduceCase> reduce_cases(DType dtype) {
  std::vector<ReduceCase> cases;
  for (ReduceOp op : ops_for(dtype)) {
    for (int64_t count : kCounts) cases.push_back({op, count});
  }
  return cases;
}

std::string describe(const ReduceCase& c) {
  return reduce_op_name(c.op) + " over " + std::to_string(c.count) + " elements";
}

using Results = std::vector<std::vector<Tensor>>;  // [rank][case]

Results make_results(int n, size_t cases) { return Results(static_cast<size_t>(n), std::vector<Tensor>(cases)); }

class CollectivesTest : public ::testing::TestWithParam<std::tuple<int, DType>> {
 protected:
  int world_size() const { return std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
};

TEST_P(CollectivesTest, AllReduceMatchesReference) {
  const int n = world_size();
  const std::vector<ReduceCase> cases = reduce_cases(dtype());
  Results results = make_results(n, cases.size());
  launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
    for (size_t c = 0; c < cases.size(); ++c) {
      Tensor tensor = make_input(dtype(), cases[c].count, seed_of(rank, c));
      group.all_reduce(tensor, cases[c].op);
      results[static_cast<size_t>(rank)][c] = tensor;
    }
  });
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<Tensor> inputs;
    for (int r = 0; r < n; ++r) inputs.push_back(make_input(dtype(), cases[c].count, seed_of(r, c)));
    const Tensor expected = reduce_reference(inputs, cases[c].op);
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(same_bytes(results[static_cast<size_t>(r)][c], expected))
          << "rank " << r << ", " << describe(cases[c]);
    }
  }
}

TEST_P(CollectivesTest, ReduceScatterMatchesReference) {
  const int n = world_size();
  const std::vector<ReduceCase> cases = reduce_cases(dtype());
  Results results = make_results(n, cases.size());
  Results in_place = make_results(n, cases.size());
  launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const int64_t m = cases[c].count;
      Tensor input = make_input(dtype(), n * m, seed_of(rank, c));
      Tensor output = Tensor::empty({m}, dtype());
      group.reduce_scatter(input, output, cases[c].op);
      results[static_cast<size_t>(rank)][c] = output;
      // In place: the output is this rank's chunk of the input.
      Tensor shared = make_input(dtype(), n * m, seed_of(rank, c));
      Tensor own_chunk = shared.narrow(0, rank * m, m);
      group.reduce_scatter(shared, own_chunk, cases[c].op);
      in_place[static_cast<size_t>(rank)][c] = own_chunk.contiguous();
    }
  });
  for (size_t c = 0; c < cases.size(); ++c) {
    const int64_t m = cases[c].count;
    std::vector<Tensor> inputs;
    for (int r = 0; r < n; ++r) inputs.push_back(make_input(dtype(), n * m, seed_of(r, c)));
    const Tensor reduced = reduce_reference(inputs, cases[c].op);
    for (int r = 0; r < n; ++r) {
      const Tensor expected = chunk(reduced, r, m);
      EXPECT_TRUE(same_bytes(results[static_cast<size_t>(r)][c], expected))
          << "rank " << r << ", " << describe(cases[c]);
      EXPECT_TRUE(same_bytes(in_place[static_cast<size_t>(r)][c], expected))
          << "in place, rank " << r << ", " << describe(cases[c]);
    }
  }
}

TEST_P(CollectivesTest, AllGatherConcatenatesInRankOrder) {
  const int n = world_size();
  Results results = make_results(n, kCounts.size());
  Results in_place = make_results(n, kCounts.size());
  launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
    for (size_t c = 0; c < kCounts.size(); ++c) {
      const int64_t m = kCounts[c];
      Tensor output = Tensor::empty({n * m}, dtype());
      group.all_gather(make_input(dtype(), m, seed_of(rank, c)), output);
      results[static_cast<size_t>(rank)][c] = output;
      // In place: the input is this rank's chunk of the output.
      Tensor gathered = Tensor::empty({n * m}, dtype());
      Tensor own_chunk = gathered.narrow(0, rank * m, m);
      std::memcpy(own_chunk.raw_data(), make_input(dtype(), m, seed_of(rank, c)).raw_data(),
                  static_cast<size_t>(px::testing::nbytes(own_chunk)));
      group.all_gather(own_chunk, gathered);
      in_place[static_cast<size_t>(rank)][c] = gathered;
    }
  });
  for (size_t c = 0; c < kCounts.size(); ++c) {
    std::vector<Tensor> inputs;
    for (int r = 0; r < n; ++r) inputs.push_back(make_input(dtype(), kCounts[c], seed_of(r, c)));
    const Tensor expected = concat(inputs);
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(same_bytes(results[static_cast<size_t>(r)][c], expected)) << "rank " << r << ", " << kCounts[c];
      EXPECT_TRUE(same_bytes(in_place[static_cast<size_t>(r)][c], expected)) << "in place, rank " << r;
    }
  }
}

TEST_P(CollectivesTest, AllToAllTransposesChunks) {
  const int n = world_size();
  Results results = make_results(n, kCounts.size());
  launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
    for (size_t c = 0; c < kCounts.size(); ++c) {
      Tensor output = Tensor::empty({n * kCounts[c]}, dtype());
      group.all_to_all(make_input(dtype(), n * kCounts[c], seed_of(rank, c)), output);
      results[static_cast<size_t>(rank)][c] = output;
    }
  });
  for (size_t c = 0; c < kCounts.size(); ++c) {
    const int64_t m = kCounts[c];
    std::vector<Tensor> inputs;
    for (int r = 0; r < n; ++r) inputs.push_back(make_input(dtype(), n * m, seed_of(r, c)));
    for (int r = 0; r < n; ++r) {
      std::vector<Tensor> parts;
      for (int i = 0; i < n; ++i) parts.push_back(chunk(inputs[static_cast<size_t>(i)], r, m));
      EXPECT_TRUE(same_bytes(results[static_cast<size_t>(r)][c], concat(parts))) << "rank " << r << ", " << m;
    }
  }
}

TEST_P(CollectivesTest, BroadcastCopiesTheRoot) {
  const int n = world_size();
  const std::vector<int> roots = {0, n - 1, n / 2};
  Results results = make_results(n, kCounts.size() * roots.size());
  launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
    for (size_t c = 0; c < kCounts.size(); ++c) {
      for (size_t k = 0; k < roots.size(); ++k) {
        const size_t index = c * roots.size() + k;
        Tensor tensor = make_input(dtype(), kCounts[c], seed_of(rank, index));
        group.broadcast(tensor, roots[k]);
        results[static_cast<size_t>(rank)][index] = tensor;
      }
    }
  });
  for (size_t c = 0; c < kCounts.size(); ++c) {
    for (size_t k = 0; k < roots.size(); ++k) {
      const size_t index = c * roots.size() + k;
      const Tensor expected = make_input(dtype(), kCounts[c], seed_of(roots[k], index));
      for (int r = 0; r < n; ++r) {
        EXPECT_TRUE(same_bytes(results[static_cast<size_t>(r)][index], expected))
            << "rank " << r << ", root " << roots[k] << ", " << kCounts[c] << " elements";
      }
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<int, DType>>& info) {
  return "n" + std::to_string(std::get<0>(info.param)) + "_" + std::string(dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(EveryDType, CollectivesTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(DType::Float32, DType::Float64, DType::BFloat16,
                                                              DType::Int64, DType::Bool)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(EightRanks, CollectivesTest,
                         ::testing::Combine(::testing::Values(8), ::testing::Values(DType::Float32, DType::Bool)),
                         param_name);

TEST(Collectives, LargeAllReduceSplitsAcrossRanks) {
  // Big enough for many tiles per rank, odd so that the last rank's chunk is short.
  const int64_t count = (int64_t{1} << 20) + 3;
  for (int n : {2, 3}) {
    for (DType dtype : {DType::Float32, DType::BFloat16}) {
      const ReduceOp op = dtype == DType::Float32 ? ReduceOp::Sum : ReduceOp::Avg;
      std::vector<Tensor> results(static_cast<size_t>(n));
      launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
        Tensor tensor = make_input(dtype, count, seed_of(rank, 0));
        group.all_reduce(tensor, op);
        results[static_cast<size_t>(rank)] = tensor;
      });
      std::vector<Tensor> inputs;
      for (int r = 0; r < n; ++r) inputs.push_back(make_input(dtype, count, seed_of(r, 0)));
      const Tensor expected = reduce_reference(inputs, op);
      for (int r = 0; r < n; ++r) EXPECT_TRUE(same_bytes(results[static_cast<size_t>(r)], expected)) << n << " ranks";
    }
  }
}

TEST(Collectives, MultiDimensionalTensorsReduceElementWise) {
  std::vector<Tensor> results(2);
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    Tensor tensor = make_input(DType::Float64, 21, seed_of(rank, 7)).view({3, 7});
    group.all_reduce(tensor, ReduceOp::Max);
    results[static_cast<size_t>(rank)] = tensor;
  });
  const Tensor expected = reduce_reference(
      {make_input(DType::Float64, 21, seed_of(0, 7)), make_input(DType::Float64, 21, seed_of(1, 7))}, ReduceOp::Max);
  for (const Tensor& result : results) {
    EXPECT_EQ(result.shape(), (Shape{3, 7}));
    EXPECT_TRUE(same_bytes(result.reshape({21}), expected));
  }
}

TEST(Collectives, AvgOfInt64TruncatesTowardZero) {
  std::vector<Tensor> results(3);
  launch_with_watchdog(3, [&](int rank, ProcessGroup& group) {
    // Sums -7, 7 and 8 over three ranks: averages -2, 2 and 2.
    const std::vector<std::vector<double>> values = {{-3, 3, 3}, {-2, 2, 2}, {-2, 2, 3}};
    Tensor tensor = Tensor::from_vector(values[static_cast<size_t>(rank)], {3}, DType::Int64);
    group.all_reduce(tensor, ReduceOp::Avg);
    results[static_cast<size_t>(rank)] = tensor;
  });
  for (const Tensor& result : results) EXPECT_EQ(result.to_vector<int64_t>(), (std::vector<int64_t>{-2, 2, 2}));
}

TEST(Collectives, BoolReductionsAreAnyAndAll) {
  std::vector<std::vector<Tensor>> results(2, std::vector<Tensor>(3));
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    const std::vector<double> values = rank == 0 ? std::vector<double>{0, 0, 1, 1} : std::vector<double>{0, 1, 0, 1};
    const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
    for (size_t k = 0; k < 3; ++k) {
      Tensor tensor = Tensor::from_vector(values, {4}, DType::Bool);
      group.all_reduce(tensor, ops[k]);
      results[static_cast<size_t>(rank)][k] = tensor;
    }
  });
  for (const auto& rank_results : results) {
    EXPECT_EQ(rank_results[0].to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
    EXPECT_EQ(rank_results[1].to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
    EXPECT_EQ(rank_results[2].to_vector<bool>(), (std::vector<bool>{false, false, false, true}));
  }
}

TEST(Collectives, BarrierSeparatesRounds) {
  constexpr int kRounds = 200;
  for (int n : {2, 3, 8}) {
    std::vector<std::atomic<int>> arrived(kRounds);
    std::atomic<int> early{0};
    launch_with_watchdog(n, [&](int, ProcessGroup& group) {
      for (int round = 0; round < kRounds; ++round) {
        arrived[static_cast<size_t>(round)].fetch_add(1);
        group.barrier();
        if (arrived[static_cast<size_t>(round)].load() != n) early.fetch_add(1);
      }
    });
    EXPECT_EQ(early.load(), 0) << n << " ranks: a rank left a barrier before every rank had reached it";
  }
}

// Many mixed collectives back to back: faster ranks publish the next round while slower
// ones still read the last one.
TEST(Collectives, MixedSequencesStayInStep) {
  constexpr int kRounds = 300;
  for (int n : {2, 4}) {
    std::atomic<int> wrong{0};
    launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
      for (int round = 0; round < kRounds; ++round) {
        Tensor sum = Tensor::from_vector({static_cast<double>(rank + round)}, {1}, DType::Int64);
        group.all_reduce(sum, ReduceOp::Sum);
        if (sum.item<int64_t>() != n * (n - 1) / 2 + n * round) wrong.fetch_add(1);
        Tensor value = Tensor::from_vector({static_cast<double>(rank == round % n ? round : -1)}, {1}, DType::Int64);
        group.broadcast(value, round % n);
        if (value.item<int64_t>() != round) wrong.fetch_add(1);
        if (round % 3 == 0) group.barrier();
        Tensor gathered = Tensor::empty({n}, DType::Int64);
        group.all_gather(Tensor::from_vector({static_cast<double>(rank * round)}, {1}, DType::Int64), gathered);
        for (int r = 0; r < n; ++r) {
          if (gathered.to_vector<int64_t>()[static_cast<size_t>(r)] != r * round) wrong.fetch_add(1);
        }
      }
    });
    EXPECT_EQ(wrong.load(), 0) << n << " ranks";
  }
}

TEST(Collectives, GroupDescribesItself) {
  launch_with_watchdog(3, [&](int rank, ProcessGroup& group) {
    EXPECT_EQ(group.rank(), rank);
    EXPECT_EQ(group.size(), 3);
    EXPECT_EQ(group.backend(), "threads");
  });
}

}  // namespace
}  // namespace px::dist
