#pragma once
// One reader for Parallax's JSON inputs (device profiles today; plans and model configs next): every
// error is a ParseError naming the source, the line and column of the value in the text, and its
// JSON path ("ParseError at 7:20: cpu.json: profile.intra_node_link.alpha_s: expected a finite
// number"). Private to the library.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json_locate.h"

namespace px {

class JsonReader;

// The ParseError for text nlohmann rejected: at the offending character, "<source>: invalid JSON:
// ..." (also for readers that keep their own DOM, such as the IOPDDL problem reader).
[[noreturn]] void throw_invalid_json(std::string_view text, const std::string& source,
                                     const nlohmann::json::parse_error& error);

// A value inside a document, with its path; valid while its reader lives.
class JsonValue {
 public:
  const nlohmann::json& raw() const { return *value_; }
  const JsonPath& path() const { return path_; }

  bool has(const std::string& key) const;
  // The member `key` of this object; an error at this object when it is missing.
  JsonValue at(const std::string& key) const;
  // at(key), which must be an object.
  JsonValue object(const std::string& key) const;
  // Member `key` as a finite number, an integer, or a string.
  double number(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  std::string text(const std::string& key) const;
  // This object's members, by key.
  std::vector<std::pair<std::string, JsonValue>> members() const;

  // A ParseError at this value, or at its member `key` (at this value when there is none).
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_at(const std::string& key, const std::string& message) const;

 private:
  friend class JsonReader;
  JsonValue(const JsonReader* reader, const nlohmann::json* value, JsonPath path)
      : reader_(reader), value_(value), path_(std::move(path)) {}
  JsonPath member_path(const std::string& key) const;

  const JsonReader* reader_;
  const nlohmann::json* value_;
  JsonPath path_;
};

class JsonReader {
 public:
  // Parses `text`; a ParseError at the offending character for text that is not JSON. Paths in
  // messages start with `root_name` ("profile").
  JsonReader(std::string text, std::string source, std::string root_name);
  JsonReader(const JsonReader&) = delete;
  JsonReader& operator=(const JsonReader&) = delete;

  JsonValue root() const { return JsonValue(this, &json_, {}); }
  [[noreturn]] void fail(const JsonPath& path, const std::string& message) const;

 private:
  std::string text_;
  std::string source_;
  std::string root_name_;
  nlohmann::json json_;
};

}  // namespace px
