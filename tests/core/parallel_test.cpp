#include "parallax/core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "parallax/core/error.h"

namespace px {
namespace {

TEST(ThreadPool, RunsEveryTaskOnceOnSeveralThreads) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.threads(), 3);
  for (int64_t tasks : {1, 2, 3, 7, 100}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
    pool.run(tasks, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
    for (int64_t i = 0; i < tasks; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i << " of " << tasks;
  }
}

TEST(ThreadPool, UsesItsWorkers) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::vector<std::thread::id> seen;
  // Tasks that wait until two different threads have joined: they cannot all run on one.
  std::atomic<int> arrived{0};
  pool.run(2, [&](int64_t) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      seen.push_back(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0], seen[1]);
}

TEST(ThreadPool, RethrowsTheFirstErrorAndStaysUsable) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.run(50,
                        [](int64_t i) {
                          if (i == 7) throw std::runtime_error("task 7 failed");
                        }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.run(10, [&](int64_t i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 45);
}

TEST(ThreadPool, NestedRunsInlineInOrder) {
  ThreadPool pool(2);
  ParallelScope scope(&pool);
  std::vector<std::vector<int64_t>> order(4);
  pool.run(4, [&](int64_t outer) {
    EXPECT_EQ(current_threads(), 1);  // inside a task: nested loops run on this thread
    parallel_for(1000, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) order[static_cast<size_t>(outer)].push_back(i);
    });
  });
  for (const auto& seen : order) {
    ASSERT_EQ(seen.size(), 1000u);
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i));
  }
}

TEST(ThreadPool, TwoCallersShareOnePoolSafely) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto caller = [&] {
    for (int k = 0; k < 50; ++k) pool.run(8, [&](int64_t i) { total.fetch_add(i + 1); });
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(total.load(), 2 * 50 * 36);
}

TEST(ThreadPool, RejectsFewerThanOneThread) {
  EXPECT_THROW(ThreadPool(0), ValueError);
  EXPECT_THROW(ThreadPool(-2), ValueError);
}

TEST(ParallelScope, NestsAndRestores) {
  EXPECT_EQ(ParallelScope::current(), nullptr);
  EXPECT_EQ(current_threads(), 1);
  ThreadPool outer(2), inner(3);
  {
    ParallelScope a(&outer);
    EXPECT_EQ(current_threads(), 2);
    {
      ParallelScope b(&inner);
      EXPECT_EQ(ParallelScope::current(), &inner);
      EXPECT_EQ(current_threads(), 3);
      ParallelScope none(nullptr);
      EXPECT_EQ(current_threads(), 1);
    }
    EXPECT_EQ(ParallelScope::current(), &outer);
  }
  EXPECT_EQ(ParallelScope::current(), nullptr);
}

TEST(Chunks, DependOnlyOnSizeAndGrain) {
  Chunks small(10, 4);
  EXPECT_EQ(small.size, 4);
  EXPECT_EQ(small.count, 3);
  Chunks capped(1'000'000, 1);
  EXPECT_EQ(capped.count, Chunks::kMaxChunks);
  EXPECT_EQ(Chunks(0, 5).count, 0);
  EXPECT_EQ(Chunks(5, 0).size, 1);

  // The same (begin, end) pairs with no pool and with pools of any size.
  auto boundaries = [](ThreadPool* pool) {
    ParallelScope scope(pool);
    std::mutex mutex;
    std::vector<std::pair<int64_t, int64_t>> seen;
    parallel_for(1001, 10, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      seen.emplace_back(begin, end);
    });
    std::sort(seen.begin(), seen.end());
    return seen;
  };
  const auto alone = boundaries(nullptr);
  EXPECT_EQ(alone.front().first, 0);
  EXPECT_EQ(alone.back().second, 1001);
  for (size_t i = 1; i < alone.size(); ++i) EXPECT_EQ(alone[i].first, alone[i - 1].second);
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(boundaries(&pool), alone) << threads << " threads";
  }
}

TEST(CoreSharing, SplitsTheCoresAmongRanks) {
  const char* before = std::getenv("PARALLAX_NUM_THREADS");
  const std::string saved = before ? before : "";
  ::setenv("PARALLAX_NUM_THREADS", "8", 1);
  EXPECT_EQ(available_cores(), 8);
  EXPECT_EQ(threads_per_rank(1), 8);
  EXPECT_EQ(threads_per_rank(2), 4);
  EXPECT_EQ(threads_per_rank(3), 2);
  EXPECT_EQ(threads_per_rank(16), 1);
  ::setenv("PARALLAX_NUM_THREADS", "two", 1);
  EXPECT_THROW(available_cores(), ValueError);
  ::setenv("PARALLAX_NUM_THREADS", "0", 1);
  EXPECT_THROW(available_cores(), ValueError);
  if (before) {
    ::setenv("PARALLAX_NUM_THREADS", saved.c_str(), 1);
  } else {
    ::unsetenv("PARALLAX_NUM_THREADS");
  }
  EXPECT_GE(available_cores(), 1);
}

}  // namespace
}  // namespace px
