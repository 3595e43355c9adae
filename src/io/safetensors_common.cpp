#include <algorithm>
#include <cstring>
#include <system_error>

#include "io/safetensors_detail.h"
#include "parallax/core/edit_distance.h"

namespace px::io::detail {

namespace {

// Every dtype of the format (safetensors 0.6), including those Parallax cannot hold: a file is
// valid with them, and only reading such a tensor is refused.
constexpr SafetensorsDType kDTypes[] = {
    {"BOOL", 8, DType::Bool},      {"U8", 8, std::nullopt},      {"I8", 8, std::nullopt},
    {"I16", 16, std::nullopt},     {"U16", 16, std::nullopt},    {"F16", 16, std::nullopt},
    {"BF16", 16, DType::BFloat16}, {"I32", 32, std::nullopt},    {"U32", 32, std::nullopt},
    {"F32", 32, DType::Float32},   {"F64", 64, DType::Float64},  {"I64", 64, DType::Int64},
    {"U64", 64, std::nullopt},     {"C64", 64, std::nullopt},    {"F8_E4M3", 8, std::nullopt},
    {"F8_E5M2", 8, std::nullopt},  {"F8_E8M0", 8, std::nullopt}, {"F6_E2M3", 6, std::nullopt},
    {"F6_E3M2", 6, std::nullopt},  {"F4", 4, std::nullopt},
};

}  // namespace

std::string errno_text(int error) { return std::generic_category().message(error); }

const SafetensorsDType* find_safetensors_dtype(std::string_view name) {
  for (const SafetensorsDType& dtype : kDTypes) {
    if (dtype.name == name) return &dtype;
  }
  return nullptr;
}

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Int64:
      return "I64";
    case DType::Bool:
      return "BOOL";
    case DType::BFloat16:
      return "BF16";
  }
  return "F32";
}

int64_t safetensors_header_length(std::span<const std::byte> file_prefix, int64_t file_size, const std::string& where) {
  if (file_size < 8 || file_prefix.size() < 8) {
    throw ValueError(where + ": the file is " + std::to_string(file_size) +
                     " bytes, too short for the 8-byte header length a safetensors file starts with");
  }
  uint64_t length = 0;
  std::memcpy(&length, file_prefix.data(), sizeof(length));  // little-endian, as the host (asserted)
  if (length > static_cast<uint64_t>(kMaxSafetensorsHeaderBytes)) {
    throw ValueError(where + ": header length " + std::to_string(length) + " is over the limit of " +
                     std::to_string(kMaxSafetensorsHeaderBytes) + " bytes (a corrupt file, or not safetensors)");
  }
  if (static_cast<int64_t>(length) > file_size - 8) {
    throw ValueError(where + ": header length " + std::to_string(length) + " runs past the end of the file (" +
                     std::to_string(file_size) + " bytes): the file is truncated, or not safetensors");
  }
  return static_cast<int64_t>(length);
}

std::string list_text(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string close_names_note(const std::string& name, const std::vector<std::string>& candidates) {
  std::vector<std::pair<size_t, const std::string*>> scored;
  const size_t tolerance = std::max<size_t>(2, name.size() / 3);
  for (const std::string& candidate : candidates) {
    // Lengths alone rule most names out, which keeps this cheap on checkpoints of 100k tensors.
    if (std::max(candidate.size(), name.size()) - std::min(candidate.size(), name.size()) > tolerance) continue;
    const size_t distance = edit_distance(name, candidate);
    if (distance <= tolerance) scored.emplace_back(distance, &candidate);
  }
  if (scored.empty()) return "";
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out = "; close names:";
  for (size_t i = 0; i < scored.size() && i < 3; ++i) out += (i ? ", '" : " '") + *scored[i].second + "'";
  return out;
}

float half_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float (whose normals reach 2^-126).
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  uint32_t wide = sign | (mantissa << 13);
  wide |= exponent == 0x1fu ? 0x7f800000u : (exponent - 15 + 127) << 23;  // inf/NaN keep their payload
  float out;
  std::memcpy(&out, &wide, sizeof(out));
  return out;
}

uint16_t round_to_narrow_float(double value, int exponent_bits, int mantissa_bits) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t sign = static_cast<uint32_t>(bits >> 63) << (exponent_bits + mantissa_bits);
  const int exponent_field = static_cast<int>((bits >> 52) & 0x7ff);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  const uint32_t max_exponent = (1u << exponent_bits) - 1;
  const uint32_t infinity = max_exponent << mantissa_bits;
  if (exponent_field == 0x7ff) {
    if (fraction == 0) return static_cast<uint16_t>(sign | infinity);
    return static_cast<uint16_t>(sign | infinity | (1u << (mantissa_bits - 1)));  // a quiet NaN
  }
  // Double's own subnormals are far below the smallest narrow subnormal (2^-133 for bfloat16).
  if (exponent_field == 0) return static_cast<uint16_t>(sign);
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int exponent = exponent_field - 1023;
  if (exponent > bias) return static_cast<uint16_t>(sign | infinity);
  // The significand with its implicit bit, shifted so that what is left is the narrow encoding
  // (for a subnormal, shifted further right by how far the exponent is below the normal range).
  const uint64_t significand = fraction | (uint64_t{1} << 52);
  const bool normal = exponent >= 1 - bias;
  const int shift = 52 - mantissa_bits + (normal ? 0 : 1 - bias - exponent);
  if (shift > 53) return static_cast<uint16_t>(sign);  // under half the smallest subnormal
  uint64_t encoded =
      normal ? (static_cast<uint64_t>(exponent + bias) << mantissa_bits) | (fraction >> shift) : significand >> shift;
  const uint64_t remainder = (normal ? fraction : significand) & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  // A carry out of the mantissa bumps the exponent, which is right, up to infinity.
  if (remainder > halfway || (remainder == halfway && (encoded & 1))) ++encoded;
  return static_cast<uint16_t>(sign | encoded);
}

}  // namespace px::io::detail
