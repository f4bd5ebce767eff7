// The agent's YAML config and `contract: auto`.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "daemon/agent_config.hpp"
#include "daemon/contract_detection.hpp"
#include "tests/support/hostile_yaml.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using daemon::AgentConfig;

TEST(AgentConfig, ReadsEverySettingAndKeepsDefaultsForTheRest) {
  testing::TempDir dir;
  const auto file = dir.write("agent.yaml",
                              "contract: /etc/envcontract/kunlunxin.yaml\n"
                              "roots: [/, /var/lib/containers/rootfs]\n"
                              "listen: 0.0.0.0:9800\n"
                              "database: /srv/envcontract.db\n"
                              "image_tag: {file: /etc/flagos-image}\n"
                              "interval: 10m\n"
                              "reprobe_interval: 1h\n"
                              "concurrency: 3\n"
                              "token_file: /etc/envcontract/token\n"
                              "log_level: debug\n"
                              "flapping: {changes: 5, window: 12h}\n"
                              "http_threads: 8\n"
                              "run_integration_tests: [Check device availability]\n"
                              "checkout: /opt/Torch-FL\n");
  AgentConfig config;
  ASSERT_EQ(daemon::read_agent_config(file, config).text(), "");
  EXPECT_EQ(config.contract, "/etc/envcontract/kunlunxin.yaml");
  EXPECT_EQ(config.roots.size(), 2U);
  EXPECT_EQ(config.listen, "0.0.0.0:9800");
  EXPECT_EQ(config.database, "/srv/envcontract.db");
  EXPECT_EQ(config.image.kind, discovery::ImageTagSource::Kind::file);
  EXPECT_EQ(config.image.value, "/etc/flagos-image");
  EXPECT_EQ(config.interval, std::chrono::minutes(10));
  EXPECT_EQ(config.reprobe_interval, std::chrono::hours(1));
  EXPECT_EQ(config.concurrency, 3U);
  EXPECT_EQ(config.log_level, "debug");
  EXPECT_EQ(config.flapping.changes, 5);
  EXPECT_EQ(config.flapping.window, std::chrono::hours(12));
  EXPECT_EQ(config.http_threads, 8U);
  EXPECT_EQ(config.run_integration_tests, std::vector<std::string>{"Check device availability"});
  EXPECT_EQ(config.checkout, "/opt/Torch-FL");
  EXPECT_EQ(config.contracts_dir, AgentConfig{}.contracts_dir);
}

