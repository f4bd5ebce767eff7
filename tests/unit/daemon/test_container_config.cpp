// daemon/container_config.cpp: the YAML listing containers and container_discovery.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "contracts/mapping_reader.hpp"
#include "contracts/yaml_document.hpp"
#include "daemon/container_config.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/hostile_yaml.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using daemon::ContainerSettings;
using Exec = discovery::ContainerConfig::Exec;
using Paths = std::vector<std::filesystem::path>;

using Position = testing::Position;

// Where the `occurrence`th `needle` of `text` starts, plus `offset` columns:
// positions are named by what stands there rather than counted by hand.
Position at(const std::string& text, std::string_view needle, int offset = 0, int occurrence = 1) {
  std::size_t found = std::string::npos;
  for (std::size_t from = 0; occurrence-- > 0; from = found + 1) {
    found = text.find(needle, from);
    if (found == std::string::npos) {
      ADD_FAILURE() << "'" << needle << "' is not in the text";
      return {};
    }
  }
  const auto line_start = text.rfind('\n', found);
  const auto column = line_start == std::string::npos ? found : found - line_start - 1;
  return {
      static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(found), '\n')) + 1,
      static_cast<int>(column) + offset + 1};
}

// The agent config's way in: read_containers on the top mapping, with the
// diagnostics kept typed.
struct Read {
  ContainerSettings settings;
  contracts::Diagnostics diagnostics;

  // Where each error is, in file order; every diagnostic is an error.
  std::vector<Position> errors() const {
    std::vector<Position> positions;
    for (const auto& diagnostic : diagnostics.sorted()) {
      EXPECT_EQ(diagnostic.level, contracts::DiagnosticLevel::error) << diagnostic.to_string();
      EXPECT_EQ(diagnostic.where.file, "agent.yaml");
      positions.push_back({diagnostic.where.line, diagnostic.where.column});
    }
    return positions;
  }
};

Read read(const std::string& text, ContainerSettings settings = {}) {
  Read result{std::move(settings), {}};
  contracts::ParseContext ctx("agent.yaml", result.diagnostics);
  if (const auto document = contracts::load_yaml_text(text, ctx)) {
    contracts::MappingReader top(*document, "the agent config", ctx);
    daemon::read_containers(top, result.settings);
  }
  return result;
}

// The positions of read_containers_file's "file:line:column: error: ..." lines.
std::vector<Position> file_errors(const std::string& text, const std::filesystem::path& file) {
  std::vector<Position> positions;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::string prefix = file.string() + ":";
    int line_number = 0;
    int column = 0;
    char after = 0;
    if (line.rfind(prefix, 0) != 0 ||
        std::sscanf(line.c_str() + prefix.size(), "%d:%d%c", &line_number, &column, &after) != 3 ||
        after != ':' || line.find(": error: ") == std::string::npos) {
      ADD_FAILURE() << "not a positioned error: " << line;
      continue;
    }
    positions.push_back({line_number, column});
  }
  return positions;
}

std::string message_at(const Read& result, Position where) {
  for (const auto& diagnostic : result.diagnostics.all()) {
    if (diagnostic.where.line == where.line && diagnostic.where.column == where.column) {
      return diagnostic.message;
    }
  }
  return "";
}

