#include "parallax/core/storage.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "parallax/core/buffer_pool.h"

namespace px {

namespace {
constexpr int64_t kAlignment = 64;
}

Storage::Storage(int64_t nbytes) : nbytes_(nbytes) {
  // Round up: aligned_alloc wants a multiple of the alignment, and never 0.
  padded_bytes_ = ((std::max<int64_t>(nbytes, 1) + kAlignment - 1) / kAlignment) * kAlignment;
  if (const std::shared_ptr<BufferPool>* pool = BufferPoolScope::current()) {
    data_ = (*pool)->acquire(padded_bytes_);
    pool_ = *pool;
    return;
  }
  data_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, static_cast<size_t>(padded_bytes_)));
  if (!data_) throw std::bad_alloc();
}

Storage::~Storage() {
  if (pool_) {
    pool_->release(data_, padded_bytes_);
  } else {
    std::free(data_);
  }
}

}  // namespace px
