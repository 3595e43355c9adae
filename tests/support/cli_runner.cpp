#include "support/cli_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace px::testing {

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

CliRun run_cli(const std::string& executable, const std::string& arguments) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string prefix = ::testing::TempDir() + "parallax-cli-" + std::to_string(getpid()) + "-" +
                             (test != nullptr ? std::string(test->name()) : "run");
  const std::string out = prefix + ".stdout", err = prefix + ".stderr";
  const std::string command = "'" + executable + "' " + arguments + " >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(command.c_str());
  CliRun run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.out = read_all(out);
  run.err = read_all(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return run;
}

}  // namespace px::testing
