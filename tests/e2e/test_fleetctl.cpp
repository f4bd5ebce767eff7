// fleetctl against real agents on loopback (and a misbehaving server of our
// own): every verb, every format, the exit codes.
#include <signal.h>
#include <sys/stat.h>

#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/report_schema.hpp"
#include "tests/support/rogue_server.hpp"
#include "tests/support/run_command.hpp"

namespace envcontract {
namespace {

using namespace testing;  // NOLINT: the fixture's helpers

const std::string k_fleetctl = FLEETCTL_PATH;
const std::string k_image =
    "harbor.example/flagos-runtime/flagos-runtime-kunlunxin-xre5.37.1:2.1.2";

std::string host_of(const AgentProcess& agent) {
  return "127.0.0.1:" + std::to_string(agent.port());
}

CommandResult fleetctl(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), k_fleetctl);
  return run_command(arguments);
}

// Two envs of the demo host under the demo contract (drift: a hang, a CUDA
// torch), and a contract the demo host's env torch-fl-cpu satisfies (compliant).
struct TwoAgents {
  TwoAgents()
      : drift(m_drift_dir.path(),
              {"--contract", quick_demo_contract(m_drift_dir.path()).string(), "--prefix",
               (demo_host() / "miniconda3/envs/torch-fl-cpu").string(), "--prefix",
               (demo_host() / "miniconda3/envs/torch-fl-hf-test").string(), "--image-tag-file",
               (demo_host() / "etc/flagos-image").string(), "--database",
               (m_drift_dir.path() / "agent.db").string()}),
        compliant(m_compliant_dir.path(),
                  {"--contract",
                   m_compliant_dir
                       .write("ok.yaml", "schema_version: 1\nname: python-only\nimage: " + k_image +
                                             "\nchecks:\n  - id: python\n    kind: python\n"
                                             "    version: '>=3.6'\n")
                       .string(),
                   "--prefix", (demo_host() / "miniconda3/envs/torch-fl-cpu").string(),
                   "--image-tag-file", (demo_host() / "etc/flagos-image").string(), "--database",
                   (m_compliant_dir.path() / "agent.db").string()}) {
    wait_for_report(drift);
    wait_for_report(compliant);
  }

 private:
  TempDir m_drift_dir;
  TempDir m_compliant_dir;

 public:
  AgentProcess drift;
  AgentProcess compliant;
};

TEST(Fleetctl, CheckOneHostInEveryFormat) {
  TwoAgents agents;
  const auto host = host_of(agents.drift);

  const auto table = fleetctl({"check", host});
  EXPECT_EQ(table.exit_code, 1) << table.err;
  EXPECT_NE(table.out.find(": drift; compliant envs: none; contract kunlunxin-demo"),
            std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("torch-fl-cpu"), std::string::npos);
  EXPECT_NE(table.out.find("hang"), std::string::npos);
  EXPECT_EQ(table.out.find("remedy:"), std::string::npos);
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos);  // not a terminal: no colour

  const auto verbose = fleetctl({"check", host, "-v"});
  EXPECT_NE(verbose.out.find("remedy:"), std::string::npos);
  EXPECT_NE(verbose.out.find("since:"), std::string::npos);
  // A hang reads as lines: the spinning thread, the others grouped, the stack
  // a frame a line; not a one-line JSON blob.
  EXPECT_NE(verbose.out.find("#0 xpu_wait (libxpurt.so.1)\n"), std::string::npos) << verbose.out;
  EXPECT_NE(verbose.out.find("#2 torch_fl_embedding (libtorch_fl.so)\n"), std::string::npos);
  if (verbose.out.find("threads running at ~") != std::string::npos) {
    EXPECT_NE(verbose.out.find("% CPU\n"), std::string::npos) << "the spinning thread is named";
  }
  EXPECT_NE(verbose.out.find(" threads: state S, waiting in "), std::string::npos) << verbose.out;
  EXPECT_NE(verbose.out.find("line 15 in embedding\n"), std::string::npos);
  EXPECT_EQ(verbose.out.find("{\"classification\""), std::string::npos);
  EXPECT_EQ(verbose.out.find("\"tid\""), std::string::npos);

  const auto json = fleetctl({"check", "http://" + host + "/", "-o", "json"});
  EXPECT_EQ(json.exit_code, 1);
  const auto report = Json::parse(json.out);
  EXPECT_EQ(report["verdict"], "drift");
  if (const auto violations = report_schema_violations(report)) {
    EXPECT_EQ(*violations, "");
  }

  TempDir dir;
  const auto junit = fleetctl({"check", host, "-o", "junit"});
  EXPECT_EQ(junit.exit_code, 1);
  const auto file = dir.write("junit.xml", junit.out);
  EXPECT_NE(junit.out.find("<testsuite name=\"" + host + "/torch-fl-cpu\""), std::string::npos);
  EXPECT_NE(junit.out.find("type=\"hang\""), std::string::npos);
  EXPECT_NE(junit.out.find("<testsuite name=\"" + host + "/target:ci\""), std::string::npos);
  if (!std::filesystem::exists("/usr/bin/xmllint")) {
    GTEST_SKIP() << "xmllint is not installed (libxml2-utils; scripts/test installs it)";
  }
  const auto valid =
      run_command({"/usr/bin/xmllint", "--noout", "--schema",
                   ENVCONTRACT_SOURCE_DIR "/tests/fixtures/junit/junit.xsd", file.string()});
  EXPECT_EQ(valid.exit_code, 0) << valid.err;
}

