#include "parallax/core/buffer_pool.h"

#include <gtest/gtest.h>

#include <thread>

#include "parallax/core/tensor.h"
#include "parallax/ops/factory.h"

namespace px {
namespace {

TEST(BufferPool, ReusesFreedBlocksOfTheSameSize) {
  BufferPool pool;
  std::byte* a = pool.acquire(128);
  pool.release(a, 128);
  EXPECT_EQ(pool.acquire(128), a);  // the cached block
  std::byte* b = pool.acquire(128);
  EXPECT_NE(b, a);  // a is in use again
  std::byte* c = pool.acquire(256);
  const BufferPoolStats stats = pool.stats();
  EXPECT_EQ(stats.allocations, 4);
  EXPECT_EQ(stats.reuses, 1);
  EXPECT_EQ(stats.system_bytes, 128 + 128 + 256);
  EXPECT_EQ(stats.cached_bytes, 0);
  pool.release(a, 128);
  pool.release(b, 128);
  pool.release(c, 256);
  EXPECT_EQ(pool.stats().cached_bytes, 512);
  pool.trim();
  EXPECT_EQ(pool.stats().system_bytes, 0);
  EXPECT_EQ(pool.stats().cached_bytes, 0);
  EXPECT_EQ(pool.stats().peak_system_bytes, 512);
}

TEST(BufferPool, TensorsMadeInAScopeComeFromItsPoolAndGoBack) {
  auto pool = std::make_shared<BufferPool>();
  const void* first = nullptr;
  {
    BufferPoolScope scope(pool);
    Tensor t = px::full({1000}, 1.0, DType::Float32);
    first = t.raw_data();
  }
  EXPECT_EQ(pool->stats().allocations, 1);
  EXPECT_EQ(pool->stats().cached_bytes, 4032);  // 4000 bytes, padded to 64
  {
    BufferPoolScope scope(pool);
    Tensor again = px::full({1000}, 2.0, DType::Float32);
    EXPECT_EQ(again.raw_data(), first);
    EXPECT_EQ(again.data<float>()[999], 2.0f);
  }
  EXPECT_EQ(pool->stats().reuses, 1);
  Tensor outside = px::full({1000}, 1.0, DType::Float32);  // no scope: the system allocator
  EXPECT_EQ(pool->stats().allocations, 2);
}

TEST(BufferPool, ScopesNestAndRestore) {
  auto outer = std::make_shared<BufferPool>(), inner = std::make_shared<BufferPool>();
  EXPECT_EQ(BufferPoolScope::current(), nullptr);
  BufferPoolScope a(outer);
  EXPECT_EQ(BufferPoolScope::current()->get(), outer.get());
  {
    BufferPoolScope b(inner);
    EXPECT_EQ(BufferPoolScope::current()->get(), inner.get());
    {
      BufferPoolScope none(nullptr);
      EXPECT_EQ(BufferPoolScope::current(), nullptr);
    }
    EXPECT_EQ(BufferPoolScope::current()->get(), inner.get());
  }
  EXPECT_EQ(BufferPoolScope::current()->get(), outer.get());
}

TEST(BufferPool, StorageOutlivesItsScopeAndThePoolsOwner) {
  Tensor kept;
  std::weak_ptr<BufferPool> watch;
  {
    auto pool = std::make_shared<BufferPool>();
    watch = pool;
    BufferPoolScope scope(pool);
    kept = px::full({16}, 3.0, DType::Float64);
  }
  EXPECT_FALSE(watch.expired());  // the storage holds the pool
  EXPECT_EQ(kept.data<double>()[15], 3.0);
  kept = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(BufferPool, BlocksFreedOnOtherThreadsReturnToThePool) {
  auto pool = std::make_shared<BufferPool>();
  Tensor t;
  {
    BufferPoolScope scope(pool);
    t = px::full({64}, 1.0, DType::Float32);
  }
  std::thread([moved = std::move(t)]() mutable { moved = Tensor(); }).join();
  EXPECT_EQ(pool->stats().cached_bytes, 256);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([pool] {
      BufferPoolScope scope(pool);
      for (int k = 0; k < 200; ++k) Tensor x = px::full({64}, 1.0, DType::Float32);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const BufferPoolStats stats = pool->stats();
  EXPECT_EQ(stats.allocations, 801);
  EXPECT_LE(stats.system_bytes, 5 * 256);  // at most one block per thread at a time, plus the first
  EXPECT_EQ(stats.cached_bytes, stats.system_bytes);
}

}  // namespace
}  // namespace px
