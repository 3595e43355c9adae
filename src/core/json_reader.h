#pragma once
// One reader for Parallax's JSON inputs (device profiles, plans, model configs): every
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

// Parses `text` (also for readers that keep their own DOM, such as the IOPDDL problem reader).
// Anything nlohmann rejects while parsing (bad syntax, a number beyond a double's range) is a
// ParseError at the offending text: "<source>: invalid JSON: ...".
nlohmann::json parse_json(std::string_view text, const std::string& source);

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
  // This value as a finite number, an integer, a string or a boolean; an error at it otherwise.
  double as_number() const;
  int64_t as_integer() const;
  std::string as_text() const;
  bool as_bool() const;
  // Member `key` as one of the above.
  double number(const std::string& key) const { return at(key).as_number(); }
  int64_t integer(const std::string& key) const { return at(key).as_integer(); }
  std::string text(const std::string& key) const { return at(key).as_text(); }
  bool boolean(const std::string& key) const { return at(key).as_bool(); }
  // This object's members, by key.
  std::vector<std::pair<std::string, JsonValue>> members() const;
  // This array's elements; an error at this value when it is not an array.
  std::vector<JsonValue> elements() const;
  // Member `key`, which must be an array, as its elements.
  std::vector<JsonValue> array(const std::string& key) const { return at(key).elements(); }

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
  // messages start with `root_name` ("profile"; "" for paths from the top: "n_layer", "[2].name").
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
