#pragma once
// Every error Parallax raises derives from px::Error and says what was wrong,
// where, and (where it helps) what to do about it.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace px {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Shapes that an op cannot accept: names the op and the shapes involved.
class ShapeError : public Error {
 public:
  explicit ShapeError(const std::string& message) : Error("ShapeError: " + message) {}
};

// Dtypes that an op cannot accept.
class DTypeError : public Error {
 public:
  explicit DTypeError(const std::string& message) : Error("DTypeError: " + message) {}
};

// A bad value: an out-of-range dim or index, a bad attribute, a wrong argument count.
class ValueError : public Error {
 public:
  explicit ValueError(const std::string& message) : Error("ValueError: " + message) {}
};

// An op that does not exist, or lacks a facet (no VJP, no sharding rule, no kernel for a dtype).
class UnsupportedOp : public Error {
 public:
  explicit UnsupportedOp(const std::string& message) : Error("UnsupportedOp: " + message) {}
};

// Text that does not parse; carries the 1-based line and column.
class ParseError : public Error {
 public:
  ParseError(const std::string& message, int64_t line, int64_t column)
      : Error("ParseError at " + std::to_string(line) + ":" + std::to_string(column) + ": " + message),
        line_(line),
        column_(column) {}
  int64_t line() const { return line_; }
  int64_t column() const { return column_; }

 private:
  int64_t line_;
  int64_t column_;
};

// A graph that breaks an IR invariant; the message names the node(s).
class VerifyError : public Error {
 public:
  explicit VerifyError(const std::string& message) : Error("VerifyError: " + message) {}
};

// A compiled program called with inputs that break one of its guards: names the
// input's key path, the value it was traced with and the value it was called with.
class GuardError : public Error {
 public:
  explicit GuardError(const std::string& message) : Error("GuardError: " + message) {}
};

// Something a trace cannot record: reading the value of a traced tensor (data-dependent
// control flow), a tensor from outside the trace. Names the operation and the module path.
class TraceError : public Error {
 public:
  explicit TraceError(const std::string& message) : Error("TraceError: " + message) {}
};

// A collective that cannot complete because a rank of the job failed: names the failed rank,
// the collective and this rank.
class CommError : public Error {
 public:
  explicit CommError(const std::string& message) : Error("CommError: " + message) {}
};

// A sharding plan that cannot meet its constraints: names the binding constraint and by how much
// it is violated (the least any plan can reach against the bound asked for).
class InfeasiblePlan : public Error {
 public:
  explicit InfeasiblePlan(const std::string& message) : Error("InfeasiblePlan: " + message) {}
};

namespace detail {
[[noreturn]] void assertion_failed(const char* condition, const char* file, int line);
}  // namespace detail

}  // namespace px

// For bugs inside Parallax only; user input is checked with a thrown px::Error.
#define PX_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::px::detail::assertion_failed(#condition, __FILE__, __LINE__))
