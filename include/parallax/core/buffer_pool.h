#pragma once
// BufferPool: freed tensor storage kept, by exact size, for the next allocation of that size.
//
// A training step allocates the same buffers in the same order every time, so from the second
// step on almost every output comes from the pool instead of the system allocator, whose large
// blocks are fresh mmap'd pages: a page fault per 4 KiB on first touch, and an munmap when freed.
// The pool belongs to whoever runs the steps (runtime::Executor owns one); it is used only inside
// a BufferPoolScope on the thread that allocates. A Storage made there takes its memory from the
// pool and gives it back when it dies, on any thread and even after the scope has ended: it
// holds the pool by shared_ptr. Thread-safe. Cached blocks stay until trim() or the pool's end.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace px {

struct BufferPoolStats {
  int64_t allocations = 0;  // blocks handed out
  int64_t reuses = 0;       // of those, blocks that came from the cache
  double system_bytes = 0;  // bytes the pool holds from the system: handed out or cached
  double cached_bytes = 0;  // of those, bytes free in the cache now
  double peak_system_bytes = 0;
};

class BufferPool {
 public:
  BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();  // frees the cached blocks; blocks still handed out are freed by their storages

  // A 64-byte-aligned block of exactly `bytes` (a positive multiple of 64), from the cache when
  // one of that size is free. std::bad_alloc when the system has none.
  std::byte* acquire(int64_t bytes);
  // Returns a block that acquire() gave, of the size it was asked for.
  void release(std::byte* block, int64_t bytes);
  // Frees every cached block.
  void trim();
  BufferPoolStats stats() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, std::vector<std::byte*>> free_;  // by size
  BufferPoolStats stats_;
};

// While alive, storages created on this thread come from `pool` (nests: the previous pool comes
// back at its end). A null pool means the system allocator.
class BufferPoolScope {
 public:
  explicit BufferPoolScope(std::shared_ptr<BufferPool> pool);
  ~BufferPoolScope();
  BufferPoolScope(const BufferPoolScope&) = delete;
  BufferPoolScope& operator=(const BufferPoolScope&) = delete;

  // The innermost scope's pool on this thread, or null.
  static const std::shared_ptr<BufferPool>* current();

 private:
  std::shared_ptr<BufferPool> pool_;
  const BufferPoolScope* previous_;
};

}  // namespace px
