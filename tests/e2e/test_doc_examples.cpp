// The docs cannot drift: every `$ command` of the ```console blocks in
// README.md and docs/*.md runs here, against two real agents on the demo host
// set up as the docs describe them, and its output must have the substance
// the document shows (tests/support/doc_examples.hpp). A block that cannot
// run here says why in a `<!-- not run: ... -->` line before it.
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/doc_examples.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers
namespace fs = std::filesystem;
using Replacements = std::vector<std::pair<std::string, std::string>>;

// Where the docs' clone is, in what the tools print.
const char* const k_clone = "/src/envcontract";

const char* const k_python_only =
    "schema_version: 1\nname: python-only\n"
    "image: harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.1.2\n"
    "checks:\n  - id: python\n    kind: python\n    version: '>=3.6'\n";
// docs/contracts.md shows it (`cat -n bad.yaml`): a typo, an unknown key, a
// duplicate key.
const char* const k_bad_contract =
    "schema_version: 1\nchecks:\n  - kind: tirton\n  - kind: tools\n    on_path: [bash]\n"
    "    on_pth: [git]\n  - kind: torch\n    base: \"2.10.0\"\n    base: \"2.9.0\"\n";

// A port nothing listens on: bound, then closed.
int refused_port() {
  TempDir dir;
  AgentProcess probe(dir.path(), {"--contract", dir.write("p.yaml", k_python_only).string(),
                                  "--prefix", (demo_host() / "venvs/xpu210v").string(),
                                  "--database", (dir.path() / "p.db").string()});
  const int port = probe.port();
  probe.stop();
  return port;
}