TEST(ContainerConfig, ReadsEachKindOfContainerAndTheDiscovery) {
  const std::string text =
      "containers:\n"
      "  - name: trainer.0_x-1\n"
      "    exec: podman\n"
      "    container: trainer-0\n"
      "    env_roots: /opt/conda\n"
      "  - name: serving\n"
      "    exec: nsenter\n"
      "    pid: 4194304\n"
      "    runtime: podman\n"
      "    image_command: cat /etc/image\n"
      "  - name: box\n"
      "    exec: [/usr/bin/setpriv, --reuid, '{uid}', --regid, '{gid}', --clear-groups]\n"
      "    exec_switches_user: true\n"
      "    rootfs: /srv/box\n"
      "    image: registry.example/box:1.0\n"
      "container_discovery:\n"
      "  runtime: podman\n"
      "  label: envcontract.scan\n"
      "  exec: podman\n";
  const auto result = read(text);
  ASSERT_EQ(result.errors(), std::vector<Position>{}) << result.diagnostics.text();
  const auto& containers = result.settings.containers;
  ASSERT_EQ(containers.size(), 3U);
  EXPECT_EQ(containers[0].name, "trainer.0_x-1");
  EXPECT_EQ(containers[0].exec, Exec::podman);
  EXPECT_EQ(containers[0].container, "trainer-0");
  EXPECT_EQ(containers[0].env_roots, Paths{"/opt/conda"});  // one path for a list of one
  EXPECT_EQ(containers[1].exec, Exec::nsenter);
  EXPECT_EQ(containers[1].pid, 4194304);
  EXPECT_EQ(containers[1].runtime, "podman");
  EXPECT_EQ(containers[1].image_command, "cat /etc/image");
  EXPECT_EQ(containers[1].env_roots, Paths{"/"});  // the default
  EXPECT_EQ(containers[2].exec, Exec::argv);
  EXPECT_EQ(containers[2].argv, (std::vector<std::string>{"/usr/bin/setpriv", "--reuid", "{uid}",
                                                          "--regid", "{gid}", "--clear-groups"}));
  EXPECT_TRUE(containers[2].argv_switches_user);
  EXPECT_EQ(containers[2].rootfs, "/srv/box");
  EXPECT_EQ(containers[2].image, "registry.example/box:1.0");
  ASSERT_TRUE(result.settings.discovery.has_value());
  EXPECT_EQ(result.settings.discovery->runtime, "podman");
  EXPECT_EQ(result.settings.discovery->label, "envcontract.scan");
  EXPECT_EQ(result.settings.discovery->exec, Exec::podman);
  EXPECT_EQ(result.settings.discovery->env_roots, Paths{"/"});
}

TEST(ContainerConfig, WrongTypesAreReportedAtTheirValues) {
  const std::string text =
      "containers:\n"
      "  - name: [a]\n"
      "    exec: docker\n"
      "    container: c1\n"
      "  - name: b\n"
      "    exec: nsenter\n"
      "    container: c2\n"
      "    pid: twelve\n"
      "  - name: c\n"
      "    exec: nsenter\n"
      "    container: c3\n"
      "    pid: 0\n"
      "  - name: d\n"
      "    exec: nsenter\n"
      "    container: c4\n"
      "    pid: 4194305\n"
      "  - name: e\n"
      "    exec: [/usr/bin/run, '{uid}']\n"
      "    rootfs: /srv/e\n"
      "    exec_switches_user: yes\n"
      "  - name: f\n"
      "    exec: docker\n"
      "    container: c6\n"
      "    env_roots: {conda: /opt/conda}\n"
      "  - name: g\n"
      "    exec: docker\n"
      "    container: c7\n"
      "    image: [x]\n"
      "  - name: h\n"
      "    exec: {command: /usr/bin/run}\n"
      "    container: c8\n";
  const auto result = read(text);
  EXPECT_EQ(result.errors(),
            (std::vector<Position>{at(text, "[a]"), at(text, "twelve"), at(text, "pid: 0", 5),
                                   at(text, "4194305"), at(text, "yes"), at(text, "{conda"),
                                   at(text, "[x]"), at(text, "{command")}))
      << result.diagnostics.text();
  // Each container is still read, with what could be read of it.
  ASSERT_EQ(result.settings.containers.size(), 8U);
  EXPECT_EQ(result.settings.containers[1].pid, 0);
  EXPECT_FALSE(result.settings.containers[4].argv_switches_user);
}

