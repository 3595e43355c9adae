#include "core/json_reader.h"

#include <cmath>
#include <cstdint>

#include "parallax/core/error.h"

namespace px {

namespace {

// nlohmann's what() is "[json.exception.<kind>.<id>] <message>"; the message alone.
std::string nlohmann_message(const nlohmann::json::exception& error) {
  std::string what = error.what();
  const size_t close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    const TextPosition at = text_position(text, error.byte == 0 ? 0 : error.byte - 1);
    std::string message = nlohmann_message(error);
    // "parse error at line 1, column 2: syntax error ...": the position is ours to print.
    if (const size_t colon = message.find(": "); colon != std::string::npos) message = message.substr(colon + 2);
    throw ParseError(source + ": invalid JSON: " + message, at.line, at.column);
  } catch (const nlohmann::json::exception& error) {
    // Raised while parsing without a position (out_of_range.406, "number overflow parsing
    // '1e999'"): the position is the quoted token's first place in the text.
    const std::string message = nlohmann_message(error);
    size_t offset = 0;
    const size_t open = message.find('\'');
    const size_t close = message.rfind('\'');
    if (open != std::string::npos && close > open) {
      const size_t found = text.find(message.substr(open + 1, close - open - 1));
      if (found != std::string_view::npos) offset = found;
    }
    const TextPosition at = text_position(text, offset);
    throw ParseError(source + ": invalid JSON: " + message, at.line, at.column);
  }
}

JsonReader::JsonReader(std::string text, std::string source, std::string root_name)
    : text_(std::move(text)),
      source_(std::move(source)),
      root_name_(std::move(root_name)),
      json_(parse_json(text_, source_)) {}

void JsonReader::fail(const JsonPath& path, const std::string& message) const {
  const TextPosition at = text_position(text_, locate_json_path(text_, path));
  std::string where = root_name_;
  if (!path.empty()) {
    const std::string rest = json_path_text(path);
    where += where.empty() || std::holds_alternative<size_t>(path.front()) ? rest : "." + rest;
  }
  throw ParseError(source_ + ": " + (where.empty() ? "" : where + ": ") + message, at.line, at.column);
}

JsonPath JsonValue::member_path(const std::string& key) const {
  JsonPath path = path_;
  path.emplace_back(key);
  return path;
}

bool JsonValue::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonValue JsonValue::at(const std::string& key) const {
  if (!value_->is_object()) fail("expected an object");
  const auto it = value_->find(key);
  if (it == value_->end()) fail("missing \"" + key + "\"");
  return JsonValue(reader_, &*it, member_path(key));
}

JsonValue JsonValue::object(const std::string& key) const {
  JsonValue member = at(key);
  if (!member.raw().is_object()) member.fail("expected an object");
  return member;
}

double JsonValue::as_number() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>())) fail("expected a finite number");
  return value_->get<double>();
}

int64_t JsonValue::as_integer() const {
  if (!value_->is_number_integer()) fail("expected an integer");
  if (value_->is_number_unsigned() && value_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    fail("expected an integer, got one beyond 2^63 - 1");
  }
  return value_->get<int64_t>();
}

std::string JsonValue::as_text() const {
  if (!value_->is_string()) fail("expected a string");
  return value_->get<std::string>();
}

bool JsonValue::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false");
  return value_->get<bool>();
}

std::vector<std::pair<std::string, JsonValue>> JsonValue::members() const {
  if (!value_->is_object()) fail("expected an object");
  std::vector<std::pair<std::string, JsonValue>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    out.emplace_back(it.key(), JsonValue(reader_, &it.value(), member_path(it.key())));
  }
  return out;
}

std::vector<JsonValue> JsonValue::elements() const {
  if (!value_->is_array()) fail("expected an array");
  std::vector<JsonValue> out;
  for (size_t k = 0; k < value_->size(); ++k) {
    JsonPath path = path_;
    path.emplace_back(k);
    out.push_back(JsonValue(reader_, &(*value_)[k], std::move(path)));
  }
  return out;
}

void JsonValue::fail(const std::string& message) const { reader_->fail(path_, message); }

void JsonValue::fail_at(const std::string& key, const std::string& message) const {
  if (has(key)) reader_->fail(member_path(key), message);
  reader_->fail(path_, message);
}

}  // namespace px
