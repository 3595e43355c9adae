#pragma once
// Safetensors files (https://github.com/huggingface/safetensors), the format Hugging Face
// checkpoints ship in, and their sharded form (a directory with model.safetensors.index.json).
//
// A file is: 8 bytes, a little-endian uint64 N; N bytes of JSON header (an object, right-padded
// with spaces) mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}, plus
// an optional "__metadata__" object of strings; then the data buffer, which the tensors cover
// exactly, without holes or overlaps, row-major and little-endian.
//
// Reading is lazy and positioned: open() reads the header only, and read_slice() reads only the
// bytes of the slice, so a rank that owns a shard of a parameter never reads the rest of it.
// Every error is a ValueError that names the file and, where one is involved, the tensor.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parallax/core/shape.h"
#include "parallax/core/tensor.h"

namespace px::io {

// One tensor of a safetensors header, as the file describes it.
struct TensorInfo {
  std::string name;
  std::string dtype;  // the safetensors dtype string: "F32", "BF16", "F8_E4M3", ...
  Shape shape;
  int64_t begin = 0;  // [begin, end): bytes of the data buffer (which starts after the header)
  int64_t end = 0;

  int64_t nbytes() const { return end - begin; }
};

struct SafetensorsHeader {
  // In the order of their data in the file (for files that write_safetensors writes, the order
  // the writer was given).
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"; empty when the file has none
  int64_t data_start = 0;                       // file offset of the data buffer: 8 + N
};

// Headers larger than this are refused, as the reference implementation does (it keeps a
// corrupt length from asking for gigabytes of memory).
inline constexpr int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// Parses and validates a safetensors header from the first bytes of a file (`file_prefix`, at
// least 8 + N bytes of it; more is ignored) of a file of `file_size` bytes. Checks every rule of
// the format: N within the file and at most kMaxSafetensorsHeaderBytes; the header a JSON object
// without duplicate keys; each entry exactly {dtype, shape, data_offsets} with the right types; a
// known dtype; a non-negative shape whose byte size does not overflow; data_offsets matching the
// byte size; tensors neither overlapping nor leaving holes, and covering the data buffer to its
// last byte. Throws ValueError naming `where` (the file's path), the tensor and what was wrong.
// Touches no file, so that it can be fuzzed on a byte buffer.
SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file_prefix, int64_t file_size,
                                           const std::string& where);

