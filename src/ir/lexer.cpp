#include "ir/lexer.h"

#include <cctype>
#include <charconv>
#include <limits>

#include "parallax/core/error.h"

namespace px::ir::detail {

namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

}  // namespace

std::string Token::describe() const {
  switch (kind) {
    case TokenKind::End:
      return "end of input";
    case TokenKind::String:
      return "string \"" + text + "\"";
    case TokenKind::Ident:
    case TokenKind::Value:
    case TokenKind::Int:
    case TokenKind::Float:
    case TokenKind::Punct:
      return "'" + text + "'";
  }
  return "'" + text + "'";
}

void Lexer::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++pos_;
}

void Lexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    char c = peek();
    if (c == '#') {
      while (pos_ < text_.size() && peek() != '\n') advance();
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      advance();
    } else {
      return;
    }
  }
}

void Lexer::fail(const Token& at, const std::string& message) const { throw ParseError(message, at.line, at.column); }

Token Lexer::next() {
  skip_space_and_comments();
  Token token;
  token.line = line_;
  token.column = column_;
  if (pos_ >= text_.size()) return token;
  char c = peek();
  if (is_ident_start(c)) {
    size_t start = pos_;
    while (is_ident_char(peek())) advance();
    token.kind = TokenKind::Ident;
    token.text = std::string(text_.substr(start, pos_ - start));
    return token;
  }
  if (is_digit(c) || (c == '-' && (is_digit(peek(1)) || text_.substr(pos_, 4) == "-inf"))) {
    return lex_number(std::move(token));
  }
  if (c == '"') return lex_string(std::move(token));
  if (c == '%') return lex_value(std::move(token));
  if (std::string_view("(){}[],=:@").find(c) != std::string_view::npos) {
    advance();
    token.kind = TokenKind::Punct;
    token.text = std::string(1, c);
    return token;
  }
  token.text = std::string(1, c);
  fail(token, "unexpected character '" + token.text + "'");
}

Token Lexer::lex_number(Token token) {
  size_t start = pos_;
  if (text_.substr(pos_, 4) == "-inf") {
    for (int i = 0; i < 4; ++i) advance();
    token.kind = TokenKind::Float;
    token.text = "-inf";
    token.float_value = -std::numeric_limits<double>::infinity();
    return token;
  }
  bool is_float = false;
  if (peek() == '-') advance();
  while (is_digit(peek())) advance();
  if (peek() == '.') {
    is_float = true;
    advance();
    while (is_digit(peek())) advance();
  }
  if (peek() == 'e' || peek() == 'E') {
    is_float = true;
    advance();
    if (peek() == '+' || peek() == '-') advance();
    while (is_digit(peek())) advance();
  }
  token.text = std::string(text_.substr(start, pos_ - start));
  const char* first = token.text.data();
  const char* last = first + token.text.size();
  if (is_float) {
    token.kind = TokenKind::Float;
    auto [end, ec] = std::from_chars(first, last, token.float_value);
    if (ec != std::errc() || end != last) fail(token, "malformed number '" + token.text + "'");
  } else {
    token.kind = TokenKind::Int;
    auto [end, ec] = std::from_chars(first, last, token.int_value);
    if (ec != std::errc() || end != last) fail(token, "integer '" + token.text + "' is out of range");
  }
  if (is_ident_char(peek())) {
    token.text += peek();
    fail(token, "malformed number '" + token.text + "...'");
  }
  return token;
}

Token Lexer::lex_string(Token token) {
  advance();  // opening quote
  token.kind = TokenKind::String;
  while (true) {
    if (pos_ >= text_.size()) fail(token, "unterminated string");
    char c = peek();
    advance();
    if (c == '"') return token;
    if (c == '\\') {
      if (pos_ >= text_.size()) fail(token, "unterminated string");
      c = peek();
      advance();
    }
    token.text += c;
  }
}

Token Lexer::lex_value(Token token) {
  advance();  // '%'
  size_t start = pos_;
  while (is_digit(peek())) advance();
  token.kind = TokenKind::Value;
  token.text = "%" + std::string(text_.substr(start, pos_ - start));
  if (pos_ == start) fail(token, "expected a value number after '%'");
  auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, token.int_value);
  // The largest id is refused too: the graph hands out ids above every one it holds.
  if (ec != std::errc() || token.int_value == std::numeric_limits<int64_t>::max()) {
    fail(token, "value number " + token.text + " is out of range");
  }
  return token;
}

}  // namespace px::ir::detail
