// The safetensors header parser: every rule of the format is checked here, once, so the reader
// can trust offsets and sizes (and a fuzzer can drive it on a byte buffer).

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>

#include "io/safetensors_detail.h"
#include "parallax/io/safetensors.h"

namespace px::io {

namespace {

using Json = nlohmann::ordered_json;

// Root object -> tensor entry -> shape or data_offsets: nothing valid nests deeper.
constexpr int kMaxHeaderDepth = 3;
constexpr std::string_view kMetadataKey = "__metadata__";

class HeaderError {
 public:
  explicit HeaderError(const std::string& where) : where_(where) {}
  [[noreturn]] void operator()(const std::string& what) const { throw ValueError(where_ + ": " + what); }
  [[noreturn]] void operator()(const std::string& tensor, const std::string& what) const {
    throw ValueError(where_ + ": tensor '" + tensor + "': " + what);
  }

 private:
  const std::string& where_;
};

// A JSON value for a message, cut short: a corrupt header may hold megabytes in one value.
std::string json_text(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

// nlohmann keeps the last of duplicate keys without a word, and the format forbids them; the
// callback also stops nesting at the depth a header can have, before a deep document is built.
Json parse_json(std::string_view text, const HeaderError& fail) {
  std::vector<std::set<std::string>> keys_of_open_objects;
  int depth = 0;
  auto check = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        if (++depth > kMaxHeaderDepth) fail("header JSON nests deeper than a safetensors header can");
        if (event == Json::parse_event_t::object_start) keys_of_open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        keys_of_open_objects.pop_back();
        --depth;
        break;
      case Json::parse_event_t::array_end:
        --depth;
        break;
      case Json::parse_event_t::key:
        if (!keys_of_open_objects.back().insert(parsed.get<std::string>()).second) {
          fail("header JSON has the key '" + parsed.get<std::string>() + "' twice in one object");
        }
        break;
      case Json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check);
  } catch (const Json::exception& error) {
    fail(std::string("header is not valid JSON: ") + error.what());
  }
}

// A non-negative integer that fits int64 (shape extents, offsets), or nothing.
std::optional<int64_t> as_count(const Json& value) {
  if (value.is_number_unsigned()) {
    const auto count = value.get<uint64_t>();
    if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(count);
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<int64_t>();
  return std::nullopt;
}

std::vector<int64_t> count_array(const Json& entry, const char* key, const std::string& name, const HeaderError& fail) {
  const Json& array = entry.at(key);
  if (!array.is_array()) fail(name, std::string("'") + key + "' is " + json_text(array) + ", not an array");
  std::vector<int64_t> out;
  for (size_t i = 0; i < array.size(); ++i) {
    const std::optional<int64_t> count = as_count(array[i]);
    if (!count) {
      fail(name, std::string(key) + "[" + std::to_string(i) + "] is " + json_text(array[i]) +
                     ", not a non-negative 64-bit integer");
    }
    out.push_back(*count);
  }
  return out;
}

// The bytes `shape` of `dtype` take, or a message saying why there is no such number. The
// product of the extents is checked with zeros counted as ones, so that no later product over
// the shape, in any order, can overflow either.
int64_t tensor_nbytes(const detail::SafetensorsDType& dtype, const Shape& shape, const std::string& name,
                      const HeaderError& fail) {
  int64_t bound = dtype.bits;
  for (int64_t extent : shape) {
    if (__builtin_mul_overflow(bound, std::max<int64_t>(extent, 1), &bound)) {
      fail(name, std::string(dtype.name) + " " + detail::list_text(shape) + " has more bytes than 64 bits can count");
    }
  }
  const int64_t bits = std::accumulate(shape.begin(), shape.end(), dtype.bits, std::multiplies<int64_t>());
  if (bits % 8 != 0) {
    fail(name, std::string(dtype.name) + " " + detail::list_text(shape) + " is " + std::to_string(bits) +
                   " bits, not a whole number of bytes");
  }
  return bits / 8;
}

TensorInfo parse_entry(const std::string& name, const Json& entry, const HeaderError& fail) {
  if (!entry.is_object()) fail(name, "entry is " + json_text(entry) + ", not an object {dtype, shape, data_offsets}");
  for (const auto& [key, value] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail(name, "unexpected key '" + key + "' (an entry has exactly dtype, shape and data_offsets)");
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) fail(name, std::string("no '") + key + "' in the entry");
  }
  const Json& dtype_json = entry.at("dtype");
  if (!dtype_json.is_string()) fail(name, "dtype is " + json_text(dtype_json) + ", not a string");
  TensorInfo info;
  info.name = name;
  info.dtype = dtype_json.get<std::string>();
  const detail::SafetensorsDType* dtype = detail::find_safetensors_dtype(info.dtype);
  if (dtype == nullptr) fail(name, "unknown dtype '" + info.dtype + "'");
  info.shape = count_array(entry, "shape", name, fail);
  const std::vector<int64_t> offsets = count_array(entry, "data_offsets", name, fail);
  if (offsets.size() != 2) fail(name, "data_offsets " + detail::list_text(offsets) + " is not [begin, end]");
  info.begin = offsets[0];
  info.end = offsets[1];
  if (info.end < info.begin) fail(name, "data_offsets " + detail::list_text(offsets) + " end before they begin");
  const int64_t needed = tensor_nbytes(*dtype, info.shape, name, fail);
  if (info.nbytes() != needed) {
    fail(name, "data_offsets " + detail::list_text(offsets) + " span " + std::to_string(info.nbytes()) + " bytes but " +
                   info.dtype + " " + detail::list_text(info.shape) + " needs " + std::to_string(needed));
  }
  return info;
}

std::map<std::string, std::string> parse_metadata(const Json& metadata, const HeaderError& fail) {
  if (!metadata.is_object()) fail("__metadata__ is " + json_text(metadata) + ", not an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string())
      fail("__metadata__['" + key + "'] is " + json_text(value) + "; metadata values are strings");
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// The format's layout rule: sorted by offset, the tensors tile the data buffer from its first
// byte to its last, so there is no byte two tensors share and none that no tensor owns.
void check_tiling(std::vector<TensorInfo>& tensors, int64_t buffer_bytes, const HeaderError& fail) {
  for (const TensorInfo& tensor : tensors) {
    if (tensor.end > buffer_bytes) {
      fail(tensor.name, "data_offsets " + detail::list_text({tensor.begin, tensor.end}) +
                            " end past the data buffer, which is " + std::to_string(buffer_bytes) +
                            " bytes: the file is truncated or its header lies");
    }
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  int64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& tensor : tensors) {
    if (tensor.begin > covered) {
      fail("bytes [" + std::to_string(covered) + ", " + std::to_string(tensor.begin) +
           ") of the data buffer belong to no tensor (a hole before tensor '" + tensor.name + "')");
    }
    if (tensor.begin < covered) {
      fail("tensors '" + previous->name + "' " + detail::list_text({previous->begin, previous->end}) + " and '" +
           tensor.name + "' " + detail::list_text({tensor.begin, tensor.end}) + " overlap");
    }
    covered = tensor.end;
    previous = &tensor;
  }
  if (covered != buffer_bytes) {
    fail("the data buffer is " + std::to_string(buffer_bytes) + " bytes but the tensors cover " +
         std::to_string(covered) + " (" + std::to_string(buffer_bytes - covered) +
         " bytes after the last tensor belong to none)");
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::span<const std::byte> file_prefix, int64_t file_size,
                                           const std::string& where) {
  const HeaderError fail(where);
  const int64_t header_bytes = detail::safetensors_header_length(file_prefix, file_size, where);
  if (static_cast<int64_t>(file_prefix.size()) - 8 < header_bytes) {
    fail("only " + std::to_string(file_prefix.size()) + " bytes of the file were given to parse its " +
         std::to_string(header_bytes) + "-byte header");
  }
  const std::string_view text(reinterpret_cast<const char*>(file_prefix.data()) + 8, static_cast<size_t>(header_bytes));
  // The reference implementation requires this too: it rejects a byte-order mark or a padding
  // of spaces in front, which JSON itself would skip.
  if (text.empty() || text.front() != '{') fail("the header does not start with '{'");
  const Json header = parse_json(text, fail);
  if (!header.is_object()) fail("the header is " + json_text(header) + ", not a JSON object");

  SafetensorsHeader out;
  out.data_start = 8 + header_bytes;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      out.metadata = parse_metadata(value, fail);
    } else {
      out.tensors.push_back(parse_entry(key, value, fail));
    }
  }
  check_tiling(out.tensors, file_size - out.data_start, fail);
  return out;
}

}  // namespace px::io
