#include "parallax/core/error.h"

#include <cstdio>
#include <cstdlib>

namespace px::detail {

void assertion_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "Parallax internal error: assertion '%s' failed at %s:%d\n", condition, file, line);
  std::abort();
}

}  // namespace px::detail

namespace px {

void throw_error_of_kind(std::string_view kind, const std::string& message) {
  if (kind == "ShapeError") throw ShapeError(message);
  if (kind == "DTypeError") throw DTypeError(message);
  if (kind == "ValueError") throw ValueError(message);
  if (kind == "UnsupportedOp") throw UnsupportedOp(message);
  if (kind == "VerifyError") throw VerifyError(message);
  if (kind == "GuardError") throw GuardError(message);
  if (kind == "TraceError") throw TraceError(message);
  if (kind == "CommError") throw CommError(message);
  if (kind == "InfeasiblePlan") throw InfeasiblePlan(message);
  throw Error(kind.empty() ? message : std::string(kind) + ": " + message);
}

}  // namespace px
