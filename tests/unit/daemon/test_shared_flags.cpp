// daemon/shared_flags.cpp: the flags several verbs take, defined once.
#include "daemon/shared_flags.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using daemon::AgentConfig;
using daemon::ScanFlags;
using Kind = discovery::ImageTagSource::Kind;
using Paths = std::vector<std::filesystem::path>;
using Words = std::vector<std::string>;

// A verb with every shared flag, parsed as CLI11 parses a command line.
struct Verb {
  CLI::App app{"verb"};
  ScanFlags flags;
  std::string contract;
  std::string base_contract;
  std::vector<std::string> allowed_hosts;

  Verb() {
    flags.add_discovery(&app);
    flags.add_image(&app);
    flags.add_containers(&app);
    flags.add_contract_detection(&app);
    flags.add_progress(&app);
    daemon::add_contract_option(&app, contract);
    daemon::add_allowed_host_option(&app, allowed_hosts);
  }

  // Throws what CLI11 throws for a line it refuses.
  void parse(const Words& words) {
    std::vector<const char*> argv = {"verb"};
    for (const auto& word : words) {
      argv.push_back(word.c_str());
    }
    app.parse(static_cast<int>(argv.size()), argv.data());
  }
};

// What CLI11 refuses the line with, "" when it takes it.
std::string refusal(const Words& words) {
  Verb verb;
  try {
    verb.parse(words);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

const std::string k_containers_file =
    "containers:\n"
    "  - name: trainer\n"
    "    exec: podman\n"
    "    container: trainer-0\n"
    "container_discovery:\n"
    "  runtime: podman\n"
    "  label: envcontract.scan\n";

TEST(SharedFlags, EachFlagIsReadIntoItsField) {
  testing::TempDir dir;
  const auto containers = dir.write("containers.yaml", k_containers_file);
  Verb verb;
  verb.parse({"--root",
              "/a",
              "--root=/b",
              "--prefix",
              "/p",
              "--run-root-envs-as",
              "ci",
              "--image-tag-env",
              "IMAGE",
              "--containers",
              containers.string(),
              "--contracts-dir",
              dir.path().string(),
              "--detect-root",
              dir.path().string(),
              "--progress",
              "never",
              "--allowed-host",
              "one.example",
              "--allowed-host",
              "two.example"});
  EXPECT_EQ(verb.flags.roots, (Words{"/a", "/b"}));
  EXPECT_EQ(verb.flags.prefixes, Words{"/p"});
  EXPECT_EQ(verb.flags.run_root_envs_as, "ci");
  EXPECT_EQ(verb.flags.image_tag_env, "IMAGE");
  EXPECT_EQ(verb.flags.containers_file, containers.string());
  EXPECT_EQ(verb.flags.contracts_dir, dir.path().string());
  EXPECT_EQ(verb.flags.detect_root, dir.path().string());
  EXPECT_EQ(verb.flags.progress, "never");
  EXPECT_EQ(verb.allowed_hosts, (Words{"one.example", "two.example"}));
}

TEST(SharedFlags, NothingGivenLeavesTheDefaults) {
  Verb verb;
  verb.parse({});
  EXPECT_TRUE(verb.flags.roots.empty());
  EXPECT_TRUE(verb.flags.run_root_envs_as.empty()) << "unset: the config's or the default";
  EXPECT_EQ(verb.flags.progress, "auto");
  EXPECT_EQ(verb.contract, "");
}

// add_discovery takes add_run_as's flag with it; add_run_as alone is just that.
TEST(SharedFlags, RunAsComesWithDiscoveryAndAlone) {
  CLI::App alone{"provision"};
  ScanFlags flags;
  flags.add_run_as(&alone);
  EXPECT_NE(alone.get_option_no_throw("--run-root-envs-as"), nullptr);
  EXPECT_EQ(alone.get_option_no_throw("--root"), nullptr);
  EXPECT_EQ(alone.get_option_no_throw("--prefix"), nullptr);
  CLI::App discovery{"scan"};
  flags.add_discovery(&discovery);
  for (const char* name : {"--root", "--prefix", "--run-root-envs-as"}) {
    EXPECT_NE(discovery.get_option_no_throw(name), nullptr) << name;
  }
}

TEST(SharedFlags, OneImageSourceAtMost) {
  for (const Words& words :
       {Words{"--image-tag-file", "/etc/image", "--image-tag-env", "IMAGE"},
        Words{"--image-tag-file", "/etc/image", "--image-tag-command", "cat /etc/image"},
        Words{"--image-tag-env", "IMAGE", "--image-tag-command", "cat /etc/image"}}) {
    Verb verb;
    EXPECT_THROW(verb.parse(words), CLI::ExcludesError) << words[0] << " " << words[2];
  }
}

TEST(SharedFlags, TheProgressIsOneOfThree) {
  EXPECT_NE(refusal({"--progress", "sometimes"}), "");
  for (const char* value : {"auto", "always", "never"}) {
    EXPECT_EQ(refusal({"--progress", value}), "") << value;
  }
  ScanFlags flags;
  flags.progress = "always";
  EXPECT_TRUE(flags.progress_wanted());
  flags.progress = "never";
  EXPECT_FALSE(flags.progress_wanted());
  flags.progress = "auto";
  EXPECT_EQ(flags.progress_wanted(), ::isatty(STDERR_FILENO) != 0) << "auto: on a terminal";
}

TEST(SharedFlags, DirectoriesAndFilesMustBeThere) {
  testing::TempDir dir;
  const auto file = dir.write("file", "x");
  const auto missing = (dir.path() / "missing").string();
  EXPECT_NE(refusal({"--containers", missing}), "");
  EXPECT_NE(refusal({"--containers", dir.path().string()}), "") << "a directory is no file";
  EXPECT_NE(refusal({"--contracts-dir", missing}), "");
  EXPECT_NE(refusal({"--contracts-dir", file.string()}), "") << "a file is no directory";
  EXPECT_NE(refusal({"--detect-root", missing}), "");
  EXPECT_EQ(refusal({"--detect-root", dir.path().string()}), "");
}

TEST(SharedFlags, AContractIsAFileOrAuto) {
  testing::TempDir dir;
  const auto file = dir.write("c.yaml", "schema_version: 1\n");
  const auto missing = dir.path() / "missing.yaml";
  EXPECT_EQ(refusal({"--contract", "auto"}), "");
  EXPECT_EQ(refusal({"--contract", file.string()}), "");
  // One sentence that says what is wanted, the path as messages show it.
  const auto absent = refusal({"--contract", missing.string()});
  EXPECT_NE(absent.find(missing.string() + " does not exist; give a contract file, or 'auto'"),
            std::string::npos)
      << absent;
  const auto directory = refusal({"--contract", dir.path().string()});
  EXPECT_NE(
      directory.find(dir.path().string() + " is a directory; give a contract file, or 'auto'"),
      std::string::npos)
      << directory;
}

// The base contract of probe and snapshot decides what runs: `auto` is no
// choice of theirs, it is a file name like any other.
TEST(SharedFlags, ABaseContractIsAFileAndNeverAuto) {
  testing::TempDir dir;
  const auto file = dir.write("c.yaml", "schema_version: 1\n");
  const auto taken = [&](const std::string& value) -> std::string {
    CLI::App app{"probe"};
    std::string contract;
    auto* option = daemon::add_base_contract_option(&app, contract, "the base contract");
    EXPECT_EQ(option->get_description(), "the base contract");
    const char* argv[] = {"probe", "--contract", value.c_str()};
    try {
      app.parse(3, argv);
    } catch (const CLI::ValidationError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(taken(file.string()), "");
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());  // where no file named auto is
  const auto refused_auto = taken("auto");
  std::filesystem::current_path(cwd);
  EXPECT_NE(
      refused_auto.find((dir.path() / "auto").string() + " does not exist; give a contract file"),
      std::string::npos)
      << refused_auto;
  EXPECT_EQ(refused_auto.find("'auto'"), std::string::npos) << refused_auto;
  EXPECT_NE(taken(dir.path().string()).find("is a directory; give a contract file"),
            std::string::npos);
}

AgentConfig from_a_config_file() {
  AgentConfig config;
  config.roots = {"/srv"};
  config.prefixes = {"/opt/env"};
  config.run_root_envs_as = "ci";
  config.image = {Kind::file, "/etc/flagos-image"};
  config.contracts_dir = "/etc/envcontract/contracts";
  config.detect_root = "/host";
  return config;
}

TEST(SharedFlags, NoFlagKeepsTheConfigsValues) {
  AgentConfig config = from_a_config_file();
  std::ostringstream err;
  ASSERT_TRUE(ScanFlags{}.apply(config, err));
  EXPECT_EQ(config.roots, Paths{"/srv"});
  EXPECT_EQ(config.prefixes, Paths{"/opt/env"});
  EXPECT_EQ(config.run_root_envs_as, "ci");
  EXPECT_EQ(config.image.kind, Kind::file);
  EXPECT_EQ(config.image.value, "/etc/flagos-image");
  EXPECT_EQ(config.contracts_dir, "/etc/envcontract/contracts");
  EXPECT_EQ(config.detect_root, "/host");
  EXPECT_EQ(err.str(), "");
}

TEST(SharedFlags, FlagsGivenReplaceTheConfigsValues) {
  testing::TempDir dir;
  const auto containers = dir.write("containers.yaml", k_containers_file);
  ScanFlags flags;
  flags.run_root_envs_as = "root";
  flags.image_tag_command = "cat /etc/image";
  flags.contracts_dir = "/usr/local/share/contracts";
  flags.detect_root = "/";
  flags.containers_file = containers.string();
  AgentConfig config = from_a_config_file();
  std::ostringstream err;
  ASSERT_TRUE(flags.apply(config, err)) << err.str();
  EXPECT_EQ(config.run_root_envs_as, "root");
  EXPECT_EQ(config.image.kind, Kind::command);
  EXPECT_EQ(config.image.value, "cat /etc/image");
  EXPECT_EQ(config.contracts_dir, "/usr/local/share/contracts");
  EXPECT_EQ(config.detect_root, "/");
  ASSERT_EQ(config.containers.size(), 1U);
  EXPECT_EQ(config.containers[0].name, "trainer");
  EXPECT_EQ(config.containers[0].exec, discovery::ContainerConfig::Exec::podman);
  ASSERT_TRUE(config.container_discovery.has_value());
  EXPECT_EQ(config.container_discovery->label, "envcontract.scan");
  EXPECT_EQ(config.roots, Paths{"/srv"}) << "no --root or --prefix: the config's stand";
}

// --root and --prefix say together where envs are: either replaces both of
// the config's, so `--prefix ENV` judges that env alone.
TEST(SharedFlags, RootsOrPrefixesGivenReplaceWhereEnvsAreLookedFor) {
  ScanFlags roots;
  roots.roots = {"/a", "/b"};
  AgentConfig config = from_a_config_file();
  std::ostringstream err;
  ASSERT_TRUE(roots.apply(config, err));
  EXPECT_EQ(config.roots, (Paths{"/a", "/b"}));
  EXPECT_TRUE(config.prefixes.empty());

  ScanFlags prefixes;
  prefixes.prefixes = {"/opt/other"};
  config = from_a_config_file();
  ASSERT_TRUE(prefixes.apply(config, err));
  EXPECT_TRUE(config.roots.empty());
  EXPECT_EQ(config.prefixes, Paths{"/opt/other"});
}

TEST(SharedFlags, EachImageSourceMakesItsKind) {
  for (const auto& [field, kind] : std::vector<std::pair<std::string ScanFlags::*, Kind>>{
           {&ScanFlags::image_tag_file, Kind::file},
           {&ScanFlags::image_tag_env, Kind::environment},
           {&ScanFlags::image_tag_command, Kind::command}}) {
    ScanFlags flags;
    flags.*field = "given";
    AgentConfig config;
    std::ostringstream err;
    ASSERT_TRUE(flags.apply(config, err));
    EXPECT_EQ(config.image.kind, kind);
    EXPECT_EQ(config.image.value, "given");
  }
}

TEST(SharedFlags, AnInvalidContainersFileIsRefusedWithItsPositions) {
  testing::TempDir dir;
  const auto file = dir.write("containers.yaml",
                              "containers:\n  - name: a\n    exec: docker\n    container: c\n"
                              "    enf_roots: [/opt/conda]\n");
  ScanFlags flags;
  flags.containers_file = file.string();
  AgentConfig config;
  std::ostringstream err;
  EXPECT_FALSE(flags.apply(config, err));
  const std::string said = err.str();
  EXPECT_EQ(said.rfind(file.string() + ":5:5: error: ", 0), 0U) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_TRUE(config.containers.empty()) << "nothing of a refused file is taken";
  std::ostringstream over_defaults_err;
  EXPECT_EQ(flags.over_defaults("scan", over_defaults_err), std::nullopt);
  EXPECT_EQ(over_defaults_err.str(), said);
}

TEST(SharedFlags, OverTheDefaultsIsTheDefaultConfigWithTheFlags) {
  testing::TempDir dir;
  ScanFlags flags;
  std::ostringstream err;
  const auto defaults = flags.over_defaults("facts", err);
  ASSERT_TRUE(defaults.has_value()) << err.str();
  EXPECT_EQ(defaults->roots, AgentConfig{}.roots);
  EXPECT_EQ(defaults->run_root_envs_as, process::k_dynamic_probe_user);
  EXPECT_EQ(defaults->image.kind, Kind::none);
  EXPECT_EQ(defaults->contract, "auto");

  flags.prefixes = {dir.path().string()};
  const auto given = flags.over_defaults("facts", err);
  ASSERT_TRUE(given.has_value()) << err.str();
  EXPECT_EQ(given->prefixes, Paths{dir.path()});
  EXPECT_TRUE(given->roots.empty());
  EXPECT_EQ(err.str(), "");
}

// A mistyped path is a configuration error, said with the verb and the
// flag, not a host without envs.
TEST(SharedFlags, OverTheDefaultsRefusesARootOrPrefixThatIsNoDirectory) {
  testing::TempDir dir;
  const auto file = dir.write("file", "x");
  const auto missing = dir.path() / "missing";
  {
    ScanFlags flags;
    flags.roots = {dir.path().string(), missing.string()};
    std::ostringstream err;
    EXPECT_EQ(flags.over_defaults("scan", err), std::nullopt);
    EXPECT_EQ(err.str(), "envcontractd scan: --root " + missing.string() +
                             ": no such directory (or it cannot be read)\n");
  }
  {
    ScanFlags flags;
    flags.prefixes = {file.string()};
    std::ostringstream err;
    EXPECT_EQ(flags.over_defaults("plan", err), std::nullopt);
    EXPECT_EQ(err.str(), "envcontractd plan: --prefix " + file.string() +
                             ": no such directory (or it cannot be read)\n");
  }
}

TEST(SharedFlags, MissingDirectoryNamesTheFirstRootThenPrefixThatIsNone) {
  testing::TempDir dir;
  discovery::DiscoveryOptions options;
  EXPECT_EQ(daemon::missing_directory(options), "") << "none given, none missing";
  options.roots = {dir.path()};
  options.prefixes = {dir.path()};
  EXPECT_EQ(daemon::missing_directory(options), "");
  options.prefixes = {dir.path() / "p1", dir.path() / "p2"};
  options.roots = {dir.path(), dir.path() / "r1"};
  EXPECT_EQ(daemon::missing_directory(options), "--root " + (dir.path() / "r1").string() +
                                                    ": no such directory (or it cannot be read)");
  options.roots = {dir.path()};
  EXPECT_EQ(daemon::missing_directory(options), "--prefix " + (dir.path() / "p1").string() +
                                                    ": no such directory (or it cannot be read)");
}

// A relative path is named absolute: a service's working directory is
// nobody's guess.
TEST(SharedFlags, AMissingRelativeDirectoryIsNamedAbsolute) {
  discovery::DiscoveryOptions options;
  options.roots = {"no-such-dir/../no-such-dir/x"};
  EXPECT_EQ(daemon::missing_directory(options),
            "--root " + (std::filesystem::current_path() / "no-such-dir/x").string() +
                ": no such directory (or it cannot be read)");
}

TEST(SharedFlags, HostFactsOptionsCarryWhereAndHowTheScanLooks) {
  AgentConfig config = from_a_config_file();
  discovery::ContainerConfig container;
  container.name = "trainer";
  config.containers = {container};
  config.container_discovery = discovery::ContainerDiscovery{};
  config.container_discovery->label = "scan=yes";
  const auto options = daemon::host_facts_options(config);
  EXPECT_EQ(options.discovery.roots, Paths{"/srv"});
  EXPECT_EQ(options.discovery.prefixes, Paths{"/opt/env"});
  EXPECT_EQ(options.discovery.run_as.root_envs_user, "ci");
  ASSERT_EQ(options.containers.size(), 1U);
  EXPECT_EQ(options.containers[0].name, "trainer");
  ASSERT_TRUE(options.container_discovery.has_value());
  EXPECT_EQ(options.container_discovery->label, "scan=yes");
  EXPECT_EQ(options.image.kind, Kind::file);
  EXPECT_EQ(options.image.value, "/etc/flagos-image");
}

}  // namespace
}  // namespace envcontract
