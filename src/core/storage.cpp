#include "parallax/core/storage.h"

#include <cstdlib>
#include <algorithm>
#include <new>

namespace px {

namespace {
constexpr int64_t kAlignment = 64;
}

Storage::Storage(int64_t nbytes) : nbytes_(nbytes) {
  // Round up: aligned_alloc wants a multiple of the alignment, and never 0.
  int64_t padded = ((std::max<int64_t>(nbytes, 1) + kAlignment - 1) / kAlignment) * kAlignment;
  data_ = static_cast<std::byte*>(std::aligned_alloc(kAlignment, static_cast<size_t>(padded)));
  if (!data_) throw std::bad_alloc();
}

Storage::~Storage() { std::free(data_); }

}  // namespace px
