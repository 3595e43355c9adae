// The JSON reader every JSON input goes through: each error is a ParseError with the line and
// column of the offending text.

#include "core/json_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "parallax/core/error.h"

namespace px {
namespace {

ParseError parse_error_of(const std::string& text) {
  try {
    parse_json(text, "in.json");
  } catch (const ParseError& error) {
    return error;
  }
  ADD_FAILURE() << "no ParseError for " << text;
  return ParseError("", 0, 0);
}

TEST(JsonReader, SyntaxErrorsNameLineAndColumn) {
  const ParseError error = parse_error_of("{\"a\": 1,\n \"b\": [1, 2,]}");
  EXPECT_EQ(error.line(), 2);
  EXPECT_EQ(error.column(), 13);  // the "]" that follows the trailing comma
  EXPECT_EQ(error.detail().rfind("in.json: invalid JSON: ", 0), 0u) << error.what();
}

// nlohmann raises out_of_range (not parse_error) for a number beyond a double's range; it must
// still arrive as a ParseError at the number (found by fuzzing the plan and problem readers).
TEST(JsonReader, NumberOverflowIsAParseErrorAtTheNumber) {
  const ParseError error = parse_error_of("{\"cost\": [1,\n  2.5e999]}");
  EXPECT_EQ(error.line(), 2);
  EXPECT_EQ(error.column(), 3);
  EXPECT_NE(error.detail().find("in.json: invalid JSON: number overflow parsing '2.5e999'"), std::string::npos)
      << error.what();
  EXPECT_THROW(JsonReader("[1e400]", "in.json", "doc"), ParseError);
}

TEST(JsonReader, ValueErrorsNameTheJsonPath) {
  const JsonReader reader("{\"a\": {\"b\": \"x\"}}", "in.json", "doc");
  try {
    reader.root().object("a").integer("b");
    FAIL() << "a string read as an integer";
  } catch (const ParseError& error) {
    EXPECT_EQ(error.line(), 1);
    EXPECT_EQ(error.column(), 13);
    EXPECT_NE(error.detail().find("in.json: doc.a.b: "), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace px
