#pragma once
// Every error Parallax raises derives from px::Error and says what was wrong,
// where, and (where it helps) what to do about it. what() is "Kind: message";
// kind() and message() give the two parts, so that code adding context never
// parses what() and never loses the error's type (rethrow_with_context).

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace px {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : Error(std::string(), message) {}

  // "ValueError", "ShapeError", ...; empty for a plain Error.
  const std::string& kind() const { return kind_; }
  // The message without its kind: "split: dim 3 out of range" for "ValueError: split: dim 3 ...".
  const std::string& message() const { return message_; }
  // Throws an error of this one's class whose message is `prefix` + message(): context added on
  // the way up keeps the type, so that callers' catch clauses still see what went wrong.
  [[noreturn]] void rethrow_with_context(const std::string& prefix) const {
    std::rethrow_exception(with_context(prefix));
  }
  // The error rethrow_with_context throws: each class makes one of its own.
  virtual std::exception_ptr with_context(const std::string& prefix) const {
    return std::make_exception_ptr(Error(prefix + message_));
  }

 protected:
  Error(const std::string& kind, const std::string& message)
      : Error(kind.empty() ? message : kind + ": " + message, kind, message) {}
  // For a class that prints its kind and message otherwise ("ParseError at 3:4: ...").
  Error(const std::string& what, const std::string& kind, const std::string& message)
      : std::runtime_error(what), kind_(kind), message_(message) {}

 private:
  std::string kind_;
  std::string message_;
};

// One error class: constructed from a message, printed as "Name: message", rethrown as itself.
#define PX_DEFINE_ERROR(Name)                                                   \
  class Name : public Error {                                                   \
   public:                                                                      \
    explicit Name(const std::string& message) : Error(#Name, message) {}        \
    std::exception_ptr with_context(const std::string& prefix) const override { \
      return std::make_exception_ptr(Name(prefix + message()));                 \
    }                                                                           \
  }

// Shapes that an op cannot accept: names the op and the shapes involved.
PX_DEFINE_ERROR(ShapeError);
// Dtypes that an op cannot accept.
PX_DEFINE_ERROR(DTypeError);
// A bad value: an out-of-range dim or index, a bad attribute, a wrong argument count.
PX_DEFINE_ERROR(ValueError);
// An op that does not exist, or lacks a facet (no VJP, no sharding rule, no kernel for a dtype).
PX_DEFINE_ERROR(UnsupportedOp);
// A graph that breaks an IR invariant; the message names the node(s).
PX_DEFINE_ERROR(VerifyError);
// A compiled program called with inputs that break one of its guards: names the
// input's key path, the value it was traced with and the value it was called with.
PX_DEFINE_ERROR(GuardError);
// Something a trace cannot record: reading the value of a traced tensor (data-dependent
// control flow), a tensor from outside the trace. Names the operation and the module path.
PX_DEFINE_ERROR(TraceError);
// A collective that cannot complete because a rank of the job failed: names the failed rank,
// the collective and this rank.
PX_DEFINE_ERROR(CommError);
// A sharding plan that cannot meet its constraints: names the binding constraint and by how much
// it is violated (the least any plan can reach against the bound asked for).
PX_DEFINE_ERROR(InfeasiblePlan);

#undef PX_DEFINE_ERROR

// Text that does not parse; carries the 1-based line and column.
class ParseError : public Error {
 public:
  ParseError(const std::string& message, int64_t line, int64_t column)
      : Error("ParseError " + position(line, column) + message, "ParseError", position(line, column) + message),
        line_(line),
        column_(column),
        detail_(message) {}
  int64_t line() const { return line_; }
  int64_t column() const { return column_; }
  // The message without its position.
  const std::string& detail() const { return detail_; }
  std::exception_ptr with_context(const std::string& prefix) const override {
    return std::make_exception_ptr(ParseError(prefix + detail_, line_, column_));
  }

 private:
  static std::string position(int64_t line, int64_t column) {
    return "at " + std::to_string(line) + ":" + std::to_string(column) + ": ";
  }

  int64_t line_;
  int64_t column_;
  std::string detail_;
};

// Throws the error class named `kind` (an Error's kind(), as another rank or process reported
// it) with `message`; a plain Error for an empty or unknown kind, whose name then leads the
// message. Parse errors arrive without their position, as a plain Error.
[[noreturn]] void throw_error_of_kind(std::string_view kind, const std::string& message);

namespace detail {
[[noreturn]] void assertion_failed(const char* condition, const char* file, int line);
}  // namespace detail

}  // namespace px

// For bugs inside Parallax only; user input is checked with a thrown px::Error.
#define PX_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::px::detail::assertion_failed(#condition, __FILE__, __LINE__))
