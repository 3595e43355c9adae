#include "parallax/ir/parser.h"

#include <algorithm>
#include <limits>

#include "ir/lexer.h"
#include "ir/op_schema.h"
#include "parallax/core/error.h"

namespace px::ir {

namespace {

using detail::Lexer;
using detail::Token;
using detail::TokenKind;

class Parser {
 public:
  Parser(std::string_view text, const Registry& registry, bool check_types)
      : lexer_(text), registry_(registry), check_types_(check_types) {
    advance();
  }

  Graph parse_graph() {
    expect_ident("graph");
    if (token_.kind != TokenKind::Ident && token_.kind != TokenKind::String) fail("expected a graph name");
    graph_.set_name(token_.text);
    advance();
    parse_params();
    expect_punct('{');
    while (!token_.is_ident("return")) parse_node();
    parse_return();
    if (token_.kind != TokenKind::End) fail("unexpected " + token_.describe() + " after the end of the graph");
    return std::move(graph_);
  }

 private:
  void advance() { token_ = lexer_.next(); }

  [[noreturn]] void fail(const std::string& message) const { fail_at(token_, message); }
  [[noreturn]] static void fail_at(const Token& at, const std::string& message) {
    throw ParseError(message, at.line, at.column);
  }

  void expect_punct(char c) {
    if (!token_.is_punct(c)) fail("expected '" + std::string(1, c) + "', found " + token_.describe());
    advance();
  }

  void expect_ident(std::string_view word) {
    if (!token_.is_ident(word)) fail("expected '" + std::string(word) + "', found " + token_.describe());
    advance();
  }

  Token take(TokenKind kind, std::string_view what) {
    if (token_.kind != kind) fail("expected " + std::string(what) + ", found " + token_.describe());
    Token taken = token_;
    advance();
    return taken;
  }

  // A value about to be defined: it must be new.
  Token take_new_value() {
    Token value = take(TokenKind::Value, "a value like %0");
    if (graph_.has_value(value.int_value)) fail_at(value, "redefinition of value " + value.text);
    return value;
  }

  ValueId take_use() {
    Token value = take(TokenKind::Value, "a value like %0");
    if (!graph_.has_value(value.int_value)) fail_at(value, "use of undefined value " + value.text);
    return value.int_value;
  }

  TensorMeta parse_type() {
    Token dtype_token = take(TokenKind::Ident, "a type like f32[4,8]");
    TensorMeta meta;
    try {
      meta.dtype = parse_dtype(dtype_token.text);
    } catch (const ValueError&) {
      fail_at(dtype_token, "unknown dtype '" + dtype_token.text + "' (expected f32, f64, i64, bool or bf16)");
    }
    expect_punct('[');
    while (!token_.is_punct(']')) {
      if (!meta.shape.empty()) expect_punct(',');
      Token extent = take(TokenKind::Int, "a dimension size");
      if (extent.int_value < 0) fail_at(extent, "negative dimension size " + extent.text);
      meta.shape.push_back(extent.int_value);
    }
    advance();
    return meta;
  }

  std::string take_optional_name() {
    if (token_.kind != TokenKind::String) return "";
    std::string name = token_.text;
    advance();
    return name;
  }

  void parse_params() {
    expect_punct('(');
    while (!token_.is_punct(')')) {
      if (!graph_.inputs().empty()) expect_punct(',');
      Token value = take_new_value();
      expect_punct(':');
      TensorMeta meta = parse_type();
      graph_.new_value(std::move(meta), take_optional_name(), value.int_value);
      graph_.mutable_inputs().push_back(value.int_value);
    }
    advance();
  }

  void parse_node();
  Attrs parse_attrs(const OpDef& op);
  AttrValue parse_attr_value();
  static AttrValue word_attr(const Token& word);
  std::vector<int64_t> parse_ints();
  std::vector<std::pair<TensorMeta, std::string>> parse_output_types(const Token& op_token, size_t count);
  void check_output_types(const OpDef& op, const Token& op_token, const std::vector<TensorMeta>& input_metas,
                          const Attrs& attrs, const std::vector<Token>& outputs,
                          const std::vector<std::pair<TensorMeta, std::string>>& types);
  Provenance parse_provenance();
  void parse_return();