TEST(ContainerConfig, UnknownKeysAreReportedAtTheKeyWithTheKeyMeant) {
  const std::string text =
      "containers:\n"
      "  - name: a\n"
      "    exec: docker\n"
      "    container: trainer-0\n"
      "    enf_roots: [/opt/conda]\n"
      "container_discovery:\n"
      "  runtime: docker\n"
      "  lable: envcontract.scan=true\n";
  const auto result = read(text);
  ASSERT_EQ(result.errors(), (std::vector<Position>{at(text, "enf_roots"), at(text, "lable")}))
      << result.diagnostics.text();
  EXPECT_NE(message_at(result, at(text, "enf_roots")).find("'env_roots'"), std::string::npos)
      << message_at(result, at(text, "enf_roots"));
  EXPECT_NE(message_at(result, at(text, "lable")).find("'label'"), std::string::npos)
      << message_at(result, at(text, "lable"));
  EXPECT_EQ(result.settings.containers[0].env_roots, Paths{"/"});  // the typo's value is not taken
}

// The second of two containers named alike is the mistake; a key given
// twice in one container is too.
TEST(ContainerConfig, DuplicateNamesAndKeysAreReportedWhereTheyRepeat) {
  const std::string text =
      "containers:\n"
      "  - name: a\n"
      "    exec: docker\n"
      "    container: x\n"
      "  - name: b\n"
      "    exec: docker\n"
      "    container: y\n"
      "  - name: a\n"
      "    exec: podman\n"
      "    container: z\n"
      "  - name: c\n"
      "    exec: docker\n"
      "    container: first\n"
      "    container: second\n";
  const auto result = read(text);
  ASSERT_EQ(result.errors(),
            (std::vector<Position>{at(text, "name: a", 6, 2), at(text, "container: second")}))
      << result.diagnostics.text();
  ASSERT_EQ(result.settings.containers.size(), 4U);
  EXPECT_EQ(result.settings.containers[3].container, "first");
}

// A command line is a list whose first word is an absolute path: no shell
// splits a string, and nothing looks a relative word up on PATH.
TEST(ContainerConfig, ExecCommandLinesThatCannotRunAreRefused) {
  const std::string text =
      "containers:\n"
      "  - name: empty\n"
      "    exec: []\n"
      "    container: x\n"
      "  - name: relative\n"
      "    exec: [bwrap, --ro-bind, /srv, /]\n"
      "    container: x\n"
      "  - name: string\n"
      "    exec: /usr/bin/bwrap --ro-bind /srv /\n"
      "    container: x\n"
      "  - name: blank\n"
      "    exec: ['']\n"
      "    container: x\n"
      "  - name: nested\n"
      "    exec: [/usr/bin/bwrap, [--ro-bind]]\n"
      "    container: x\n";
  const auto result = read(text);
  EXPECT_EQ(result.errors(), (std::vector<Position>{at(text, "[]"), at(text, "[bwrap"),
                                                    at(text, "/usr/bin/bwrap --ro"),
                                                    at(text, "['']"), at(text, "[--ro-bind]")}))
      << result.diagnostics.text();
  for (const auto& container : result.settings.containers) {
    EXPECT_NE(container.exec, Exec::argv) << container.name;
    EXPECT_TRUE(container.argv.empty()) << container.name;
  }
}

TEST(ContainerConfig, RelativeAndEmptyRootsAreRefused) {
  const std::string text =
      "containers:\n"
      "  - name: box\n"
      "    exec: [/usr/bin/bwrap]\n"
      "    rootfs: srv/box\n"
      "    env_roots: [/opt/conda, workspace]\n"
      "  - name: blank\n"
      "    exec: [/usr/bin/bwrap]\n"
      "    rootfs: ''\n"
      "container_discovery:\n"
      "  runtime: docker\n"
      "  env_roots: opt/conda\n";
  const auto result = read(text);
  // An empty rootfs is no rootfs, which a command line needs (at its container).
  EXPECT_EQ(result.errors(), (std::vector<Position>{at(text, "srv/box"), at(text, "[/opt/conda"),
                                                    at(text, "name: blank"), at(text, "''"),
                                                    at(text, "opt/conda\n")}))
      << result.diagnostics.text();
}

