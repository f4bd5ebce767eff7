#include "daemon/cli.hpp"

#include <iostream>

#include <CLI/CLI.hpp>

#include "daemon/facts_command.hpp"
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

  std::vector<std::string> roots;
  std::vector<std::string> prefixes;
  std::string image_tag_file;
  std::string image_tag_env;
  auto* facts = app.add_subcommand(
      "facts",
      "Discover this host's Python envs and print what their files tell, as JSON "
      "(no env code runs)");
  facts->add_option("--root", roots,
                    "a filesystem root or directory to search for envs (repeatable; default /)");
  facts->add_option("--prefix", prefixes, "an env prefix to include (repeatable)");
  facts->add_option("--image-tag-file", image_tag_file,
                    "file holding the host's container image reference");
  facts
      ->add_option("--image-tag-env", image_tag_env,
                   "environment variable holding the host's container image reference")
      ->excludes("--image-tag-file");
  facts->footer("Exit status: 0 envs found, 1 none found, 2 usage error.");

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
  if (facts->parsed()) {
    probes::HostFactsOptions options;
    options.discovery.roots.assign(roots.begin(), roots.end());
    options.discovery.prefixes.assign(prefixes.begin(), prefixes.end());
    if (roots.empty() && prefixes.empty()) {
      options.discovery.roots.emplace_back("/");
    }
    if (!image_tag_file.empty()) {
      options.image = {probes::ImageTagSource::Kind::file, image_tag_file};
    } else if (!image_tag_env.empty()) {
      options.image = {probes::ImageTagSource::Kind::environment, image_tag_env};
    }
    return run_facts(options, std::cout, std::cerr);
  }
  return 2;
}

}  // namespace envcontract::daemon