std::string hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The docs' world: agent A (`localhost`, the demo contract on the whole demo
// host, a token, its database build/demo-agent/agent.db as scripts/run's
// agent has it), agent B (`localhost:9715`, python-only on torch-fl-cpu),
// nothing on `localhost:9716`; host xpu-node-17. Commands run in a clone
// after scripts/run (build/demo-host, build/demo-envs and the demo contract
// named as from there); what the tools print shows the clone at
// /src/envcontract.
class DocWorld {
 public:
  DocWorld() {
    m_token = m_dir.write("token", "doc-secret\n");
    fs::permissions(m_token, fs::perms::owner_read | fs::perms::owner_write);
    m_contract = quick_demo_contract(m_dir.path());
    const int refused = refused_port();
    // scripts/run's build/demo-envs: new envs, owned by the user the steps
    // run as (nobody, when the test runs as root).
    fs::permissions(m_dir.path(), fs::perms(0755));
    m_envs = m_dir.path() / "demo-envs";
    fs::create_directory(m_envs);
    if (::geteuid() == 0) {
      const auto* nobody = ::getpwnam("nobody");
      if (nobody == nullptr || ::chown(m_envs.c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
        ADD_FAILURE() << "cannot give " << m_envs << " to nobody";
      }
    }
    m_a = std::make_unique<AgentProcess>(
        m_dir.path(),
        std::vector<std::string>{"--contract", m_contract.string(), "--root", demo_host().string(),
                                 "--image-tag-file", (demo_host() / "etc/flagos-image").string(),
                                 "--database", (m_dir.path() / "a.db").string(), "--token-file",
                                 m_token.string()});
    fs::create_directories(m_dir.path() / "b");
    m_b = std::make_unique<AgentProcess>(
        m_dir.path() / "b",
        std::vector<std::string>{
            "--contract", m_dir.write("python-only.yaml", k_python_only).string(), "--prefix",
            (demo_host() / "miniconda3/envs/torch-fl-cpu").string(), "--image-tag-file",
            (demo_host() / "etc/flagos-image").string(), "--database",
            (m_dir.path() / "b.db").string()});
    wait_for_report(*m_a);
    wait_for_report(*m_b);

    const std::string a = "127.0.0.1:" + std::to_string(m_a->port());
    const std::string b = "127.0.0.1:" + std::to_string(m_b->port());
    const std::string c = "127.0.0.1:" + std::to_string(refused);
    m_to_real = {{"localhost:9714", a},
                 {"localhost:9715", b},
                 {"localhost:9716", c},
                 {"localhost", a},
                 {"/etc/envcontract/token", m_token.string()},
                 {"tests/fixtures/demo_host/kunlunxin-demo.yaml", m_contract.string()},
                 {"build/demo-agent/agent.db", (m_dir.path() / "a.db").string()},
                 {"$PWD/build/demo-envs", m_envs.string()},
                 {"build/demo-envs", m_envs.string()},
                 {"build/demo-host", demo_host().string()}};
    m_to_doc = {{b, "localhost:9715"},
                {c, "localhost:9716"},
                {"127.0.0.1 port " + std::to_string(refused), "127.0.0.1 port 9716"},
                {a, "localhost"},
                {m_contract.string(), "tests/fixtures/demo_host/kunlunxin-demo.yaml"},
                {demo_host().string(), std::string(k_clone) + "/build/demo-host"},
                {m_envs.string(), std::string(k_clone) + "/build/demo-envs"},
                {hostname(), "xpu-node-17"}};

    // What relative paths in the examples name: the shipped contracts, and a
    // contract with a typo.
    fs::create_directories(m_dir.path() / "cwd/bin");
    fs::create_directory_symlink(ENVCONTRACT_SOURCE_DIR "/contracts",
                                 m_dir.path() / "cwd/contracts");
    write_text(m_dir.path() / "cwd/bad.yaml", k_bad_contract);
    fs::create_symlink(FLEETCTL_PATH, m_dir.path() / "cwd/bin/fleetctl");
    fs::create_symlink(ENVCONTRACTD_PATH, m_dir.path() / "cwd/bin/envcontractd");
  }

  CommandResult run(const std::string& command) const {
    const std::string real = replace_whole(command, m_to_real);
    return run_command(
        {"/usr/bin/env", "PATH=" + (m_dir.path() / "cwd/bin").string() + ":/usr/bin:/bin",
         "NO_COLOR=1", "/bin/bash", "-c", "cd " + (m_dir.path() / "cwd").string() + " && " + real});
  }

  const Replacements& to_doc() const { return m_to_doc; }

 private:
  TempDir m_dir;
  fs::path m_token;
  fs::path m_contract;
  fs::path m_envs;
  std::unique_ptr<AgentProcess> m_a;
  std::unique_ptr<AgentProcess> m_b;
  Replacements m_to_real;
  Replacements m_to_doc;
};

TEST(DocExamples, EveryConsoleExampleShowsWhatTheToolsDo) {
  if (!fs::exists("/usr/bin/curl")) {
    GTEST_SKIP() << "curl is not installed (scripts/test installs it): the API examples use it";
  }
  DocWorld world;
  int run = 0;
  int skipped = 0;
  for (const char* file :
       {"README.md", "docs/agent.md", "docs/api.md", "docs/fleetctl.md", "docs/contracts.md",
        "docs/security.md", "docs/probes.md", "docs/provisioning.md", "docs/ci.md"}) {
    CommandResult previous;
    for (const auto& example : doc_examples(fs::path(ENVCONTRACT_SOURCE_DIR) / file)) {
      const std::string where =
          example.file + ":" + std::to_string(example.line) + ": $ " + example.command;
      if (!example.skip.empty()) {
        ++skipped;
        continue;
      }
      if (example.command == "echo $?") {
        EXPECT_EQ(std::to_string(previous.exit_code), example.shown) << where;
        continue;
      }
      ++run;
      previous = world.run(example.command);
      const std::string output = previous.out + previous.err;
      if (example.shown.empty()) {
        EXPECT_LT(previous.exit_code, 2) << where << "\n" << output;
        continue;
      }
      EXPECT_EQ(substance_differs(example.shown, output, world.to_doc()), "") << where;
    }
  }
  std::cout << run << " doc examples run, " << skipped << " not run (each says why)\n";
  EXPECT_GE(run, 20) << "the docs' console examples were not found";
}

// The comparison is not vacuous: a changed word, a missing JSON key, an
// extra one and a wrong status code are each caught.
TEST(DocExamples, TheComparisonCatchesWhatDiffers) {
  const Replacements none;
  EXPECT_EQ(substance_differs("host: drift (scanned 2026-11-30T08:46:41Z)\n...\nend",
                              "host:   drift (scanned 2026-12-01T01:02:03Z)\nmore\nend\n", none),
            "");
  EXPECT_NE(substance_differs("host: drift", "host: compliant", none), "");
  EXPECT_NE(substance_differs("b\na", "a\nb", none), "") << "lines must come in order";
  EXPECT_EQ(substance_differs(R"({"a": 1, "b": {...}, "c": ["x", ...]})",
                              R"({"a": 2, "b": {"z": 1}, "c": ["x", "y"]})", none),
            "");
  EXPECT_NE(substance_differs(R"({"a": 1, "b": 2})", R"({"a": 1})", none), "");
  // Keys left out with `...` are not asked for; the shown ones still count.
  EXPECT_EQ(substance_differs("{\n  \"id\": \"x\",\n  ...\n}", R"({"id": "x", "more": 1})", none),
            "");
  EXPECT_NE(substance_differs("{\n  \"id\": \"x\",\n  ...\n}", R"({"id": "y", "more": 1})", none),
            "");
  EXPECT_NE(substance_differs(R"({"list": ["...", {"id": "hang"}]})",
                              R"({"list": [{"id": "a"}, {"id": "b"}]})", none),
            "");
  EXPECT_NE(substance_differs(R"({"a": 1})", R"({"a": 1, "new": 2})", none), "");
  EXPECT_NE(substance_differs("{\"a\": 1}\n503", "{\"a\": 1}\n200", none), "");
  EXPECT_EQ(replace_whole("nvme vm vm:1 /vm/x", {{"vm", "node"}}), "nvme node node:1 /node/x");
  EXPECT_EQ(replace_whole("127.0.0.1:40001 127.0.0.1:4000", {{"127.0.0.1:4000", "a"}}),
            "127.0.0.1:40001 a");
}

}  // namespace
}  // namespace envcontract