TEST(Fleetctl, ManyHostsGetALineEachAndAFleetSummary) {
  TwoAgents agents;
  RogueServer rogue(RogueServer::Behaviour::invalid_json);
  const std::string refused = "127.0.0.1:1";
  const std::string bad = "127.0.0.1:" + std::to_string(rogue.port());

  const auto fleet = fleetctl(
      {"check", host_of(agents.drift), host_of(agents.compliant), refused, bad, "--timeout", "5s"});
  EXPECT_EQ(fleet.exit_code, 2) << fleet.out << fleet.err;
  EXPECT_NE(fleet.out.find(host_of(agents.compliant) + "  compliant"), std::string::npos)
      << fleet.out;
  EXPECT_NE(fleet.out.find("cannot connect"), std::string::npos);
  EXPECT_NE(fleet.out.find("not JSON"), std::string::npos);
  EXPECT_NE(fleet.out.find("1 of 4 hosts drift; 2 unavailable; 1 compliant; top causes: "),
            std::string::npos)
      << fleet.out;

  TempDir dir;
  const auto inventory =
      dir.write("hosts.txt", "# the lab\n" + host_of(agents.drift) + "\n\n" +
                                 host_of(agents.compliant) + "  # the good one\n");
  const auto listed = fleetctl({"check", "--inventory", inventory.string(), "-o", "json"});
  EXPECT_EQ(listed.exit_code, 1) << listed.err;
  const auto json = Json::parse(listed.out);
  EXPECT_EQ(json["summary"]["hosts"], 2);
  EXPECT_EQ(json["summary"]["drift"], 1);
  EXPECT_EQ(json["summary"]["compliant"], 1);
  EXPECT_EQ(json["hosts"][1]["state"], "compliant");

  EXPECT_EQ(fleetctl({"check", host_of(agents.compliant)}).exit_code, 0);
  const auto junit = fleetctl({"check", host_of(agents.compliant), refused, "-o", "junit"});
  EXPECT_EQ(junit.exit_code, 2);
  EXPECT_NE(junit.out.find("type=\"unavailable\""), std::string::npos);

  // Every bad line is named, not only the first.
  const auto bad_inventory = dir.write("bad.txt", "good-host\nnot a host\nok\nhttp://x:99999\n");
  const auto refused_inventory = fleetctl({"check", "--inventory", bad_inventory.string()});
  EXPECT_EQ(refused_inventory.exit_code, 2);
  EXPECT_NE(refused_inventory.err.find(bad_inventory.string() + ":2: 'not a host'"),
            std::string::npos)
      << refused_inventory.err;
  EXPECT_NE(refused_inventory.err.find(bad_inventory.string() + ":4: 'http://x:99999'"),
            std::string::npos)
      << refused_inventory.err;

  // One agent written three ways is asked once.
  const auto twice =
      dir.write("twice.txt", host_of(agents.compliant) + "\nhttp://" + host_of(agents.compliant) +
                                 "/\n" + host_of(agents.drift) + "\n");
  const auto deduplicated =
      fleetctl({"check", host_of(agents.compliant), "--inventory", twice.string(), "-o", "json"});
  EXPECT_EQ(deduplicated.exit_code, 1) << deduplicated.err;
  EXPECT_EQ(Json::parse(deduplicated.out)["summary"]["hosts"], 2) << deduplicated.out;
  EXPECT_NE(deduplicated.err.find("is named twice; it is checked once"), std::string::npos)
      << deduplicated.err;
}