TEST(ContainerConfig, ACommandLineNeedsARootfsAndNamesTheUserItSwitchesTo) {
  const std::string text =
      "containers:\n"
      "  - name: no-rootfs\n"
      "    exec: [/usr/bin/bwrap]\n"
      "  - name: switch-without-uid\n"
      "    exec: [/usr/bin/sudo, -u, nobody]\n"
      "    rootfs: /srv\n"
      "    exec_switches_user: true\n"
      "  - name: switch-on-docker\n"
      "    exec: docker\n"
      "    container: c\n"
      "    exec_switches_user: false\n"
      "  - name: not-switching\n"
      "    exec: [/usr/sbin/chroot, /srv]\n"
      "    rootfs: /srv\n"
      "    exec_switches_user: false\n";
  const auto result = read(text);
  EXPECT_EQ(result.errors(), (std::vector<Position>{at(text, "name: no-rootfs"), at(text, "true"),
                                                    at(text, "false")}))
      << result.diagnostics.text();
  ASSERT_EQ(result.settings.containers.size(), 4U);
  EXPECT_EQ(result.settings.containers[3].exec, Exec::argv);
  EXPECT_FALSE(result.settings.containers[3].argv_switches_user);
}

TEST(ContainerConfig, EachExecNeedsWhatFindsItsContainer) {
  const std::string text =
      "containers:\n"
      "  - name: d\n"
      "    exec: docker\n"
      "  - name: p\n"
      "    exec: podman\n"
      "    container: ''\n"
      "  - name: n\n"
      "    exec: nsenter\n"
      "    runtime: podman\n"
      "  - name: pid-on-docker\n"
      "    exec: docker\n"
      "    container: c\n"
      "    pid: 42\n"
      "  - name: by-pid\n"
      "    exec: nsenter\n"
      "    pid: 43\n"
      "  - name: both-images\n"
      "    exec: docker\n"
      "    container: c\n"
      "    image: a\n"
      "    image_command: cat /etc/image\n"
      "  - name: lxc-runtime\n"
      "    exec: nsenter\n"
      "    container: c\n"
      "    runtime: lxc\n";
  const auto result = read(text);
  EXPECT_EQ(result.errors(),
            (std::vector<Position>{at(text, "name: d"), at(text, "name: p"), at(text, "name: n"),
                                   at(text, "42"), at(text, "cat /etc/image"),
                                   at(text, "runtime: lxc", 9)}))
      << result.diagnostics.text();
  ASSERT_EQ(result.settings.containers.size(), 7U);
  EXPECT_EQ(result.settings.containers[4].pid, 43);  // nsenter by pid alone is fine
}

TEST(ContainerConfig, NamesAreShortPlainWordsOrRequired) {
  const std::string longest(64, 'n');
  const std::string text =
      "containers:\n"
      "  - name: " +
      longest +
      "\n    exec: docker\n    container: c\n"
      "  - name: " +
      longest +
      "x\n    exec: docker\n    container: c\n"
      "  - name: ''\n    exec: docker\n    container: c\n"
      "  - name: a b\n    exec: docker\n    container: c\n"
      "  - name: ../etc\n    exec: docker\n    container: c\n"
      "  - exec: docker\n    container: c\n"
      "  - name: \xc3\xbc\n    exec: docker\n    container: c\n";
  const auto result = read(text);
  EXPECT_EQ(result.errors(),
            (std::vector<Position>{at(text, longest + "x"), at(text, "''"), at(text, "a b"),
                                   at(text, "../etc"), at(text, "exec: docker", 0, 6),
                                   at(text, "\xc3\xbc")}))
      << result.diagnostics.text();
}

