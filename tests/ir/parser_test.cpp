#include "parallax/ir/parser.h"

#include <gtest/gtest.h>

#include "ir/ir_test_util.h"
#include "parallax/ir/printer.h"
#include "parallax/ir/verifier.h"

namespace px::ir {
namespace {

using testing::f32;
using testing::Ints;
using testing::op;

struct Located {
  int64_t line = 0;
  int64_t column = 0;
  std::string message;
};

Located parse_failure(std::string_view text, const Registry& registry = builtin_registry()) {
  try {
    parse(text, registry);
  } catch (const ParseError& error) {
    return {error.line(), error.column(), error.what()};
  }
  ADD_FAILURE() << "parsed without error:\n" << text;
  return {};
}

// A one-input graph whose body is `body` (line 2 onward).
std::string graph_with(const std::string& body) { return "graph g(%0: f32[4] \"x\") {\n" + body + "\n}\n"; }

void expect_error(const std::string& text, int64_t line, int64_t column, const std::string& expected) {
  Located got = parse_failure(text);
  EXPECT_EQ(got.line, line) << got.message;
  EXPECT_EQ(got.column, column) << got.message;
  EXPECT_NE(got.message.find(expected), std::string::npos) << "message: " << got.message << "\nexpected: " << expected;
  std::string location = "ParseError at " + std::to_string(line) + ":" + std::to_string(column) + ": ";
  EXPECT_EQ(got.message.rfind(location, 0), 0u) << got.message;
}

TEST(Parser, ParsesAGraph) {
  Graph graph = parse(R"(
# a comment before the graph
graph mlp(%0: f32[8,4] "x", %1: f32[4,16] "w1") {   # trailing comment
  %2 = matmul(%0, %1) : f32[8,16]
  %4, %5 = split(%2) {sizes=[8,8], dim=1} : f32[8,8], f32[8,8] @ "layers.0.mlp" backward
  return %4, %5
}
)");
  EXPECT_EQ(graph.name(), "mlp");
  EXPECT_EQ(graph.inputs(), (std::vector<ValueId>{0, 1}));
  EXPECT_EQ(graph.value(1).name, "w1");
  ASSERT_EQ(graph.nodes().size(), 2u);
  EXPECT_EQ(graph.nodes()[0].op, &op("matmul"));
  EXPECT_EQ(graph.nodes()[1].attrs, (Attrs{{"sizes", Ints{8, 8}}, {"dim", int64_t{1}}}));
  EXPECT_EQ(graph.nodes()[1].provenance, (Provenance{"layers.0.mlp", Phase::Backward}));
  EXPECT_EQ(graph.meta(5), f32({8, 8}));
  EXPECT_EQ(graph.outputs(), (std::vector<ValueId>{4, 5}));
  // Ids are kept as written (%3 is never defined), so the text round-trips.
  EXPECT_FALSE(graph.has_value(3));
  EXPECT_EQ(print(parse(print(graph))), print(graph));
}

TEST(Parser, FillsDefaultsAndNormalizesAttributeOrder) {
  Graph graph =
      parse(graph_with("  %1 = sum(%0) {keepdim=true} : f32[1]\n  %2 = mul_scalar(%0) {scalar=2} : f32[4]\n"
                       "  return %1, %2"));
  EXPECT_EQ(graph.nodes()[0].attrs, (Attrs{{"dims", Ints{}}, {"keepdim", true}}));
  EXPECT_EQ(graph.nodes()[1].attrs, (Attrs{{"scalar", 2.0}}));
  EXPECT_NE(print(graph).find("%1 = sum(%0) {dims=[], keepdim=true} : f32[1]"), std::string::npos);
  EXPECT_NE(print(graph).find("{scalar=2.0}"), std::string::npos);
}

TEST(Parser, EmptyGraphAndCompactWhitespace) {
  Graph graph = parse("graph e(){return}");
  EXPECT_EQ(graph.name(), "e");
  EXPECT_TRUE(graph.nodes().empty());
  EXPECT_EQ(print(graph), "graph e() {\n  return\n}\n");
  Graph compact = parse("graph g(%0:f32[2]){%1=exp(%0):f32[2] return %1,%0}");
  EXPECT_EQ(compact.outputs(), (std::vector<ValueId>{1, 0}));
}

TEST(Parser, UnknownOpIsNamed) {
  expect_error(graph_with("  %1 = frobnicate(%0) : f32[4]\n  return %1"), 2, 8, "unknown op 'frobnicate'");
}

TEST(Parser, UsesTheGivenRegistry) {
  Registry registry;
  registry.add(op("exp"));
  Graph graph = parse(graph_with("  %1 = exp(%0) : f32[4]\n  return %1"), registry);
  EXPECT_EQ(graph.nodes()[0].op, registry.find("exp"));
  Located got = parse_failure(graph_with("  %1 = neg(%0) : f32[4]\n  return %1"), registry);
  EXPECT_EQ(got.line, 2);
  EXPECT_NE(got.message.find("unknown op 'neg'"), std::string::npos);
}

TEST(Parser, UnknownAttributeIsLocated) {
  expect_error(graph_with("  %1 = sum(%0) {dimz=[0]} : f32[]\n  return %1"), 2, 17,
               "unknown attribute 'dimz' for op sum(");
}

TEST(Parser, WrongAttributeTypeIsLocated) {
  expect_error(graph_with("  %1 = sum(%0) {dims=1} : f32[]\n  return %1"), 2, 22,
               "attribute 'dims' of sum expects int[], got 1");
  expect_error(graph_with("  %1 = sum(%0) {keepdim=\"yes\"} : f32[]\n  return %1"), 2, 25,
               "attribute 'keepdim' of sum expects bool, got \"yes\"");
  expect_error(graph_with("  %1 = sum(%0) {dims=[0], dims=[0]} : f32[]\n  return %1"), 2, 27,
               "attribute 'dims' is given twice");
  expect_error(graph_with("  %1 = sum(%0) {dims=[0.5]} : f32[]\n  return %1"), 2, 23, "expected an integer");
  expect_error(graph_with("  %1 = sum(%0) {dims=maybe} : f32[]\n  return %1"), 2, 22,
               "unexpected 'maybe' as an attribute value");
}

TEST(Parser, MissingRequiredAttributeAndInputCountPointAtTheOp) {
  expect_error(graph_with("  %1 = transpose(%0) : f32[4]\n  return %1"), 2, 8,
               "transpose: missing required attribute 'dim0'");
  expect_error(graph_with("  %1 = exp(%0, %0) : f32[4]\n  return %1"), 2, 8, "exp: expected 1 tensor inputs, got 2");
}

TEST(Parser, UndefinedValue) {
  expect_error(graph_with("  %1 = exp(%7) : f32[4]\n  return %1"), 2, 12, "use of undefined value %7");
  expect_error(graph_with("  %1 = exp(%1) : f32[4]\n  return %1"), 2, 12, "use of undefined value %1");
  expect_error(graph_with("  %1 = exp(%0) : f32[4]\n  return %1, %2"), 3, 14, "use of undefined value %2");
}

TEST(Parser, RedefinedValue) {
  expect_error(graph_with("  %0 = exp(%0) : f32[4]\n  return %0"), 2, 3, "redefinition of value %0");
  expect_error("graph g(%0: f32[4], %0: f32[4]) {\n  return\n}", 1, 21, "redefinition of value %0");
  expect_error(graph_with("  %1, %1 = split(%0) {sizes=[2,2]} : f32[2], f32[2]\n  return"), 2, 7,
               "redefinition of value %1");
}

TEST(Parser, BadTypeSyntax) {
  expect_error(graph_with("  %1 = exp(%0) : f33[4]\n  return %1"), 2, 18, "unknown dtype 'f33'");
  expect_error(graph_with("  %1 = exp(%0) : f32(4)\n  return %1"), 2, 21, "expected '[', found '('");
  expect_error(graph_with("  %1 = exp(%0) : f32[4,-1]\n  return %1"), 2, 24, "negative dimension size -1");
  expect_error(graph_with("  %1 = exp(%0) : f32[4 5]\n  return %1"), 2, 24, "expected ',', found '5'");
  expect_error(graph_with("  %1 = exp(%0) : [4]\n  return %1"), 2, 18, "expected a type like f32[4,8], found '['");
  expect_error("graph g(%0 f32[4]) {\n  return\n}", 1, 12, "expected ':', found 'f32'");
}

TEST(Parser, OutputTypeCountMustMatch) {
  expect_error(graph_with("  %1, %2 = split(%0) {sizes=[2,2]} : f32[2]\n  return %1"), 2, 12,
               "split defines 2 values but 1 types follow");
}

// Written output types are checked against the op's inference, and the error points at the op.
TEST(Parser, OutputTypesMustBeWhatTheOpInfers) {
  expect_error(graph_with("  %1 = exp(%0) : f32[5]\n  return %1"), 2, 8,
               "exp infers f32[4] for %1, the text says f32[5]");
  expect_error(graph_with("  %1 = exp(%0) : f64[4]\n  return %1"), 2, 8,
               "exp infers f32[4] for %1, the text says f64[4]");
  expect_error(graph_with("  %1 = split(%0) {sizes=[2,2]} : f32[2]\n  return %1"), 2, 8,
               "split gives 2 outputs, the text defines 1");
  expect_error(graph_with("  %1 = matmul(%0, %0) : f32[4]\n  return %1"), 2, 8, "matmul infers f32[] for %1");
  // The unchecked form keeps what is written, for the verifier to reject.
  const ir::Graph written = ir::parse_unchecked(graph_with("  %1 = exp(%0) : f32[5]\n  return %1"));
  EXPECT_EQ(written.meta(written.outputs()[0]).shape, (Shape{5}));
  EXPECT_FALSE(ir::verify_errors(written).empty());
}

TEST(Parser, UnexpectedTokens) {
  expect_error(graph_with("  %1 = exp(%0) : f32[4] extra\n  return %1"), 2, 25,
               "expected a value like %0, found 'extra'");
  expect_error(graph_with("  %1 = exp(%0 : f32[4]\n  return %1"), 2, 15, "expected ',', found ':'");
  expect_error(graph_with("  %1 = exp(%0) f32[4]\n  return %1"), 2, 16, "expected ':', found 'f32'");
  expect_error("grph g() {\n  return\n}", 1, 1, "expected 'graph', found 'grph'");
  expect_error("graph g() {\n  return\n}\n}", 4, 1, "unexpected '}' after the end of the graph");
  expect_error("graph g() {\n  return\n", 3, 1, "expected '}', found end of input");
  expect_error(graph_with("  %1 = exp(%0) : f32[4] @ \"m\" sideways\n  return %1"), 2, 31, "unknown phase 'sideways'");
  expect_error(graph_with("  %1 = exp(%0) : f32[4] @ forward\n  return %1"), 2, 27,
               "expected a module path string, found 'forward'");
}

TEST(Parser, LexicalErrors) {
  expect_error(graph_with("  %1 = exp(%0) : f32[4] $\n  return %1"), 2, 25, "unexpected character '$'");
  expect_error(graph_with("  %1 = exp(%0) : f32[4] \"open\n  return %1"), 2, 25, "unterminated string");
  expect_error(graph_with("  %x = exp(%0) : f32[4]\n  return %x"), 2, 3, "expected a value number after '%'");
  expect_error(graph_with("  %1 = add_scalar(%0) {scalar=1.5.2} : f32[4]\n  return %1"), 2, 34,
               "unexpected character '.'");
  expect_error(graph_with("  %1 = sum(%0) {dims=[99999999999999999999]} : f32[]\n  return %1"), 2, 23,
               "integer '99999999999999999999' is out of range");
  expect_error(graph_with("  %1 = sum(%0) {dims=[12abc]} : f32[]\n  return %1"), 2, 23, "malformed number");
  expect_error(graph_with("  %9223372036854775807 = exp(%0) : f32[4]\n  return"), 2, 3,
               "value number %9223372036854775807 is out of range");
}

TEST(Parser, CommentsDoNotShiftLineNumbers) {
  expect_error(
      "# header\n# more\ngraph g(%0: f32[4]) {  # c\n  # body comment\n  %1 = nope(%0) : f32[4]\n  return %1\n}", 5, 8,
      "unknown op 'nope'");
}

// Every prefix of a valid text, and the text with any one character replaced,
// either parses or raises ParseError: malformed input never crashes the parser.
TEST(Parser, MalformedTextOnlyEverRaisesParseError) {
  const std::string text = R"(graph g(%0: f32[4,6] "x", %1: i64[4]) {
  %2, %3 = split(%0) {sizes=[2,4], dim=-1} : f32[4,2], f32[4,4] @ "a.b" backward
  %4 = add_scalar(%3) {scalar=-1.5e-07} : f32[4,4]  # comment
  %5 = argmax(%4) {dim=none, keepdim=false} : i64[]
  return %5, %2
})";
  auto parses_or_raises = [](const std::string& candidate) {
    try {
      parse(candidate);
    } catch (const ParseError&) {
    }
  };
  for (size_t cut = 0; cut <= text.size(); ++cut) EXPECT_NO_THROW(parses_or_raises(text.substr(0, cut))) << cut;
  for (size_t at = 0; at < text.size(); ++at) {
    for (char replacement : {' ', '%', '"', '\\', '{', '-', '9', '#', '\0'}) {
      std::string mutated = text;
      mutated[at] = replacement;
      EXPECT_NO_THROW(parses_or_raises(mutated)) << mutated;
    }
  }
}

}  // namespace
}  // namespace px::ir
