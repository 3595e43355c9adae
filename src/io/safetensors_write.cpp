// The safetensors writers. Every file goes to a temporary beside its target, is fsynced and then
// renamed over the target: a crash or an error leaves the old file or the new one, never a mix.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <thread>

#include "io/safetensors_detail.h"
#include "parallax/io/safetensors.h"

namespace px::io {

namespace {

namespace fs = std::filesystem;

// A file being written in place of `target`; removed unless commit() renames it into place.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string target) : target_(std::move(target)) {
    // The pid and thread keep writers of the same target in other processes and threads apart.
    path_ = target_ + ".tmp." + std::to_string(::getpid()) + "." +
            std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()) % 1'000'000);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create the temporary file '" + path_ + "'", errno);
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  // Buffers small pieces so that a checkpoint of many small tensors is not one syscall each.
  void write(const void* data, int64_t count) {
    const auto* bytes = static_cast<const std::byte*>(data);
    if (static_cast<int64_t>(buffer_.size()) + count > kBufferBytes) flush();
    if (count >= kBufferBytes) {
      write_through(bytes, count);
      return;
    }
    buffer_.insert(buffer_.end(), bytes, bytes + count);
  }

  void commit() {
    flush();
    if (::fsync(fd_) != 0) fail("cannot fsync '" + path_ + "'", errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("cannot close '" + path_ + "'", errno);
    if (::rename(path_.c_str(), target_.c_str()) != 0) fail("cannot rename '" + path_ + "' over it", errno);
    committed_ = true;
    sync_directory();
  }

 private:
  static constexpr int64_t kBufferBytes = int64_t{1} << 20;

  [[noreturn]] void fail(const std::string& what, int error) const {
    throw ValueError(target_ + ": " + what + ": " + detail::errno_text(error));
  }

  void flush() {
    write_through(buffer_.data(), static_cast<int64_t>(buffer_.size()));
    buffer_.clear();
  }

  void write_through(const std::byte* bytes, int64_t count) {
    while (count > 0) {
      const ssize_t wrote = ::write(fd_, bytes, static_cast<size_t>(std::min<int64_t>(count, int64_t{1} << 30)));
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote < 0) fail("cannot write '" + path_ + "'", errno);
      bytes += wrote;
      count -= wrote;
    }
  }

  // Makes the rename itself durable. Best effort: the new file is in place already, and a caller
  // told "failed" would wrongly believe the old one still is.
  void sync_directory() const {
    const fs::path parent = fs::path(target_).parent_path();
    const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    ::fsync(dir);
    ::close(dir);
  }

  std::string target_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
  std::vector<std::byte> buffer_;
};

// A tensor as it will be stored: its contiguous values and the dtype they are stored as.
struct StoredTensor {
  const std::string* name;
  Tensor values;
  std::string_view dtype;
  int64_t nbytes;
};

StoredTensor stored_tensor(const std::string& name, const Tensor& tensor, const WriteOptions& options,
                           const std::string& path) {
  const std::string where = path + ": tensor '" + name + "': ";
  if (!tensor.defined()) throw ValueError(where + "is undefined");
  if (!tensor.is_dense()) throw ValueError(where + "has no values to write (a meta, traced or subclass tensor)");
  StoredTensor out{&name, tensor.is_contiguous() ? tensor : tensor.contiguous(),
                   detail::safetensors_dtype_name(tensor.dtype()), 0};
  if (is_floating(tensor.dtype()) && options.float_storage == FloatStorage::Float16) out.dtype = "F16";
  if (is_floating(tensor.dtype()) && options.float_storage == FloatStorage::BFloat16) out.dtype = "BF16";
  out.nbytes = tensor.numel() * (detail::find_safetensors_dtype(out.dtype)->bits / 8);
  return out;
}

std::vector<StoredTensor> stored_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                         const WriteOptions& options, const std::string& path) {
  std::set<std::string_view> seen;
  std::vector<StoredTensor> out;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") throw ValueError(path + ": '__metadata__' is reserved and cannot name a tensor");
    if (!seen.insert(name).second) throw ValueError(path + ": tensor '" + name + "' is given twice");
    out.push_back(stored_tensor(name, tensor, options, path));
  }
  return out;
}

// The header, padded with spaces so that the data after it starts 8-byte aligned.
std::string header_text(const std::vector<StoredTensor>& tensors, const std::map<std::string, std::string>& metadata,
                        const std::string& path) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (const StoredTensor& tensor : tensors) {
    header[*tensor.name] = {
        {"dtype", tensor.dtype}, {"shape", tensor.values.shape()}, {"data_offsets", {offset, offset + tensor.nbytes}}};
    offset += tensor.nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception& error) {
    throw ValueError(path + ": a tensor name or metadata string is not valid UTF-8 (" + error.what() + ")");
  }
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  return text;
}