TEST(ContainerConfig, DiscoveryMistakesAreReportedAtTheirValues) {
  {
    const std::string text = "container_discovery:\n  label: scan\n";
    const auto result = read(text);
    EXPECT_EQ(result.errors(), std::vector<Position>{at(text, "label")})  // runtime is required
        << result.diagnostics.text();
  }
  {
    const std::string text = "container_discovery: {runtime: lxd, label: scan}\n";
    const auto result = read(text);
    EXPECT_EQ(result.errors(), std::vector<Position>{at(text, "lxd")}) << result.diagnostics.text();
  }
  {
    // The exec of found containers is nsenter or their own runtime's.
    const std::string text = "container_discovery: {runtime: podman, exec: docker}\n";
    const auto result = read(text);
    EXPECT_EQ(result.errors(), std::vector<Position>{at(text, "docker")})
        << result.diagnostics.text();
  }
  {
    const std::string text = "container_discovery: {runtime: podman, exec: nsenter}\n";
    const auto result = read(text);
    EXPECT_EQ(result.errors(), std::vector<Position>{}) << result.diagnostics.text();
    ASSERT_TRUE(result.settings.discovery.has_value());
    EXPECT_EQ(result.settings.discovery->exec, Exec::nsenter);
  }
  {
    const std::string text = "container_discovery: docker\n";
    const auto result = read(text);
    EXPECT_EQ(result.errors(), std::vector<Position>{at(text, "docker")})
        << result.diagnostics.text();
    EXPECT_FALSE(result.settings.discovery.has_value());
  }
}

// Each key replaces what was there (a --containers file over the agent's
// config); a key that is absent, or not a list, leaves it.
TEST(ContainerConfig, EachKeyGivenReplacesWhatWasThere) {
  ContainerSettings before;
  before.containers.resize(1);
  before.containers[0].name = "old";
  before.discovery = discovery::ContainerDiscovery{};

  auto result = read("container_discovery: {runtime: podman}\n", before);
  EXPECT_EQ(result.errors(), std::vector<Position>{});
  ASSERT_EQ(result.settings.containers.size(), 1U);
  EXPECT_EQ(result.settings.containers[0].name, "old");
  EXPECT_EQ(result.settings.discovery->runtime, "podman");

  result = read("containers: []\n", before);
  EXPECT_EQ(result.errors(), std::vector<Position>{});
  EXPECT_TRUE(result.settings.containers.empty());
  EXPECT_EQ(result.settings.discovery->runtime, "docker");

  // A mapping where the list belongs (the "- " forgotten).
  const std::string mapping = "containers: {name: a, exec: docker, container: c}\n";
  result = read(mapping, before);
  EXPECT_EQ(result.errors(), std::vector<Position>{at(mapping, "{")});
  ASSERT_EQ(result.settings.containers.size(), 1U);
  EXPECT_EQ(result.settings.containers[0].name, "old");

  const std::string items = "containers: [trainer, {name: b, exec: docker, container: c}]\n";
  result = read(items, before);
  EXPECT_EQ(result.errors(), std::vector<Position>{at(items, "trainer")});
  ASSERT_EQ(result.settings.containers.size(), 1U);
  EXPECT_EQ(result.settings.containers[0].name, "b");
}

// An exec that is not understood (a typo, or none at all) is one error: what
// depends on the exec ('pid', 'exec_switches_user', what each exec needs) is
// not judged against a default docker container the user never wrote.
TEST(ContainerConfig, AnExecNotUnderstoodIsOneErrorNotAlsoADockerContainersMistakes) {
  const std::string text =
      "containers:\n"
      "  - name: serving\n"
      "    exec: nsentr\n"
      "    pid: 4242\n"
      "  - name: sandbox\n"
      "    rootfs: /srv/box\n";
  const auto result = read(text);
  EXPECT_EQ(result.errors(), (std::vector<Position>{at(text, "nsentr"), at(text, "name: sandbox")}))
      << result.diagnostics.text();
}

TEST(ContainerConfig, AnAliasedValueIsReadWhereverItIsUsed) {
  const std::string text =
      "containers:\n"
      "  - name: a\n"
      "    exec: docker\n"
      "    container: a\n"
      "    env_roots: &roots [/opt/conda, /workspace]\n"
      "  - name: b\n"
      "    exec: docker\n"
      "    container: b\n"
      "    env_roots: *roots\n";
  const auto result = read(text);
  ASSERT_EQ(result.errors(), std::vector<Position>{}) << result.diagnostics.text();
  ASSERT_EQ(result.settings.containers.size(), 2U);
  EXPECT_EQ(result.settings.containers[1].env_roots, (Paths{"/opt/conda", "/workspace"}));
}

