#pragma once
// Private: tokens of the IR text format (grammar in parallax/ir/printer.h).

#include <cstdint>
#include <string>
#include <string_view>

namespace px::ir::detail {

enum class TokenKind : uint8_t {
  Ident,   // graph, return, op names, dtypes, true/false/none, phases
  Value,   // %12
  Int,     // -3
  Float,   // 1.5, 1e-05, -inf
  String,  // "text" (decoded into `text`)
  Punct,   // one of ( ) { } [ ] , = : @
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;  // the source text; for String, the decoded contents
  int64_t line = 1;
  int64_t column = 1;
  int64_t int_value = 0;   // Value and Int
  double float_value = 0;  // Float

  bool is_punct(char c) const { return kind == TokenKind::Punct && text.size() == 1 && text[0] == c; }
  bool is_ident(std::string_view word) const { return kind == TokenKind::Ident && text == word; }
  // "'foo'", "'%3'", "end of input": how error messages quote the token.
  std::string describe() const;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  // The next token; throws ParseError on malformed text (bad number, unterminated string, stray char).
  Token next();

 private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void advance();
  void skip_space_and_comments();
  Token lex_number(Token token);
  Token lex_string(Token token);
  Token lex_value(Token token);
  [[noreturn]] void fail(const Token& at, const std::string& message) const;

  std::string_view text_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  int64_t column_ = 1;
};

}  // namespace px::ir::detail
