#pragma once
// Op attributes: the non-tensor arguments of an op (dims, scalars, flags),
// typed, ordered as the op's schema declares them, printable and comparable.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "parallax/core/dtype.h"

namespace px {

enum class AttrType : uint8_t { Int, Float, Bool, String, Ints, DType, OptionalInt };

struct NoneAttr {
  friend bool operator==(const NoneAttr&, const NoneAttr&) = default;
};

using AttrValue = std::variant<NoneAttr, int64_t, double, bool, std::string, std::vector<int64_t>, DType>;

std::string_view attr_type_name(AttrType type);
// True if `value` is acceptable for an attribute of `type` (an Int is accepted for a Float).
bool attr_matches(AttrType type, const AttrValue& value);
// IR text form: 3, 1.5, true, "mean", [0,1], f32, none. Floats print so they parse back exactly.
std::string attr_value_str(const AttrValue& value);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items);

  Attrs& set(std::string name, AttrValue value);
  bool has(std::string_view name) const;
  const AttrValue& get(std::string_view name) const;  // throws ValueError when missing

  int64_t get_int(std::string_view name) const;
  double get_float(std::string_view name) const;  // accepts an Int
  bool get_bool(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  DType get_dtype(std::string_view name) const;
  std::optional<int64_t> get_optional_int(std::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  // "{dims=[0], keepdim=true}" (empty string when there are none)
  std::string str() const;
  // Same names, order and values; doubles compare with same_double (core/float_identity.h), so an
  // op with a NaN attribute equals its own copy and one with -0.0 differs from one with 0.0.
  friend bool operator==(const Attrs& a, const Attrs& b);

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace px
