#pragma once
// Pieces the safetensors reader, writer and header parser share.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/core/dtype.h"
#include "parallax/core/error.h"
#include "parallax/core/shape.h"
#include "parallax/io/safetensors.h"

namespace px::io::detail {

// Safetensors data is little-endian; Parallax stores tensors in native order, so it copies
// bytes straight through rather than swapping them.
static_assert(std::endian::native == std::endian::little,
              "the safetensors reader and writer copy tensor bytes as they are: they need a little-endian host");

struct SafetensorsDType {
  std::string_view name;
  int64_t bits;                  // F4 and F6 pack elements below a byte
  std::optional<DType> px_type;  // what read() makes of it, if anything (F16 is widened apart)
};

// The dtype named `name`, or nullptr for a name the format does not define.
const SafetensorsDType* find_safetensors_dtype(std::string_view name);
// "F32", "F64", ... for the dtype a Parallax tensor is stored as natively.
std::string_view safetensors_dtype_name(DType dtype);

// N, the header length that the file's first 8 bytes give, once checked against the limit and
// the file's size; ValueError naming `where` otherwise (or when the file is under 8 bytes).
int64_t safetensors_header_length(std::span<const std::byte> file_prefix, int64_t file_size, const std::string& where);

// The system's text for an errno value, for messages about a file.
std::string errno_text(int error);

// "[4, 8]", the way error messages print shapes and offsets.
std::string list_text(const std::vector<int64_t>& values);

// "; close names: 'a', 'b'" with up to three of `candidates` near `name` (edit distance), or "".
std::string close_names_note(const std::string& name, const std::vector<std::string>& candidates);

// IEEE binary16 bits -> float, exactly (subnormals, infinities and NaN included).
float half_bits_to_float(uint16_t bits);
// `value` rounded to nearest even into a 16-bit float with `exponent_bits` and `mantissa_bits`
// (5 and 10: binary16; 8 and 7: bfloat16), straight from double so that there is one rounding.
// Beyond the range gives +-inf; NaN stays a quiet NaN.
uint16_t round_to_narrow_float(double value, int exponent_bits, int mantissa_bits);

}  // namespace px::io::detail
