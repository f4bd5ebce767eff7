#include "daemon/cli.hpp"

#include <iostream>

#include <CLI/CLI.hpp>

#include "daemon/validate_command.hpp"

namespace envcontract::daemon {

int run_envcontractd(int argc, char** argv) {
  CLI::App app{
      "envcontractd: keeps a host's Python environments honest to its accelerator "
      "contract"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(ENVCONTRACT_VERSION));

  std::vector<std::string> files;
  bool print = false;
  auto* validate = app.add_subcommand(
      "validate", "Check contract files; print 'ok' or every error as file:line:column");
  validate->add_option("FILE", files, "contract files (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  validate->add_flag("--print", print,
                     "print the normalised contract (every check with its kind and parameters) "
                     "as JSON; takes exactly one FILE");
  validate->footer("Exit status: 0 all valid, 1 any invalid, 2 usage error.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  if (validate->parsed()) {
    if (print && files.size() != 1) {
      std::cerr << "envcontractd validate: --print takes exactly one FILE, got " << files.size()
                << "\n";
      return 2;
    }
    std::vector<std::filesystem::path> paths(files.begin(), files.end());
    return run_validate(paths, print ? ValidateOutput::normalized_json : ValidateOutput::verdicts,
                        std::cout, std::cerr);
  }
  return 2;
}

}  // namespace envcontract::daemon
