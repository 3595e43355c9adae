#pragma once
// Runs the `parallax` tool as a process (the tests' CMake passes its path), capturing its exit
// status, stdout and stderr.

#include <string>

namespace px::testing {

struct CliRun {
  int status = -1;  // the exit status; -1 when it did not exit normally
  std::string out, err;
};

// `executable` with `arguments` (shell words, quoted by the caller), output to temporary files.
CliRun run_cli(const std::string& executable, const std::string& arguments);

}  // namespace px::testing
