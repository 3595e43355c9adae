#pragma once
// The contract every fuzz target checks: bad input gets a px::Error (ParseError, ValueError, ...)
// naming what is wrong, never a crash, a hang, or another exception type escaping the parser.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "parallax/core/error.h"

namespace px::fuzz {

// Calls parse(text) on the fuzzer's bytes. A px::Error is the expected answer to bad input; any
// other exception is a bug, reported by aborting so that libFuzzer saves the input that did it.
template <class Parse>
int check_parser(const uint8_t* data, size_t size, Parse&& parse) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    parse(text);
  } catch (const Error&) {
  } catch (const std::exception& error) {
    std::fprintf(stderr, "a parser let a non-px exception escape: %s\n", error.what());
    std::abort();
  }
  return 0;
}

}  // namespace px::fuzz
