// libFuzzer target: the IOPDDL sharding-problem reader (plan::parse_problem).

#include "fuzz_input.h"
#include "parallax/plan/problem.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return px::fuzz::check_parser(data, size,
                                [](const std::string& text) { px::plan::parse_problem(text, "fuzz.json"); });
}
