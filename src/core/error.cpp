#include "parallax/core/error.h"

#include <cstdio>
#include <cstdlib>

namespace px::detail {

void assertion_failed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "Parallax internal error: assertion '%s' failed at %s:%d\n", condition, file, line);
  std::abort();
}

}  // namespace px::detail
