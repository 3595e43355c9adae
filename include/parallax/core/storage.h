#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace px {

class BufferPool;

// A 64-byte-aligned byte buffer shared by a tensor and its views. Contents
// start uninitialized: kernels overwrite their outputs, and zero-filling every
// output would cost a full extra write pass on memory-bound ops.
class Storage {
 public:
  explicit Storage(int64_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }

 private:
  std::byte* data_ = nullptr;
  int64_t nbytes_ = 0;
  int64_t padded_bytes_ = 0;
  std::shared_ptr<BufferPool> pool_;  // where data_ came from and goes back to; null: the system
};

}  // namespace px