TEST(AgentConfig, EveryMistakeIsReportedWithItsPosition) {
  testing::TempDir dir;
  const auto file = dir.write("agent.yaml",
                              "intervall: 5m\n"
                              "listen: somewhere\n"
                              "interval: soon\n"
                              "image_tag: {file: /a, env: B}\n"
                              "log_level: loud\n"
                              "interval: 5m\n");
  AgentConfig config;
  const auto diagnostics = daemon::read_agent_config(file, config);
  ASSERT_TRUE(diagnostics.has_errors());
  EXPECT_EQ(diagnostics.error_count(), 6U) << diagnostics.text();
  const auto first = diagnostics.sorted().front();
  EXPECT_EQ(first.level, contracts::DiagnosticLevel::error);
  EXPECT_EQ(first.where.file, file.string());
  EXPECT_EQ(first.where.line, 1);
  EXPECT_EQ(first.where.column, 1);
  const auto errors = diagnostics.text();
  const auto f = file.string();
  EXPECT_NE(errors.find(f + ":1:1: error: unknown key 'intervall' in the agent config"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("did you mean 'interval'"), std::string::npos);
  EXPECT_NE(errors.find(f + ":2:9: error: 'listen' must be HOST:PORT"), std::string::npos);
  EXPECT_NE(errors.find(f + ":3:11: error: 'interval': expected a duration"), std::string::npos);
  EXPECT_NE(errors.find("'image_tag' takes exactly one of file, env or command"),
            std::string::npos);
  EXPECT_NE(errors.find("'log_level' must be one of"), std::string::npos);
  EXPECT_NE(errors.find("duplicate key 'interval'"), std::string::npos) << errors;
}

TEST(AgentConfig, WebhooksAreReadAndTheirMistakesPlaced) {
  testing::TempDir dir;
  const auto good = dir.write("good.yaml",
                              "webhooks:\n"
                              "  - url: http://alerts.internal:9000/envcontract\n"
                              "    secret_file: /etc/envcontract/webhook-secret\n"
                              "    timeout: 2s\n    retry_delay: 500ms\n    attempts: 3\n");
  AgentConfig config;
  ASSERT_EQ(daemon::read_agent_config(good, config).text(), "");
  ASSERT_EQ(config.webhooks.size(), 1U);
  EXPECT_EQ(config.webhooks[0].url, "http://alerts.internal:9000/envcontract");
  EXPECT_EQ(config.webhooks[0].secret_file, "/etc/envcontract/webhook-secret");
  EXPECT_EQ(config.webhooks[0].timeout, std::chrono::seconds(2));
  EXPECT_EQ(config.webhooks[0].retry_delay, std::chrono::milliseconds(500));
  EXPECT_EQ(config.webhooks[0].attempts, 3);

  const auto bad = dir.write("bad.yaml",
                             "webhooks:\n"
                             "  - url: https://alerts.example/x\n    secret_file: /s\n"
                             "  - url: http://a/b\n"
                             "  - url: http://a/b\n    secret_file: /s\n    atempts: 2\n");
  AgentConfig rejected;
  const auto diagnostics = daemon::read_agent_config(bad, rejected);
  EXPECT_TRUE(diagnostics.has_errors());
  const auto errors = diagnostics.text();
  EXPECT_NE(errors.find("bad.yaml:2:10: error: webhook URL https://alerts.example/x: https is "
                        "not supported"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("bad.yaml:4:5: error: "), std::string::npos) << errors;
  EXPECT_NE(errors.find("secret_file"), std::string::npos) << errors;
  EXPECT_NE(errors.find("bad.yaml:7:5: error: unknown key 'atempts'"), std::string::npos) << errors;
}

TEST(AgentConfig, ProvisioningIsReadAndRootIsRefused) {
  testing::TempDir dir;
  const auto good = dir.write("good.yaml",
                              "provisioning:\n  enabled: true\n  user: envbuild\n"
                              "  envs_dir: /srv/envs\n  on_failure: remove\n"
                              "  python_dirs: [/opt/python3.10/bin]\n  step_timeout: 10m\n");
  AgentConfig config;
  EXPECT_FALSE(config.provisioning.enabled);  // off unless asked for
  ASSERT_EQ(daemon::read_agent_config(good, config).text(), "");
  EXPECT_TRUE(config.provisioning.enabled);
  EXPECT_EQ(config.provisioning.user, "envbuild");
  EXPECT_EQ(config.provisioning.envs_dir, "/srv/envs");
  EXPECT_TRUE(config.provisioning.remove_on_failure);
  EXPECT_EQ(config.provisioning.python_dirs,
            (std::vector<std::filesystem::path>{"/opt/python3.10/bin"}));
  EXPECT_EQ(config.provisioning.step_timeout, std::chrono::minutes(10));

  const auto bad = dir.write("bad.yaml",
                             "provisioning:\n  user: root\n  envs_dir: srv/envs\n"
                             "  on_failure: delete\n  enable: true\n");
  AgentConfig rejected;
  const auto diagnostics = daemon::read_agent_config(bad, rejected);
  EXPECT_EQ(diagnostics.error_count(), 4U) << diagnostics.text();
  const auto errors = diagnostics.text();
  for (const char* expected :
       {"bad.yaml:2:9: error: provisioning never runs as root",
        "bad.yaml:3:13: error: 'envs_dir' must be an absolute directory",
        "bad.yaml:4:15: error: 'on_failure' is keep",
        "bad.yaml:5:3: error: unknown key 'enable' in 'provisioning' (did you mean 'enabled'?)"}) {
    EXPECT_NE(errors.find(expected), std::string::npos) << expected << "\n" << errors;
  }
}

TEST(AgentConfig, ListenAddresses) {
  EXPECT_EQ(daemon::parse_listen_address("127.0.0.1:9714")->port, 9714);
  EXPECT_EQ(daemon::parse_listen_address("[::1]:80")->host, "::1");
  EXPECT_EQ(daemon::parse_listen_address("localhost:0")->port, 0);
  EXPECT_FALSE(daemon::parse_listen_address("9714"));
  EXPECT_FALSE(daemon::parse_listen_address("host:99999"));
  EXPECT_FALSE(daemon::parse_listen_address("a b:1"));
}

// A host root with device nodes and tools, and a contracts dir with the shipped contracts.
class ContractDetection : public ::testing::Test {
 protected:
  std::filesystem::path contracts() const { return ENVCONTRACT_SOURCE_DIR "/contracts/platforms"; }
  void add_tool(const std::string& name) {
    const auto tool = m_root.write("usr/bin/" + name, "#!/bin/sh\n");
    ::chmod(tool.c_str(), 0755);
  }
  testing::TempDir m_root;
};

TEST_F(ContractDetection, KunlunxinDevicesPickThePlatformsMainContract) {
  m_root.write("dev/xpu0", "");
  m_root.write("dev/xpuctrl", "");
  const auto detected = daemon::detect_contract(contracts(), m_root.path());
  ASSERT_TRUE(detected.ok()) << detected.error();
  const auto& chosen = detected.value();
  EXPECT_EQ(chosen.file.filename(), "kunlunxin.yaml");
  EXPECT_NE(chosen.why.find("/dev/xpu"), std::string::npos) << chosen.why;
}

TEST_F(ContractDetection, MoreSignalsWin) {
  m_root.write("dev/xpu0", "");  // a stray node
  m_root.write("dev/davinci0", "");
  m_root.write("dev/davinci_manager", "");
  add_tool("npu-smi");
  const auto detected = daemon::detect_contract(contracts(), m_root.path());
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file.filename(), "ascend.yaml");
}

TEST_F(ContractDetection, NothingFoundSaysWhatWasLookedFor) {
  const auto detected = daemon::detect_contract(contracts(), m_root.path());
  ASSERT_TRUE(!detected);
  const auto& error = detected.error();
  EXPECT_NE(error.find("found no accelerator"), std::string::npos) << error;
  EXPECT_NE(error.find("/dev/davinci[0-9]*"), std::string::npos);
  EXPECT_NE(error.find("--contract"), std::string::npos);
}

// CI platform configs are candidates too: the devices their containers are
// given (`--device /dev/xpu0`) are what `contract: auto` looks for.
TEST_F(ContractDetection, ACiConfigIsChosenByItsContainersDevices) {
  const std::filesystem::path lines = ENVCONTRACT_SOURCE_DIR "/tests/data/contracts/ci-lines";
  m_root.write("dev/xpu0", "");
  m_root.write("dev/xpuctrl", "");
  const auto detected = daemon::detect_contract(lines, m_root.path());
  ASSERT_TRUE(detected.ok()) << detected.error();
  EXPECT_EQ(detected.value().file.filename(), "kunlunxin-vendor.yml");
  EXPECT_NE(detected.value().why.find("/dev/xpu0"), std::string::npos) << detected.value().why;

  testing::TempDir ascend;
  ascend.write("dev/davinci0", "");
  ascend.write("dev/davinci_manager", "");
  const auto npu = daemon::detect_contract(lines, ascend.path());
  ASSERT_TRUE(npu.ok()) << npu.error();
  EXPECT_EQ(npu.value().file.filename(), "early-main-ascend.yml");
}

TEST_F(ContractDetection, EqualCandidatesWithoutAMainContractAreAmbiguous) {
  testing::TempDir dir;
  for (const char* name : {"a", "b"}) {
    dir.write(std::string(name) + ".yaml",
              "schema_version: 1\nname: " + std::string(name) +
                  "\nplatform: kunlunxin\ndetect:\n  device_nodes: [/dev/xpu*]\n"
                  "checks:\n  - kind: python\n    version: '3.10'\n");
  }
  m_root.write("dev/xpu0", "");
  const auto detected = daemon::detect_contract(dir.path(), m_root.path());
  ASSERT_TRUE(!detected);
  EXPECT_NE(detected.error().find("cannot choose between a.yaml, b.yaml"), std::string::npos)
      << detected.error();
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

TEST(AgentConfig, ThePackagedDefaultIsValidAndMatchesTheBuiltInDefaults) {
  daemon::AgentConfig config;
  ASSERT_EQ(
      daemon::read_agent_config(ENVCONTRACT_SOURCE_DIR "/packaging/agent.yaml", config).text(), "");
  const daemon::AgentConfig defaults;
  EXPECT_EQ(config.contract, defaults.contract);
  EXPECT_EQ(config.contracts_dir, defaults.contracts_dir);
  EXPECT_EQ(config.listen, defaults.listen);
  EXPECT_EQ(config.database, defaults.database);
  EXPECT_EQ(config.interval, defaults.interval);
  EXPECT_EQ(config.reprobe_interval, defaults.reprobe_interval);
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// Container targets as docs/containers.md writes them: each preset, and a
// command line of one's own.
TEST(AgentConfig, ReadsContainerTargets) {
  testing::TempDir dir;
  const auto file = dir.write("agent.yaml",
                              "containers:\n"
                              "  - name: trainer\n"
                              "    exec: docker\n"
                              "    container: trainer-0\n"
                              "    env_roots: [/opt/conda, /workspace]\n"
                              "  - name: serving\n"
                              "    exec: nsenter\n"
                              "    container: serving\n"
                              "    runtime: podman\n"
                              "    image_command: cat /etc/serving-image\n"
                              "  - name: sandbox\n"
                              "    exec: [/usr/bin/bwrap, --ro-bind, /srv/box, /]\n"
                              "    rootfs: /srv/box\n"
                              "    image: registry.example/box:1.0\n"
                              "container_discovery:\n"
                              "  runtime: docker\n"
                              "  label: envcontract.scan=true\n"
                              "  exec: nsenter\n"
                              "  env_roots: [/opt/conda]\n");
  AgentConfig config;
  ASSERT_EQ(daemon::read_agent_config(file, config).text(), "");
  ASSERT_TRUE(config.container_discovery.has_value());
  EXPECT_EQ(config.container_discovery->label, "envcontract.scan=true");
  EXPECT_EQ(config.container_discovery->exec, discovery::ContainerConfig::Exec::nsenter);
  ASSERT_EQ(config.containers.size(), 3U);
  using Exec = discovery::ContainerConfig::Exec;
  EXPECT_EQ(config.containers[0].exec, Exec::docker);
  EXPECT_EQ(config.containers[0].container, "trainer-0");
  EXPECT_EQ(config.containers[0].env_roots,
            (std::vector<std::filesystem::path>{"/opt/conda", "/workspace"}));
  EXPECT_EQ(config.containers[1].exec, Exec::nsenter);
  EXPECT_EQ(config.containers[1].runtime, "podman");
  EXPECT_EQ(config.containers[1].image_command, "cat /etc/serving-image");
  EXPECT_EQ(config.containers[2].exec, Exec::argv);
  EXPECT_EQ(config.containers[2].argv.front(), "/usr/bin/bwrap");
  EXPECT_EQ(config.containers[2].rootfs, "/srv/box");
  EXPECT_EQ(config.containers[2].env_roots, std::vector<std::filesystem::path>{"/"});
}

TEST(AgentConfig, ContainerMistakesAreReportedWithTheirPositions) {
  testing::TempDir dir;
  const auto file = dir.write("agent.yaml",
                              "containers:\n"
                              "  - name: a\n"
                              "    exec: lxc\n"
                              "  - name: a\n"
                              "    exec: docker\n"
                              "  - name: c\n"
                              "    exec: [bwrap, --bind]\n"
                              "  - name: d\n"
                              "    exec: [/usr/bin/bwrap]\n"
                              "    rootfs: srv/box\n"
                              "    env_roots: [opt]\n"
                              "    pid: 12\n"
                              "  - name: e f\n"
                              "    exec: nsenter\n"
                              "    image: x\n"
                              "    image_command: y\n"
                              "    contaner: z\n"
                              "container_discovery: {runtime: lxd, exec: podman}\n");
  AgentConfig config;
  const auto errors = daemon::read_agent_config(file, config).text();
  for (const char* expected :
       {"3:11: error: 'exec' is docker, podman, nsenter or a command line",
        "4:11: error: two containers are named 'a'",
        "4:5: error: container 'a': exec docker and podman need 'container'",
        "7:11: error: 'exec' as a list is a command line whose first word is an absolute path",
        "10:13: error: 'rootfs' must be an absolute directory",
        "11:16: error: 'env_roots' are absolute paths", "12:10: error: 'pid' is for exec: nsenter",
        "13:11: error: a container's 'name' is 1-64 letters",
        "16:20: error: give 'image' or 'image_command', not both", "contaner",
        "exec nsenter needs 'container' (found through 'runtime') or 'pid'",
        "18:32: error: 'runtime' is docker or podman, got 'lxd'",
        "18:43: error: 'exec' of found containers is nsenter or their runtime (lxd)"}) {
    EXPECT_NE(errors.find(expected), std::string::npos) << expected << "\n" << errors;
  }
}

// The agent's config is read by the same loader as contracts: an alias
// cycle overflowed the stack of its first walk (SIGSEGV at start-up), and a
// billion-laughs config kept `envcontractd serve` from ever starting.
TEST(AgentConfig, AnAliasCycleIsRefusedAtTheAlias) {
  testing::TempDir dir;
  const auto file = dir.write("agent.yaml", "roots: &roots [/, *roots]\n");
  AgentConfig config;
  EXPECT_EQ(daemon::read_agent_config(file, config).text(),
            file.string() +
                ":1:19: error: the alias *roots is inside the node it names (an alias cycle), "
                "which no reading of the document ends; write the value out instead of the "
                "alias\n");
}

TEST(AgentConfig, ABillionLaughsIsRefusedAtTheAliasPastTheBound) {
  const std::string text = "webhooks:\n" + testing::billion_laughs(testing::LaughsLayout::sequence);
  testing::TempDir dir;
  const auto file = dir.write("agent.yaml", text);
  AgentConfig config;
  EXPECT_EQ(daemon::read_agent_config(file, config).text(),
            file.string() +
                ":6:61: error: the alias *lol3 expands the YAML beyond 100000 nodes (a "
                "billion-laughs document: aliases of lists of aliases); write the values out, or "
                "alias fewer and smaller nodes\n");
}

}  // namespace
}  // namespace envcontract
