#pragma once
// The subcommands of the `parallax` tool, one source file each. Each registers itself and its
// options on the app and returns the function that runs it once the command line is parsed; that
// function returns the exit status (0 success, 2 failure; usage errors, 1, are CLI11's, in main.cpp).

#include <CLI/CLI.hpp>
#include <functional>

namespace px::cli {

struct Command {
  CLI::App* app = nullptr;   // the subcommand
  std::function<int()> run;  // runs it with the parsed options
};

Command add_solve_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_bench_collectives_command(CLI::App& app);
Command add_calibrate_command(CLI::App& app);

}  // namespace px::cli
