#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace px {

enum class DType : uint8_t { Float32, Float64, Int64, Bool, BFloat16 };

inline constexpr DType kAllDTypes[] = {DType::Float32, DType::Float64, DType::Int64, DType::Bool, DType::BFloat16};

int64_t dtype_size(DType dtype);
// Short names used in printing and the IR text format: f32, f64, i64, bool, bf16.
std::string_view dtype_name(DType dtype);
// Inverse of dtype_name; throws ValueError on an unknown name.
DType parse_dtype(std::string_view name);
bool is_floating(DType dtype);

// bfloat16 is a storage type: values convert to float32 for computing.
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float value) : bits(round_to_bf16(value)) {}
  explicit operator float() const {
    uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float out;
    std::memcpy(&out, &wide, sizeof(out));
    return out;
  }

 private:
  static uint16_t round_to_bf16(float value) {
    uint32_t wide;
    std::memcpy(&wide, &value, sizeof(wide));
    if ((wide & 0x7f800000u) == 0x7f800000u && (wide & 0x007fffffu) != 0) {
      return static_cast<uint16_t>((wide >> 16) | 0x40u);  // keep NaN a (quiet) NaN
    }
    uint32_t rounding_bias = 0x7fffu + ((wide >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>((wide + rounding_bias) >> 16);
  }
};

// The C++ type that stores each dtype.
// One line per dtype: the table reads as one.
// clang-format off
template <DType D> struct DTypeStorage;
template <> struct DTypeStorage<DType::Float32> { using type = float; };
template <> struct DTypeStorage<DType::Float64> { using type = double; };
template <> struct DTypeStorage<DType::Int64> { using type = int64_t; };
template <> struct DTypeStorage<DType::Bool> { using type = bool; };
template <> struct DTypeStorage<DType::BFloat16> { using type = BFloat16; };

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::BFloat16; }
// clang-format on

// Calls fn(T{}) with T the storage type of dtype.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(float{});
    case DType::Float64:
      return fn(double{});
    case DType::Int64:
      return fn(int64_t{});
    case DType::Bool:
      return fn(bool{});
    case DType::BFloat16:
      return fn(BFloat16{});
  }
  return fn(float{});
}

}  // namespace px
