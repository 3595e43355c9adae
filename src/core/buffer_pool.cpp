#include "parallax/core/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A cached block is poisoned: a use of freed storage is still caught under ASan.
#define PX_POISON(block, bytes) ASAN_POISON_MEMORY_REGION(block, bytes)
#define PX_UNPOISON(block, bytes) ASAN_UNPOISON_MEMORY_REGION(block, bytes)
#else
#define PX_POISON(block, bytes) ((void)(block), (void)(bytes))
#define PX_UNPOISON(block, bytes) ((void)(block), (void)(bytes))
#endif

namespace px {

namespace {
constexpr size_t kAlignment = 64;
// The innermost BufferPoolScope of this thread: scoped, like the dispatcher's trace scopes.
thread_local const BufferPoolScope* innermost_scope = nullptr;
}  // namespace

BufferPool::~BufferPool() { trim(); }

std::byte* BufferPool::acquire(int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.allocations;
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      std::byte* block = it->second.back();
      it->second.pop_back();
      ++stats_.reuses;
      stats_.cached_bytes -= static_cast<double>(bytes);
      PX_UNPOISON(block, static_cast<size_t>(bytes));
      return block;
    }
  }
  auto* block = static_cast<std::byte*>(std::aligned_alloc(kAlignment, static_cast<size_t>(bytes)));
  if (!block) throw std::bad_alloc();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.system_bytes += static_cast<double>(bytes);
  stats_.peak_system_bytes = std::max(stats_.peak_system_bytes, stats_.system_bytes);
  return block;
}

void BufferPool::release(std::byte* block, int64_t bytes) {
  PX_POISON(block, static_cast<size_t>(bytes));
  std::lock_guard<std::mutex> lock(mutex_);
  free_[bytes].push_back(block);
  stats_.cached_bytes += static_cast<double>(bytes);
}

void BufferPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [bytes, blocks] : free_) {
    for (std::byte* block : blocks) {
      PX_UNPOISON(block, static_cast<size_t>(bytes));
      std::free(block);
      stats_.system_bytes -= static_cast<double>(bytes);
      stats_.cached_bytes -= static_cast<double>(bytes);
    }
  }
  free_.clear();
}

BufferPoolStats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

BufferPoolScope::BufferPoolScope(std::shared_ptr<BufferPool> pool)
    : pool_(std::move(pool)), previous_(innermost_scope) {
  innermost_scope = this;
}

BufferPoolScope::~BufferPoolScope() { innermost_scope = previous_; }

const std::shared_ptr<BufferPool>* BufferPoolScope::current() {
  return innermost_scope != nullptr && innermost_scope->pool_ ? &innermost_scope->pool_ : nullptr;
}

}  // namespace px
