// libFuzzer target: the IR text parser (ir::parse), and the printer on what it accepts, which
// must print text that parses back to the same text.

#include <cstdio>
#include <cstdlib>

#include "fuzz_input.h"
#include "parallax/ir/parser.h"
#include "parallax/ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return px::fuzz::check_parser(data, size, [](const std::string& text) {
    const px::ir::Graph graph = px::ir::parse(text);
    const std::string printed = px::ir::print(graph);
    if (px::ir::print(px::ir::parse(printed)) != printed) {
      std::fprintf(stderr, "the printed graph does not parse back to itself:\n%s\n", printed.c_str());
      std::abort();
    }
  });
}
