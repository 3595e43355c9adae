#include "parallax/ops/attrs.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "parallax/core/error.h"
#include "parallax/core/float_identity.h"

namespace px {

std::string_view attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::Int:
      return "int";
    case AttrType::Float:
      return "float";
    case AttrType::Bool:
      return "bool";
    case AttrType::String:
      return "str";
    case AttrType::Ints:
      return "int[]";
    case AttrType::DType:
      return "dtype";
    case AttrType::OptionalInt:
      return "int?";
  }
  return "?";
}

bool attr_matches(AttrType type, const AttrValue& value) {
  switch (type) {
    case AttrType::Int:
      return std::holds_alternative<int64_t>(value);
    case AttrType::Float:
      return std::holds_alternative<double>(value) || std::holds_alternative<int64_t>(value);
    case AttrType::Bool:
      return std::holds_alternative<bool>(value);
    case AttrType::String:
      return std::holds_alternative<std::string>(value);
    case AttrType::Ints:
      return std::holds_alternative<std::vector<int64_t>>(value);
    case AttrType::DType:
      return std::holds_alternative<DType>(value);
    case AttrType::OptionalInt:
      return std::holds_alternative<int64_t>(value) || std::holds_alternative<NoneAttr>(value);
  }
  return false;
}

namespace {

std::string float_str(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  // Shortest text that parses back to the same double.
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, end);
  // Keep floats recognizable as floats in the IR text ("2" would read back as an int).
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string attr_value_str(const AttrValue& value) {
  struct Printer {
    std::string operator()(NoneAttr) const { return "none"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return float_str(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return quoted(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ",";
        out += std::to_string(v[i]);
      }
      return out + "]";
    }
    std::string operator()(DType v) const { return std::string(dtype_name(v)); }
  };
  return std::visit(Printer{}, value);
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  for (const auto& [name, value] : items) set(name, value);
}

Attrs& Attrs::set(std::string name, AttrValue value) {
  auto it = std::find_if(items_.begin(), items_.end(), [&](const auto& item) { return item.first == name; });
  if (it != items_.end()) {
    it->second = std::move(value);
  } else {
    items_.emplace_back(std::move(name), std::move(value));
  }
  return *this;
}

bool Attrs::has(std::string_view name) const {
  return std::any_of(items_.begin(), items_.end(), [&](const auto& item) { return item.first == name; });
}

const AttrValue& Attrs::get(std::string_view name) const {
  for (const auto& [key, value] : items_) {
    if (key == name) return value;
  }
  throw ValueError("missing attribute '" + std::string(name) + "'");
}

namespace {
template <class T>
const T& get_as(const Attrs& attrs, std::string_view name, std::string_view type) {
  const AttrValue& value = attrs.get(name);
  if (const T* typed = std::get_if<T>(&value)) return *typed;
  throw ValueError("attribute '" + std::string(name) + "' is " + attr_value_str(value) + ", expected a " +
                   std::string(type));
}
}  // namespace

int64_t Attrs::get_int(std::string_view name) const { return get_as<int64_t>(*this, name, "int"); }

double Attrs::get_float(std::string_view name) const {
  const AttrValue& value = get(name);
  if (const auto* integer = std::get_if<int64_t>(&value)) return static_cast<double>(*integer);
  return get_as<double>(*this, name, "float");
}

bool Attrs::get_bool(std::string_view name) const { return get_as<bool>(*this, name, "bool"); }

const std::string& Attrs::get_string(std::string_view name) const { return get_as<std::string>(*this, name, "string"); }

const std::vector<int64_t>& Attrs::get_ints(std::string_view name) const {
  return get_as<std::vector<int64_t>>(*this, name, "list of ints");
}

DType Attrs::get_dtype(std::string_view name) const { return get_as<DType>(*this, name, "dtype"); }

std::optional<int64_t> Attrs::get_optional_int(std::string_view name) const {
  if (std::holds_alternative<NoneAttr>(get(name))) return std::nullopt;
  return get_int(name);
}

std::string Attrs::str() const {
  if (items_.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i) out += ", ";
    out += items_[i].first + "=" + attr_value_str(items_[i].second);
  }
  return out + "}";
}

bool operator==(const Attrs& a, const Attrs& b) {
  auto same_item = [](const std::pair<std::string, AttrValue>& x, const std::pair<std::string, AttrValue>& y) {
    if (x.first != y.first) return false;
    const double* dx = std::get_if<double>(&x.second);
    const double* dy = std::get_if<double>(&y.second);
    if (dx && dy) return same_double(*dx, *dy);
    return x.second == y.second;
  };
  return std::equal(a.items_.begin(), a.items_.end(), b.items_.begin(), b.items_.end(), same_item);
}

}  // namespace px
