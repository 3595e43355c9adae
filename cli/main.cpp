// parallax: the command-line tool. Exit status: 0 success, 1 usage error, 2 failure.

#include <CLI/CLI.hpp>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Parallax: automatic parallelization of tensor programs"};
  app.name("parallax");
  app.require_subcommand(1);
  const std::vector<px::cli::Command> commands = {
      px::cli::add_plan_command(app), px::cli::add_run_command(app), px::cli::add_solve_command(app),
      px::cli::add_bench_collectives_command(app), px::cli::add_calibrate_command(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);  // prints --help, or the error and a hint
    return status == 0 ? 0 : 1;
  }
  for (const px::cli::Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return 1;
}