// A name that does not resolve is not "connection refused": the operator
// looks for a typo or a DNS outage, not for a stopped agent.
// An agent that accepts and answers nothing (stopped: SIGSTOP) is given up
// after 4 s of silence, not the whole --timeout, and said to be so.
TEST(Fleetctl, AFrozenAgentCostsSecondsNotTheWholeTimeout) {
  TwoAgents agents;
  TempDir dir;
  const auto inventory =
      dir.write("hosts.txt", host_of(agents.drift) + "\n" + host_of(agents.compliant) + "\n");
  agents.compliant.signal(SIGSTOP);
  const auto started = std::chrono::steady_clock::now();
  const auto checked = fleetctl({"check", "--inventory", inventory.string(), "-o", "json"});
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  agents.compliant.signal(SIGCONT);
  EXPECT_EQ(checked.exit_code, 2) << checked.out << checked.err;
  EXPECT_LT(took, 8.0) << "the default --timeout is 10 s";
  const auto json = Json::parse(checked.out, nullptr, false);
  ASSERT_TRUE(json.is_object()) << checked.out;
  EXPECT_EQ(json["hosts"][0]["state"], "drift") << "the other host's answer is kept";
  EXPECT_EQ(json["hosts"][1]["error"],
            "it accepted the connection and sent nothing for 4.0 s (is it stopped or stuck?)")
      << json["hosts"][1];
}

