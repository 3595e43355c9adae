// SafetensorsFile: the reader. Bytes come straight from pread into the tensor's storage (F16
// goes through a staging buffer to be widened), one call per contiguous run of the slice.

#include "parallax/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "io/safetensors_detail.h"

namespace px::io {

namespace {

// Reads until `count` bytes are in or the file ends; returns how many came, or -errno.
int64_t pread_fully(int fd, std::byte* out, int64_t file_offset, int64_t count) {
  // Linux transfers at most about 2 GiB per call; asking for less keeps every call whole.
  constexpr int64_t kMaxCall = int64_t{1} << 30;
  int64_t done = 0;
  while (done < count) {
    const ssize_t got = ::pread(fd, out + done, static_cast<size_t>(std::min(count - done, kMaxCall)),
                                static_cast<off_t>(file_offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -errno;
    if (got == 0) break;
    done += got;
  }
  return done;
}

// Closes a descriptor on the error paths of open(), before a SafetensorsFile owns it.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::vector<std::byte> read_prefix(int fd, int64_t count, int64_t file_size, const std::string& path) {
  std::vector<std::byte> bytes(static_cast<size_t>(count));
  const int64_t got = pread_fully(fd, bytes.data(), 0, count);
  if (got < 0) throw ValueError(path + ": cannot read the header: " + detail::errno_text(static_cast<int>(-got)));
  if (got < count) {
    throw ValueError(path + ": the file ended at byte " + std::to_string(got) + " while its header was read (it was " +
                     std::to_string(file_size) + " bytes when opened: truncated meanwhile?)");
  }
  return bytes;
}

// What read() makes of a stored dtype; ValueError for the dtypes Parallax has no type for.
DType read_dtype(const TensorInfo& tensor, const std::string& path) {
  if (tensor.dtype == "F16") return DType::Float32;
  if (const auto px_type = detail::find_safetensors_dtype(tensor.dtype)->px_type) return *px_type;
  throw ValueError(path + ": tensor '" + tensor.name + "': dtype " + tensor.dtype +
                   " has no Parallax dtype (readable: F32, F64, BF16, I64, BOOL, and F16 as float32)");
}

Shape slice_shape(const TensorInfo& tensor, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                  const std::string& path) {
  const std::string where = path + ": tensor '" + tensor.name + "': ";
  if (ranges.size() != tensor.shape.size()) {
    throw ValueError(where + "read_slice got " + std::to_string(ranges.size()) + " ranges for " + tensor.dtype + " " +
                     detail::list_text(tensor.shape) + "; it takes one [start, stop) per dim (" +
                     std::to_string(tensor.shape.size()) + ")");
  }
  Shape shape;
  for (size_t d = 0; d < ranges.size(); ++d) {
    const auto [start, stop] = ranges[d];
    if (start < 0 || start > stop || stop > tensor.shape[d]) {
      throw ValueError(where + "slice [" + std::to_string(start) + ", " + std::to_string(stop) + ") of dim " +
                       std::to_string(d) + " is not within [0, " + std::to_string(tensor.shape[d]) +
                       "] (needs 0 <= start <= stop <= " + std::to_string(tensor.shape[d]) + ")");
    }
    shape.push_back(stop - start);
  }
  return shape;
}

// BOOL bytes other than 0 and 1 would be undefined as C++ bools; the format means "nonzero".
void normalize_bools(std::byte* bytes, int64_t count) {
  for (int64_t i = 0; i < count; ++i) bytes[i] = bytes[i] == std::byte{0} ? std::byte{0} : std::byte{1};
}

}  // namespace

SafetensorsFile::SafetensorsFile(std::string path, int fd, SafetensorsHeader header)
    : path_(std::move(path)), fd_(fd), header_(std::move(header)) {
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      header_(std::move(other.header_)),
      index_(std::move(other.index_)),
      bytes_read_(other.bytes_read_) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this == &other) return *this;
  if (fd_ >= 0) ::close(fd_);
  path_ = std::move(other.path_);
  fd_ = std::exchange(other.fd_, -1);
  header_ = std::move(other.header_);
  index_ = std::move(other.index_);
  bytes_read_ = other.bytes_read_;
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (fd_ >= 0) ::close(fd_);
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) throw ValueError(path + ": cannot open: " + detail::errno_text(errno));
  FdGuard owned(descriptor);
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) throw ValueError(path + ": cannot stat: " + detail::errno_text(errno));
  if (!S_ISREG(status.st_mode)) throw ValueError(path + ": not a regular file");
  const int64_t file_size = status.st_size;
  std::vector<std::byte> prefix = read_prefix(descriptor, std::min<int64_t>(8, file_size), file_size, path);
  const int64_t header_bytes = detail::safetensors_header_length(prefix, file_size, path);
  prefix = read_prefix(descriptor, 8 + header_bytes, file_size, path);
  SafetensorsHeader header = parse_safetensors_header(prefix, file_size, path);
  return SafetensorsFile(path, owned.release(), std::move(header));
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(header_.tensors.size());
  for (const TensorInfo& tensor : header_.tensors) out.push_back(tensor.name);
  return out;
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  const auto found = index_.find(name);
  if (found != index_.end()) return header_.tensors[found->second];
  throw ValueError(path_ + ": no tensor '" + name + "' among its " + std::to_string(header_.tensors.size()) +
                   " tensors" + detail::close_names_note(name, names()));
}