  Lexer lexer_;
  const Registry& registry_;
  bool check_types_;
  Token token_;
  Graph graph_;
};

void Parser::parse_node() {
  std::vector<Token> outputs{take_new_value()};
  while (token_.is_punct(',')) {
    advance();
    outputs.push_back(take_new_value());
    for (size_t i = 0; i + 1 < outputs.size(); ++i) {
      if (outputs[i].int_value == outputs.back().int_value) {
        fail_at(outputs.back(), "redefinition of value " + outputs.back().text);
      }
    }
  }
  expect_punct('=');
  Token op_token = take(TokenKind::Ident, "an op name");
  const OpDef* op = registry_.find(op_token.text);
  if (!op) fail_at(op_token, "unknown op '" + op_token.text + "'");
  Node node{op, {}, {}, {}, {}};
  expect_punct('(');
  while (!token_.is_punct(')')) {
    if (!node.inputs.empty()) expect_punct(',');
    node.inputs.push_back(take_use());
  }
  advance();
  Attrs given = token_.is_punct('{') ? parse_attrs(*op) : Attrs{};
  std::vector<TensorMeta> input_metas;
  for (ValueId input : node.inputs) input_metas.push_back(graph_.meta(input));
  try {
    node.attrs = detail::complete_attrs(*op, input_metas, given);
  } catch (const Error& error) {
    fail_at(op_token, error.message());  // a parse error carries its own kind
  }
  expect_punct(':');
  auto types = parse_output_types(op_token, outputs.size());
  if (check_types_) check_output_types(*op, op_token, input_metas, node.attrs, outputs, types);
  if (token_.is_punct('@')) node.provenance = parse_provenance();
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto& [meta, name] = types[i];
    node.outputs.push_back(graph_.new_value(std::move(meta), std::move(name), outputs[i].int_value));
  }
  graph_.mutable_nodes().push_back(std::move(node));
}

void Parser::check_output_types(const OpDef& op, const Token& op_token, const std::vector<TensorMeta>& input_metas,
                                const Attrs& attrs, const std::vector<Token>& outputs,
                                const std::vector<std::pair<TensorMeta, std::string>>& types) {
  std::vector<TensorMeta> inferred;
  try {
    inferred = op.infer(input_metas, attrs);
  } catch (const Error& error) {
    fail_at(op_token, error.message());
  }
  if (inferred.size() != types.size()) {
    fail_at(op_token, op.name + " gives " + std::to_string(inferred.size()) + " outputs, the text defines " +
                          std::to_string(types.size()));
  }
  for (size_t i = 0; i < inferred.size(); ++i) {
    if (inferred[i] != types[i].first) {
      fail_at(op_token, op.name + " infers " + inferred[i].str() + " for %" + std::to_string(outputs[i].int_value) +
                            ", the text says " + types[i].first.str());
    }
  }
}

Attrs Parser::parse_attrs(const OpDef& op) {
  expect_punct('{');
  Attrs attrs;
  while (!token_.is_punct('}')) {
    if (!attrs.empty()) expect_punct(',');
    Token name = take(TokenKind::Ident, "an attribute name");
    auto spec = std::find_if(op.attrs.begin(), op.attrs.end(), [&](const AttrSpec& s) { return s.name == name.text; });
    if (spec == op.attrs.end()) {
      fail_at(name, "unknown attribute '" + name.text + "' for op " + op.signature());
    }
    if (attrs.has(name.text)) fail_at(name, "attribute '" + name.text + "' is given twice");
    expect_punct('=');
    Token value_token = token_;
    AttrValue value = parse_attr_value();
    if (!attr_matches(spec->type, value)) {
      fail_at(value_token, "attribute '" + name.text + "' of " + op.name + " expects " +
                               std::string(attr_type_name(spec->type)) + ", got " + attr_value_str(value));
    }
    attrs.set(name.text, std::move(value));
  }
  advance();
  return attrs;
}

AttrValue Parser::parse_attr_value() {
  Token value = token_;
  switch (value.kind) {
    case TokenKind::Int:
      advance();
      return value.int_value;
    case TokenKind::Float:
      advance();
      return value.float_value;
    case TokenKind::String:
      advance();
      return value.text;
    case TokenKind::Ident:
      advance();
      return word_attr(value);
    case TokenKind::Punct:
      if (value.is_punct('[')) return parse_ints();
      break;
    case TokenKind::Value:
    case TokenKind::End:
      break;
  }
  fail("expected an attribute value, found " + value.describe());
}

AttrValue Parser::word_attr(const Token& word) {
  if (word.text == "true" || word.text == "false") return word.text == "true";
  if (word.text == "none") return NoneAttr{};
  if (word.text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (word.text == "inf") return std::numeric_limits<double>::infinity();
  try {
    return parse_dtype(word.text);
  } catch (const ValueError&) {
    fail_at(word, "unexpected '" + word.text + "' as an attribute value");
  }
}

std::vector<int64_t> Parser::parse_ints() {
  expect_punct('[');
  std::vector<int64_t> ints;
  while (!token_.is_punct(']')) {
    if (!ints.empty()) expect_punct(',');
    ints.push_back(take(TokenKind::Int, "an integer").int_value);
  }
  advance();
  return ints;
}

std::vector<std::pair<TensorMeta, std::string>> Parser::parse_output_types(const Token& op_token, size_t count) {
  std::vector<std::pair<TensorMeta, std::string>> types;
  while (true) {
    TensorMeta meta = parse_type();
    types.emplace_back(std::move(meta), take_optional_name());
    if (!token_.is_punct(',')) break;
    advance();
  }
  if (types.size() != count) {
    fail_at(op_token, op_token.text + " defines " + std::to_string(count) + " values but " +
                          std::to_string(types.size()) + " types follow the ':'");
  }
  return types;
}

Provenance Parser::parse_provenance() {
  advance();  // '@'
  Provenance provenance;
  provenance.module_path = take(TokenKind::String, "a module path string").text;
  Token phase = take(TokenKind::Ident, "a phase (forward, backward or optimizer)");
  std::optional<Phase> parsed = parse_phase(phase.text);
  if (!parsed) fail_at(phase, "unknown phase '" + phase.text + "' (expected forward, backward or optimizer)");
  provenance.phase = *parsed;
  return provenance;
}

void Parser::parse_return() {
  advance();  // 'return'
  std::vector<ValueId> outputs;
  if (token_.kind == TokenKind::Value) {
    outputs.push_back(take_use());
    while (token_.is_punct(',')) {
      advance();
      outputs.push_back(take_use());
    }
  }
  expect_punct('}');
  graph_.mutable_outputs() = std::move(outputs);
}

}  // namespace

Graph parse(std::string_view text, const Registry& registry) { return Parser(text, registry, true).parse_graph(); }

Graph parse_unchecked(std::string_view text, const Registry& registry) {
  return Parser(text, registry, false).parse_graph();
}

}  // namespace px::ir