TEST(Fleetctl, UnresolvableAndRefusedHostsAreToldApart) {
  const auto unresolvable = fleetctl({"check", "no-such-host.invalid", "--timeout", "5s"});
  EXPECT_EQ(unresolvable.exit_code, 2);
  EXPECT_NE(unresolvable.err.find("cannot resolve the host name 'no-such-host.invalid'"),
            std::string::npos)
      << unresolvable.err;
  const auto refused = fleetctl({"check", "127.0.0.1:1", "--timeout", "5s"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("cannot connect to 127.0.0.1 port 1 (connection refused"),
            std::string::npos)
      << refused.err;
}

// One grammar: -o before or after the verb, --format as its alias, and the
// verb's own formats still decide.
TEST(Fleetctl, OutputOptionBeforeOrAfterTheVerb) {
  TwoAgents agents;
  const auto host = host_of(agents.compliant);
  for (const std::vector<std::string>& arguments :
       {std::vector<std::string>{"-o", "json", "check", host},
        std::vector<std::string>{"check", host, "--format", "json"},
        std::vector<std::string>{"--format", "json", "check", host, "-o", "json"}}) {
    const auto result = fleetctl(arguments);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(Json::parse(result.out, nullptr, false)["verdict"], "compliant") << result.out;
  }
  const auto history = fleetctl({"-o", "json", "history", host});
  EXPECT_EQ(history.exit_code, 0) << history.err;
  // What the API answers, as it answers it.
  const auto answer = http_get("http://" + host, "/api/v1/history");
  EXPECT_EQ(Json::parse(history.out, nullptr, false), Json::parse(answer.body, nullptr, false))
      << history.out;
  EXPECT_TRUE(Json::parse(history.out, nullptr, false)["transitions"].is_array()) << history.out;

  const auto conflicting = fleetctl({"-o", "json", "check", host, "-o", "junit"});
  EXPECT_EQ(conflicting.exit_code, 2);
  EXPECT_NE(conflicting.err.find("give one"), std::string::npos) << conflicting.err;
  const auto no_junit = fleetctl({"-o", "junit", "history", host});
  EXPECT_EQ(no_junit.exit_code, 2);
  EXPECT_NE(no_junit.err.find("-o junit is not a format it prints; it prints table, json"),
            std::string::npos)
      << no_junit.err;
}

TEST(Fleetctl, HistoryAndDiff) {
  TwoAgents agents;
  const auto history = fleetctl(
      {"history", host_of(agents.drift), "--env", "torch-fl-cpu", "--check", "first-device-op"});
  EXPECT_EQ(history.exit_code, 0) << history.err;
  EXPECT_NE(history.out.find("torch-fl-cpu  first-device-op  (new) -> fail"), std::string::npos)
      << history.out;
  EXPECT_NE(history.out.find("hang: "), std::string::npos);
  const auto json =
      fleetctl({"history", host_of(agents.drift), "--check", "@verdict", "-o", "json"});
  EXPECT_EQ(Json::parse(json.out)["transitions"].size(), 3U);  // the host and its two envs
  const auto bad_since = fleetctl({"history", host_of(agents.drift), "--since", "tuesday"});
  EXPECT_EQ(bad_since.exit_code, 2);
  EXPECT_NE(bad_since.err.find("since must be an RFC 3339 time"), std::string::npos);
  // Out-of-range limits are refused as the API refuses them.
  const auto no_rows = fleetctl({"history", host_of(agents.drift), "--limit", "0"});
  EXPECT_EQ(no_rows.exit_code, 2);
  EXPECT_NE(no_rows.err.find("--limit"), std::string::npos) << no_rows.err;
  EXPECT_EQ(fleetctl({"history", host_of(agents.drift), "--limit", "10001"}).exit_code, 2);
  // An env the host never had is named as such, with the envs it has.
  const auto typo = fleetctl({"history", host_of(agents.drift), "--env", "torch-fl-cpx"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("no env named 'torch-fl-cpx' in this host's report or history (did "
                          "you mean 'torch-fl-cpu'?)"),
            std::string::npos)
      << typo.err;
  const auto answer = http_get("http://" + host_of(agents.drift), "/api/v1/history?env=nope");
  EXPECT_EQ(answer.status, 404);
  const auto envs = Json::parse(answer.body, nullptr, false);
  EXPECT_EQ(envs["envs"], Json({"torch-fl-cpu", "torch-fl-hf-test"})) << envs;
  const auto no_target = fleetctl({"history", host_of(agents.drift), "--target", "cj"});
  EXPECT_EQ(no_target.exit_code, 2);
  EXPECT_NE(no_target.err.find("no target named 'cj'"), std::string::npos) << no_target.err;

  const auto diff = fleetctl({"diff", host_of(agents.drift), host_of(agents.compliant)});
  EXPECT_EQ(diff.exit_code, 1) << diff.err;
  EXPECT_NE(diff.out.find("contract  A: kunlunxin-demo"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("verdict   A: drift"), std::string::npos);
  EXPECT_NE(diff.out.find("env torch-fl-hf-test: only on A (drift)"), std::string::npos);
  EXPECT_NE(diff.out.find("checks of shared envs are in one contract only"), std::string::npos);
  const auto diff_json = Json::parse(
      fleetctl({"diff", host_of(agents.drift), host_of(agents.compliant), "-o", "json"}).out);
  EXPECT_EQ(diff_json["differences"]["verdict"]["b"], "compliant");

  const auto same = fleetctl({"diff", host_of(agents.drift), host_of(agents.drift)});
  EXPECT_EQ(same.exit_code, 0);
  EXPECT_NE(same.out.find("agree"), std::string::npos);
}

// "Why does CI pass on one box and fail on the other": same contract, one
// env differs.
TEST(Fleetctl, DiffNamesTheCheckThatDiffersBetweenTwoHosts) {
  TempDir dir_a;
  TempDir dir_b;
  const auto host_b = dir_b.path() / "host";
  build_demo_host(host_b);
  const auto backends =
      host_b / "miniconda3/envs/torch-fl-activate/lib/python3.10/site-packages/triton/backends";
  std::filesystem::create_directories(backends / "xpu");
  write_text(backends / "xpu/__init__.py", "");
  const auto agent = [](const TempDir& dir, const std::filesystem::path& host) {
    return std::make_unique<AgentProcess>(
        dir.path(),
        std::vector<std::string>{"--contract", quick_demo_contract(dir.path()).string(), "--prefix",
                                 (host / "miniconda3/envs/torch-fl-activate").string(),
                                 "--database", (dir.path() / "agent.db").string()});
  };
  const auto a = agent(dir_a, demo_host());
  const auto b = agent(dir_b, host_b);
  wait_for_report(*a);
  wait_for_report(*b);
  const auto diff = fleetctl({"diff", host_of(*a), host_of(*b)});
  EXPECT_EQ(diff.exit_code, 1) << diff.err;
  EXPECT_EQ(diff.out.find("contract  A:"), std::string::npos) << diff.out;  // same contract
  EXPECT_NE(diff.out.find("torch-fl-activate  flagtree-xpu  A: fail triton_backend_missing: "),
            std::string::npos)
      << diff.out;
  EXPECT_NE(diff.out.find("B: pass"), std::string::npos);
}

TEST(Fleetctl, ScanWaitsForTheResultAndNeedsTheToken) {
  TempDir dir;
  const auto token = dir.write("token", "fleet-secret\n");
  ::chmod(token.c_str(), 0600);
  AgentProcess agent(dir.path(),
                     {"--contract", quick_demo_contract(dir.path()).string(), "--prefix",
                      (demo_host() / "venvs/xpu210v").string(), "--database",
                      (dir.path() / "agent.db").string(), "--token-file", token.string()});
  const auto first = wait_for_report(agent);

  const auto refused = fleetctl({"scan", host_of(agent)});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("HTTP 401"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--token-file"), std::string::npos);

  const auto scanned =
      fleetctl({"scan", host_of(agent), "--token-file", token.string(), "-o", "json"});
  EXPECT_EQ(scanned.exit_code, 1) << scanned.err;
  EXPECT_GT(Json::parse(scanned.out)["scan_id"].get<int>(), first["scan_id"].get<int>());

  const auto table = fleetctl({"scan", host_of(agent), "--token-file", token.string()});
  EXPECT_EQ(table.exit_code, 1) << table.err;
  EXPECT_NE(table.out.find(": drift; compliant envs: none;"), std::string::npos) << table.out;
  // Off a terminal, a line per state of the scan it waits for.
  EXPECT_NE(table.err.find(" on " + host_of(agent) + ": done ("), std::string::npos) << table.err;
  EXPECT_EQ(table.err.find('\r'), std::string::npos) << "no live line off a terminal";
  const auto junit =
      fleetctl({"scan", host_of(agent), "--token-file", token.string(), "-o", "junit"});
  EXPECT_NE(junit.out.find("<testsuite name=\"" + host_of(agent) + "/xpu210v\""),
            std::string::npos);

  ::setenv("FLEETCTL_TOKEN", "fleet-secret", 1);
  const auto queued = fleetctl({"scan", host_of(agent), "--no-wait"});
  EXPECT_EQ(queued.exit_code, 0) << queued.err;
  EXPECT_NE(queued.out.find("queued on " + host_of(agent)), std::string::npos);
  const auto queued_json = fleetctl({"scan", host_of(agent), "--no-wait", "-o", "json"});
  EXPECT_EQ(queued_json.exit_code, 0) << queued_json.err;
  const auto ticket = Json::parse(queued_json.out, nullptr, false);
  EXPECT_EQ(ticket["state"], "queued") << queued_json.out;
  EXPECT_TRUE(ticket["scan_id"].is_number_integer()) << queued_json.out;
  EXPECT_EQ(fleetctl({"scan", host_of(agent), "--no-wait", "-o", "junit"}).exit_code, 2);

  // The token in a variable, or the file a variable names; never both.
  ::setenv("FLEETCTL_TOKEN_FILE", token.c_str(), 1);
  const auto ambiguous = fleetctl({"scan", host_of(agent), "--no-wait"});
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("both FLEETCTL_TOKEN and FLEETCTL_TOKEN_FILE are set"),
            std::string::npos)
      << ambiguous.err;
  ::unsetenv("FLEETCTL_TOKEN");
  const auto from_file_variable = fleetctl({"scan", host_of(agent), "--no-wait"});
  ::unsetenv("FLEETCTL_TOKEN_FILE");
  EXPECT_EQ(from_file_variable.exit_code, 0) << from_file_variable.err;
}

TEST(Fleetctl, MisbehavingServersGiveAClearErrorWithinTheTimeout) {
  using Behaviour = RogueServer::Behaviour;
  const std::vector<std::pair<Behaviour, std::string>> cases = {
      {Behaviour::invalid_json, "not JSON"},
      {Behaviour::not_a_report, "not an envcontract report"},
      {Behaviour::html_not_found, "HTTP 404"},
      {Behaviour::silent, "no complete answer within 1.0 s"},
      {Behaviour::drip, "no complete answer within 1.0 s"},
      {Behaviour::huge, "larger than 64 MiB"},
      {Behaviour::deep, "the answer nests deeper than 64 levels"},
  };
  for (const auto& [behaviour, expected] : cases) {
    RogueServer rogue(behaviour);
    // 64 MiB must arrive before the size limit trips: give that one time.
    const bool huge = behaviour == Behaviour::huge;
    const auto started = std::chrono::steady_clock::now();
    const auto result = fleetctl(
        {"check", "127.0.0.1:" + std::to_string(rogue.port()), "--timeout", huge ? "20s" : "1s"});
    const auto elapsed = std::chrono::steady_clock::now() - started;
    EXPECT_EQ(result.exit_code, 2) << expected;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
    EXPECT_LT(elapsed, std::chrono::seconds(huge ? 20 : 4)) << expected;
    if (behaviour == Behaviour::huge) {
      EXPECT_LT(rogue.bytes_sent(), std::size_t{512} << 20);  // it stopped reading
    }
  }
}

// Any user of an agent's host can bind its port while the agent restarts:
// a report nested 100,000 deep once killed fleetctl (exit 139, a stack
// overflow); now that host is an error in every format and every verb.
TEST(Fleetctl, ADeeplyNestedAnswerIsAnErrorNotACrash) {
  RogueServer rogue(RogueServer::Behaviour::deep);
  const std::string host = "127.0.0.1:" + std::to_string(rogue.port());
  const std::string why = "the answer nests deeper than 64 levels";
  for (const std::string output : {"table", "json", "junit"}) {
    const auto checked = fleetctl({"check", host, "-o", output});
    EXPECT_EQ(checked.exit_code, 2) << output << checked.err;
    EXPECT_NE((checked.out + checked.err).find(why), std::string::npos)
        << output << checked.out << checked.err;
  }
  for (const auto& verb : std::vector<std::vector<std::string>>{
           {"history", host}, {"diff", host, host}, {"scan", host, "--no-wait"}}) {
    const auto result = fleetctl(verb);
    EXPECT_EQ(result.exit_code, 2) << verb[0] << result.err;
    EXPECT_NE(result.err.find(why), std::string::npos) << verb[0] << result.err;
  }
}

TEST(Fleetctl, ContractValidateAndHelp) {
  TempDir dir;
  const auto bad = dir.write("bad.yaml", "schema_version: 1\nchecks:\n  - kind: tirton\n");
  const auto ok = fleetctl(
      {"contract", "validate", ENVCONTRACT_SOURCE_DIR "/contracts/platforms/kunlunxin.yaml"});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_NE(ok.out.find("kunlunxin.yaml: ok"), std::string::npos);
  const auto invalid = fleetctl({"contract", "validate", bad.string()});
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_NE(invalid.err.find(":3:11: error: unknown check kind 'tirton'"), std::string::npos);

  const auto help = fleetctl({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* verb : {"check", "history", "diff", "scan", "contract"}) {
    EXPECT_NE(help.out.find(verb), std::string::npos) << verb;
    const auto verb_help = fleetctl({verb, "--help"});
    EXPECT_EQ(verb_help.exit_code, 0) << verb;
    EXPECT_NE(verb_help.out.find("Exit status"), std::string::npos) << verb;
  }
  EXPECT_EQ(fleetctl({"check"}).exit_code, 2);
  EXPECT_EQ(fleetctl({"check", "no host!"}).exit_code, 2);
  EXPECT_EQ(fleetctl({"frobnicate"}).exit_code, 2);
}

TEST(Fleetctl, ColourOnlyOnATerminalAndNeverWithNoColor) {
  if (!std::filesystem::exists("/usr/bin/script")) {
    GTEST_SKIP() << "script (bsdutils) is missing: no terminal to test colour on";
  }
  TempDir dir;
  AgentProcess agent(dir.path(), {"--contract", quick_demo_contract(dir.path()).string(),
                                  "--prefix", (demo_host() / "venvs/xpu210v").string(),
                                  "--database", (dir.path() / "agent.db").string()});
  wait_for_report(agent);
  const std::string command = k_fleetctl + " check " + host_of(agent);
  const auto tty = run_command({"/usr/bin/script", "-qec", command, "/dev/null"});
  EXPECT_NE(tty.out.find("\x1b[31mdrift\x1b[0m"), std::string::npos) << tty.out;
  const auto no_colour =
      run_command({"/usr/bin/env", "NO_COLOR=1", "/usr/bin/script", "-qec", command, "/dev/null"});
  EXPECT_EQ(no_colour.out.find('\x1b'), std::string::npos) << no_colour.out;
  EXPECT_NE(no_colour.out.find("drift"), std::string::npos);
}

}  // namespace
}  // namespace envcontract