// A safetensors file open for reading: it holds the file descriptor for its lifetime (movable,
// not copyable). Reads are positioned (pread); one object is not safe to use from several threads
// at once, because it counts bytes_read().
class SafetensorsFile {
 public:
  // Opens `path` and reads and validates its header (see parse_safetensors_header), nothing more.
  // ValueError naming the path when the file cannot be opened or its header is invalid.
  static SafetensorsFile open(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  // Tensor names in the order of their data in the file.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return index_.contains(name); }
  // The header's entry for `name`; ValueError naming the file, the tensor and close names when
  // the file holds no such tensor.
  const TensorInfo& info(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const SafetensorsHeader& header() const { return header_; }

  // The whole tensor as a new contiguous Tensor: F32, F64, BF16, I64 and BOOL as themselves, F16
  // widened (exactly) to Float32. ValueError naming the file and tensor for any other dtype, a
  // missing tensor, or a file that ends before the tensor's bytes (truncated after open).
  Tensor read(const std::string& name);
  // The slice ranges[d] = [start, stop) of every dim d of the tensor, as a new contiguous Tensor
  // (dtypes as for read). Reads only the bytes of the slice: one pread per contiguous run of it.
  // ValueError when ranges does not give one range per dim or a range is not within the dim.
  Tensor read_slice(const std::string& name, const std::vector<std::pair<int64_t, int64_t>>& ranges);

  // Bytes of tensor data read from the file so far (the header, which open() reads, not included).
  int64_t bytes_read() const { return bytes_read_; }

 private:
  SafetensorsFile(std::string path, int fd, SafetensorsHeader header);
  void read_bytes(std::byte* out, int64_t file_offset, int64_t count, const TensorInfo& tensor);

  std::string path_;
  int fd_ = -1;
  SafetensorsHeader header_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in header_.tensors
  int64_t bytes_read_ = 0;
};

// A Hugging Face model directory: either one model.safetensors, or shards that
// model.safetensors.index.json maps tensors to ({"metadata": {...}, "weight_map": {name: file}}).
// The same reading API as SafetensorsFile, across the files.
class SafetensorsDir {
 public:
  // Opens the single file or the index and every file it names (headers only), checking that
  // every named file exists and holds the tensors the index puts in it. ValueError naming the
  // directory (or index) and the file or tensor at fault; also when the directory holds neither
  // form or both. Tensors a shard holds that the index does not name are not reachable.
  static SafetensorsDir open(const std::string& dir);

  const std::string& path() const { return dir_; }
  // The files, in the order the index first names them (just model.safetensors when unsharded).
  const std::vector<SafetensorsFile>& files() const { return files_; }
  // Tensor names: file by file, each in its data order.
  std::vector<std::string> names() const { return names_; }
  bool contains(const std::string& name) const { return file_of_.contains(name); }
  // As SafetensorsFile's, for whichever file holds the tensor; ValueError naming the directory
  // and the tensor when none does.
  const TensorInfo& info(const std::string& name) const;
  Tensor read(const std::string& name);
  Tensor read_slice(const std::string& name, const std::vector<std::pair<int64_t, int64_t>>& ranges);
  // Summed over the files.
  int64_t bytes_read() const;

 private:
  SafetensorsDir(std::string dir, std::vector<SafetensorsFile> files, std::vector<std::string> names,
                 std::unordered_map<std::string, size_t> file_of);
  SafetensorsFile& file_holding(const std::string& name);

  std::string dir_;
  std::vector<SafetensorsFile> files_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, size_t> file_of_;  // name -> position in files_
};

// How write_safetensors stores floating tensors (Float32, Float64, BFloat16). Other dtypes are
// always stored as themselves.
enum class FloatStorage : uint8_t {
  Native,    // as their own dtype: F32, F64, BF16
  Float16,   // F16, rounded to nearest even; beyond F16's range becomes +-inf
  BFloat16,  // BF16, rounded to nearest even
};

struct WriteOptions {
  FloatStorage float_storage = FloatStorage::Native;
};

// Writes `tensors`, in this order, and `metadata` (as "__metadata__") to a safetensors file at
// `path`, atomically: to a temporary file beside it, fsynced, then renamed over `path`, so a
// reader sees the old file or the new one, never a part. The header is padded with spaces so the
// data starts 8-byte aligned. Non-contiguous tensors are written as their contiguous values.
// ValueError naming the path (and tensor) on a duplicate or reserved ("__metadata__") name, a
// tensor without values (meta, traced), or any failure to write; the temporary is removed then.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {}, const WriteOptions& options = {});

// Writes `tensors` into `dir` (created when missing) in Hugging Face's sharded form: files
// model-00001-of-0000N.safetensors of at most `max_shard_bytes` of data each (a tensor larger
// than that gets a shard of its own), in order, then model.safetensors.index.json, written last;
// a single model.safetensors (no index) when everything fits in one shard. Every file is written
// atomically and carries `metadata`; the index's metadata holds total_size (bytes of data).
// Files of an earlier checkpoint in this form that the new one does not use are removed.
// ValueError as write_safetensors, and when max_shard_bytes is not positive.
void write_sharded_safetensors(const std::string& dir, const std::vector<std::pair<std::string, Tensor>>& tensors,
                               int64_t max_shard_bytes, const std::map<std::string, std::string>& metadata = {},
                               const WriteOptions& options = {});

}  // namespace px::io