Tensor SafetensorsFile::read(const std::string& name) {
  const TensorInfo& tensor = info(name);
  std::vector<std::pair<int64_t, int64_t>> whole;
  for (int64_t extent : tensor.shape) whole.emplace_back(0, extent);
  return read_slice(name, whole);
}

Tensor SafetensorsFile::read_slice(const std::string& name, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  const TensorInfo& tensor = info(name);
  const DType dtype = read_dtype(tensor, path_);
  Tensor out = Tensor::empty(slice_shape(tensor, ranges, path_), dtype);
  const int64_t count = out.numel();
  if (count == 0) return out;

  // Dims after the innermost narrowed one are whole, so one run of the file covers them and the
  // narrowed dim's range; the dims before it enumerate the runs (one for an unsliced tensor).
  const int64_t ndim = static_cast<int64_t>(tensor.shape.size());
  int64_t narrowed = -1;
  for (int64_t d = ndim - 1; d >= 0 && narrowed < 0; --d) {
    if (out.size(d) != tensor.shape[static_cast<size_t>(d)]) narrowed = d;
  }
  const int64_t outer_dims = std::max<int64_t>(narrowed, 0);
  const int64_t element_bytes = detail::find_safetensors_dtype(tensor.dtype)->bits / 8;
  const Strides strides = contiguous_strides(tensor.shape);
  int64_t run_elements = 1;
  for (int64_t d = outer_dims; d < ndim; ++d) run_elements *= out.size(d);
  const int64_t run_bytes = run_elements * element_bytes;

  std::vector<uint16_t> half_staging(tensor.dtype == "F16" ? static_cast<size_t>(count) : 0);
  std::byte* destination = half_staging.empty() ? static_cast<std::byte*>(out.raw_data())
                                                : reinterpret_cast<std::byte*>(half_staging.data());
  std::vector<int64_t> index(static_cast<size_t>(outer_dims), 0);  // position among the outer dims
  for (int64_t run = 0; run < count / run_elements; ++run) {
    int64_t first_element = 0;
    for (int64_t d = 0; d < ndim; ++d) {
      const int64_t at = d < outer_dims ? index[static_cast<size_t>(d)] : 0;
      first_element += (ranges[static_cast<size_t>(d)].first + at) * strides[static_cast<size_t>(d)];
    }
    read_bytes(destination + run * run_bytes, header_.data_start + tensor.begin + first_element * element_bytes,
               run_bytes, tensor);
    for (int64_t d = outer_dims - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < out.size(d)) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  if (!half_staging.empty()) {
    float* values = out.data<float>();
    for (int64_t i = 0; i < count; ++i) values[i] = detail::half_bits_to_float(half_staging[static_cast<size_t>(i)]);
  }
  if (dtype == DType::Bool) normalize_bools(destination, count);
  return out;
}

void SafetensorsFile::read_bytes(std::byte* out, int64_t file_offset, int64_t count, const TensorInfo& tensor) {
  const int64_t got = pread_fully(fd_, out, file_offset, count);
  if (got >= 0) bytes_read_ += got;
  if (got == count) return;
  const std::string range = "bytes [" + std::to_string(file_offset) + ", " + std::to_string(file_offset + count) + ")";
  if (got < 0) {
    throw ValueError(path_ + ": tensor '" + tensor.name + "': cannot read " + range +
                     " of the file: " + detail::errno_text(static_cast<int>(-got)));
  }
  throw ValueError(path_ + ": tensor '" + tensor.name + "': the file ends at byte " +
                   std::to_string(file_offset + got) + ", inside the tensor's " + range +
                   ": it was truncated after it was opened");
}

}  // namespace px::io
