#include "core/json_reader.h"

#include <cmath>

#include "parallax/core/error.h"

namespace px {

void throw_invalid_json(std::string_view text, const std::string& source, const nlohmann::json::parse_error& error) {
  const TextPosition at = text_position(text, error.byte == 0 ? 0 : error.byte - 1);
  // nlohmann's what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
  std::string what = error.what();
  const size_t colon = what.find(": ");
  if (colon != std::string::npos) what = what.substr(colon + 2);
  throw ParseError(source + ": invalid JSON: " + what, at.line, at.column);
}

JsonReader::JsonReader(std::string text, std::string source, std::string root_name)
    : text_(std::move(text)), source_(std::move(source)), root_name_(std::move(root_name)) {
  try {
    json_ = nlohmann::json::parse(text_);
  } catch (const nlohmann::json::parse_error& error) {
    throw_invalid_json(text_, source_, error);
  }
}

void JsonReader::fail(const JsonPath& path, const std::string& message) const {
  const TextPosition at = text_position(text_, locate_json_path(text_, path));
  std::string where = root_name_;
  if (!path.empty()) {
    const std::string rest = json_path_text(path);
    where += std::holds_alternative<size_t>(path.front()) ? rest : "." + rest;
  }
  throw ParseError(source_ + ": " + where + ": " + message, at.line, at.column);
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

double JsonValue::number(const std::string& key) const {
  const JsonValue member = at(key);
  if (!member.raw().is_number() || !std::isfinite(member.raw().get<double>())) member.fail("expected a finite number");
  return member.raw().get<double>();
}

int64_t JsonValue::integer(const std::string& key) const {
  const JsonValue member = at(key);
  if (!member.raw().is_number_integer()) member.fail("expected an integer");
  return member.raw().get<int64_t>();
}

std::string JsonValue::text(const std::string& key) const {
  const JsonValue member = at(key);
  if (!member.raw().is_string()) member.fail("expected a string");
  return member.raw().get<std::string>();
}

std::vector<std::pair<std::string, JsonValue>> JsonValue::members() const {
  if (!value_->is_object()) fail("expected an object");
  std::vector<std::pair<std::string, JsonValue>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    out.emplace_back(it.key(), JsonValue(reader_, &it.value(), member_path(it.key())));
  }
  return out;
}

void JsonValue::fail(const std::string& message) const { reader_->fail(path_, message); }

void JsonValue::fail_at(const std::string& key, const std::string& message) const {
  if (has(key)) reader_->fail(member_path(key), message);
  reader_->fail(path_, message);
}

}  // namespace px