// Floating values rounded to a 16-bit format, a chunk at a time so that no second copy of a
// large tensor is ever held.
void write_narrowed(TemporaryFile& file, const Tensor& values, std::string_view dtype) {
  const int exponent_bits = dtype == "F16" ? 5 : 8;
  const int mantissa_bits = dtype == "F16" ? 10 : 7;
  constexpr int64_t kChunk = 1 << 16;
  std::vector<uint16_t> chunk;
  chunk.reserve(kChunk);
  visit_dtype(values.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, BFloat16>) {
      const T* data = values.data<T>();
      for (int64_t begin = 0; begin < values.numel(); begin += kChunk) {
        chunk.clear();
        for (int64_t i = begin; i < std::min(values.numel(), begin + kChunk); ++i) {
          // Straight from double for Float64: through float would round twice.
          double value;
          if constexpr (std::is_same_v<T, BFloat16>) {
            value = static_cast<float>(data[i]);
          } else {
            value = data[i];
          }
          chunk.push_back(detail::round_to_narrow_float(value, exponent_bits, mantissa_bits));
        }
        file.write(chunk.data(), static_cast<int64_t>(chunk.size() * sizeof(uint16_t)));
      }
    }
  });
}

void write_file(const std::string& path, const std::vector<StoredTensor>& tensors,
                const std::map<std::string, std::string>& metadata) {
  const std::string header = header_text(tensors, metadata, path);
  TemporaryFile file(path);
  const uint64_t header_bytes = header.size();
  file.write(&header_bytes, sizeof(header_bytes));  // little-endian, as the host (asserted)
  file.write(header.data(), static_cast<int64_t>(header.size()));
  for (const StoredTensor& tensor : tensors) {
    if (tensor.dtype == detail::safetensors_dtype_name(tensor.values.dtype())) {
      file.write(tensor.values.raw_data(), tensor.nbytes);
    } else {
      write_narrowed(file, tensor.values, tensor.dtype);
    }
  }
  file.commit();
}

bool is_shard_name(const std::string& name) {
  // model-00001-of-00004.safetensors
  auto digits = [&](size_t at) {
    return name.size() >= at + 5 &&
           std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at),
                       name.begin() + static_cast<std::ptrdiff_t>(at + 5), [](char c) { return c >= '0' && c <= '9'; });
  };
  return name.size() == 32 && name.starts_with("model-") && digits(6) && name.compare(11, 4, "-of-") == 0 &&
         digits(15) && name.ends_with(".safetensors");
}

// Files of an earlier checkpoint in the directory that the one just written does not use.
void remove_stale_files(const fs::path& dir, const std::set<std::string>& written) {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name == "model.safetensors" || name == "model.safetensors.index.json" || is_shard_name(name);
    if (ours && !written.contains(name)) fs::remove(entry.path(), error);
  }
}

std::string shard_name(size_t shard, size_t shards) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", shard + 1, shards);
  return name;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata, const WriteOptions& options) {
  write_file(path, stored_tensors(tensors, options, path), metadata);
}

void write_sharded_safetensors(const std::string& dir, const std::vector<std::pair<std::string, Tensor>>& tensors,
                               int64_t max_shard_bytes, const std::map<std::string, std::string>& metadata,
                               const WriteOptions& options) {
  if (max_shard_bytes <= 0) {
    throw ValueError(dir + ": max_shard_bytes is " + std::to_string(max_shard_bytes) + "; it must be positive");
  }
  const std::vector<StoredTensor> stored = stored_tensors(tensors, options, dir);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw ValueError(dir + ": cannot create the directory: " + error.message());

  std::vector<std::vector<StoredTensor>> shards(1);
  int64_t shard_bytes = 0;
  int64_t total_bytes = 0;
  for (const StoredTensor& tensor : stored) {
    if (!shards.back().empty() && shard_bytes + tensor.nbytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(tensor);
    shard_bytes += tensor.nbytes;
    total_bytes += tensor.nbytes;
  }
  if (shards.size() == 1) {
    write_file((fs::path(dir) / "model.safetensors").string(), stored, metadata);
    remove_stale_files(dir, {"model.safetensors"});
    return;
  }
  std::set<std::string> written{"model.safetensors.index.json"};
  nlohmann::json weight_map = nlohmann::json::object();  // sorted by name, as transformers writes it
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = shard_name(s, shards.size());
    write_file((fs::path(dir) / name).string(), shards[s], metadata);
    written.insert(name);
    for (const StoredTensor& tensor : shards[s]) weight_map[*tensor.name] = name;
  }
  const nlohmann::json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  TemporaryFile file(index_path);
  const std::string text = index.dump(2) + "\n";
  file.write(text.data(), static_cast<int64_t>(text.size()));
  file.commit();
  remove_stale_files(dir, written);
}

}  // namespace px::io