// Aliases that no walk of the tree survives are refused at the alias, before
// the containers are read (common/yaml_aliases.hpp bounds them).
TEST(ContainerConfig, AliasBombsAndCyclesAreRefusedAtTheAlias) {
  testing::TempDir dir;
  const std::string laughs =
      "containers:\n" + testing::billion_laughs(testing::LaughsLayout::sequence);
  const auto bomb = dir.write("bomb.yaml", laughs);
  ContainerSettings settings;
  auto positions = file_errors(daemon::read_containers_file(bomb, settings), bomb);
  ASSERT_EQ(positions.size(), 1U);
  ASSERT_GT(positions[0].line, 0);
  ASSERT_GT(positions[0].column, 0);
  // At an alias of the list of lists, written out past the bound.
  std::istringstream lines(laughs);
  std::string line;
  for (int i = 0; i < positions[0].line; ++i) {
    std::getline(lines, line);
  }
  EXPECT_EQ(line.compare(static_cast<std::size_t>(positions[0].column - 1), 4, "*lol"), 0)
      << positions[0] << ": " << line;
  EXPECT_TRUE(settings.containers.empty());

  const std::string cycle_text = "containers: &c [*c]\n";
  const auto cycle = dir.write("cycle.yaml", cycle_text);
  positions = file_errors(daemon::read_containers_file(cycle, settings), cycle);
  EXPECT_EQ(positions, std::vector<Position>{at(cycle_text, "*c")});
  EXPECT_TRUE(settings.containers.empty());
}

TEST(ContainerConfig, AContainersFileIsReadWithEveryMistakePositioned) {
  testing::TempDir dir;
  const auto good = dir.write("good.yaml",
                              "# the trainers\n"
                              "containers:\n"
                              "  - name: trainer\n"
                              "    exec: docker\n"
                              "    container: trainer-0\n"
                              "container_discovery: {runtime: docker, label: scan}\n");
  ContainerSettings settings;
  EXPECT_EQ(daemon::read_containers_file(good, settings), "");
  ASSERT_EQ(settings.containers.size(), 1U);
  EXPECT_EQ(settings.containers[0].container, "trainer-0");
  ASSERT_TRUE(settings.discovery.has_value());
  EXPECT_EQ(settings.discovery->label, "scan");

  // Only the two keys: the agent config's others are unknown here.
  const std::string extra_text =
      "containers: []\n"
      "roots: [/]\n"
      "containers:\n"
      "  - name: late\n";
  const auto extra = dir.write("extra.yaml", extra_text);
  ContainerSettings unused;
  EXPECT_EQ(file_errors(daemon::read_containers_file(extra, unused), extra),
            (std::vector<Position>{at(extra_text, "roots"), at(extra_text, "containers", 0, 2)}));
  EXPECT_TRUE(unused.containers.empty());  // the first of a key given twice

  const std::string list_text = "- name: a\n  exec: docker\n";
  const auto list = dir.write("list.yaml", list_text);
  EXPECT_EQ(file_errors(daemon::read_containers_file(list, unused), list),
            std::vector<Position>{at(list_text, "- name")});

  const std::string tab_text = "containers:\n  - name: a\n\t exec: docker\n";
  const auto tab = dir.write("tab.yaml", tab_text);
  const auto tab_errors = file_errors(daemon::read_containers_file(tab, unused), tab);
  ASSERT_EQ(tab_errors.size(), 1U);
  EXPECT_EQ(tab_errors[0].line, 3);
}

// A file saying nothing is a mistake (a --containers file is given to say
// something), and so is one that is not there.
TEST(ContainerConfig, AnEmptyOrMissingContainersFileIsAnError) {
  testing::TempDir dir;
  ContainerSettings settings;
  for (const auto& file : {dir.write("empty.yaml", ""), dir.write("comments.yaml", "# none\n"),
                           dir.path() / "missing.yaml"}) {
    const auto text = daemon::read_containers_file(file, settings);
    EXPECT_EQ(text.rfind(file.string() + ": error: ", 0), 0U) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  }
  EXPECT_TRUE(settings.containers.empty());
  EXPECT_FALSE(settings.discovery.has_value());
}

}  // namespace
}  // namespace envcontract
