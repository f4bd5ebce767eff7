// One flag means one thing across envcontractd's verbs and fleetctl's, run
// as the real binaries: mistyped flags get the nearest flag of their verb,
// -o is a format before or after every verb that has one, and each verb
// that scans takes the same scan flags with the same meaning.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>
#include <sstream>

#include "tests/e2e/agent_fixture.hpp"
#include "tests/support/agent_process.hpp"
#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using Json = nlohmann::ordered_json;
using testing::demo_host;
using testing::run_command;

const std::string k_daemon = ENVCONTRACTD_PATH;
const std::string k_fleetctl = FLEETCTL_PATH;

std::string xpu210v() {
  return (demo_host() / "venvs/xpu210v").string();
}

// `--contract /nope.yaml` once said "(File does not exist: ...) OR (... not
// in {auto})": now one sentence that says what is wanted.
TEST(Flags, AContractThatIsNotThereIsSaidInOneSentence) {
  testing::TempDir dir;
  const auto missing = (dir.path() / "nope.yaml").string();
  const auto scan = run_command({k_daemon, "scan", "--contract", missing, "--prefix", xpu210v()});
  EXPECT_EQ(scan.exit_code, 2);
  EXPECT_NE(
      scan.err.find("--contract: " + missing + " does not exist; give a contract file, or 'auto'"),
      std::string::npos)
      << scan.err;
  EXPECT_EQ(scan.err.find(" OR "), std::string::npos) << scan.err;
  // Where auto is not taken (a base contract), it is not offered.
  const auto probe = run_command({k_daemon, "probe", "--contract", missing, "--prefix", xpu210v()});
  EXPECT_EQ(probe.exit_code, 2);
  EXPECT_NE(probe.err.find(missing + " does not exist; give a contract file\n"), std::string::npos)
      << probe.err;
  const auto directory =
      run_command({k_daemon, "serve", "--contract", dir.path().string(), "--listen", "x"});
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_NE(directory.err.find(dir.path().string() + " is a directory"), std::string::npos)
      << directory.err;
}

// A mistyped flag is named with the nearest flag of its verb, in both
// tools, rather than "--contract is required" or "arguments not expected".
TEST(Flags, AnUnknownFlagGetsTheNearestFlagOfItsVerb) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{k_daemon, "scan", "--contrat", "c.yaml"},
       "envcontractd scan: unknown flag '--contrat' (did you mean '--contract'?)"},
      {{k_daemon, "scan", "--contrat=c.yaml"},
       "envcontractd scan: unknown flag '--contrat' (did you mean '--contract'?)"},
      {{k_daemon, "plan", "--contract", "c.yaml", "--prefx", "/p"},
       "envcontractd plan: unknown flag '--prefx' (did you mean '--prefix'?)"},
      {{k_daemon, "serve", "--alowed-host", "a.example"},
       "envcontractd serve: unknown flag '--alowed-host' (did you mean '--allowed-host'?)"},
      {{k_daemon, "snapshot", "--output-fiel", "x.yaml"},
       "envcontractd snapshot: unknown flag '--output-fiel' (did you mean '--output-file'?)"},
      {{k_daemon, "-o", "json", "scan", "-contract", "c.yaml"},
       "envcontractd scan: unknown flag '-contract' (did you mean '--contract'?)"},
      {{k_daemon, "--verison"},
       "envcontractd: unknown flag '--verison' (did you mean '--version'?)"},
      {{k_daemon, "-o", "json", "sacn"},
       "envcontractd: unknown command 'sacn' (did you mean 'scan'?)"},
      {{k_fleetctl, "check", "--inventroy", "hosts"},
       "fleetctl check: unknown flag '--inventroy' (did you mean '--inventory'?)"},
      {{k_fleetctl, "contract", "validate", "--prnit", "c.yaml"},
       "fleetctl contract validate: unknown flag '--prnit' (did you mean '--print'?)"},
      {{k_fleetctl, "contract", "valdate", "c.yaml"},
       "fleetctl contract: unknown command 'valdate' (did you mean 'validate'?)"},
      {{k_daemon, "scan", "--contract", "c.yaml", "--allowed-host", "a.example"},
       "envcontractd scan: --allowed-host is a flag of serve, fleet, not of scan\n"},
      {{k_fleetctl, "--timeout", "5s", "check", "localhost"},
       "fleetctl: --timeout is a flag of check, history, diff, scan, gate (give it after the "
       "verb)\n"},
      {{k_daemon, "validate", "-o", "json", "c.yaml"},
       "envcontractd validate: -o (the output format) is for scan, plan, snapshot; validate "
       "prints one format\n"},
      {{k_daemon, "validate", "c.yaml", "--version"},
       "envcontractd validate: --version goes before the verb (envcontractd --version ...)\n"},
      {{k_daemon, "scan", "--frobnicate"},
       "envcontractd scan: unknown flag '--frobnicate'; `envcontractd scan --help` lists its "
       "flags"},
  };
  for (const auto& [argv, said] : cases) {
    const auto result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << argv[1] << " " << argv[2];
    EXPECT_TRUE(result.err.starts_with(said)) << said << "\nnot at the start of:\n" << result.err;
    EXPECT_EQ(result.err.find("required"), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  }
  // A flag of the verb is never taken for a typo, nor a value that starts with a dash.
  const auto value = run_command({k_daemon, "probe", "--env", "-x", "--root", "/nonexistent"});
  EXPECT_EQ(value.err.find("unknown flag"), std::string::npos) << value.err;
  EXPECT_NE(value.err.find("--root /nonexistent: no such directory"), std::string::npos)
      << value.err;
}

// -o FORMAT before the verb is the verb's own -o: `-o json plan` as `plan
// -o json`; a verb with one format says so, and which verbs take -o.
TEST(Flags, OutputFormatBeforeOrAfterEveryVerbThatHasOne) {
  testing::TempDir dir;
  const auto contract = testing::quick_demo_contract(dir.path()).string();
  const auto before =
      run_command({k_daemon, "-o", "json", "plan", "--contract", contract, "--prefix", xpu210v()});
  EXPECT_EQ(before.exit_code, 1) << before.err;
  const auto plan = Json::parse(before.out, nullptr, false);
  ASSERT_FALSE(plan.is_discarded()) << before.out << before.err;
  ASSERT_TRUE(plan.contains("envs")) << plan;
  ASSERT_EQ(plan["envs"].size(), 1U) << plan;
  EXPECT_EQ(plan["envs"][0]["env"], "xpu210v") << plan["envs"][0];
  const auto junit =
      run_command({k_daemon, "-o", "junit", "plan", "--contract", contract, "--prefix", xpu210v()});
  EXPECT_EQ(junit.exit_code, 2);
  EXPECT_NE(junit.err.find("-o junit is not a format it prints; it prints table, json"),
            std::string::npos)
      << junit.err;
  const auto snapshot = run_command({k_daemon, "-o", "json", "snapshot", "--prefix", xpu210v()});
  EXPECT_EQ(snapshot.exit_code, 2);
  EXPECT_NE(snapshot.err.find("-o json is not a format it writes; it writes yaml (the file: "
                              "--output-file)"),
            std::string::npos)
      << snapshot.err;
  const auto fleet = run_command({k_fleetctl, "-o", "json", "contract", "validate", contract});
  EXPECT_EQ(fleet.exit_code, 2);
  EXPECT_EQ(fleet.err,
            "fleetctl contract validate: -o (the output format) is for check, history, diff, "
            "scan, gate; validate prints one format\n");
}

// The help line of each shared flag: the same text on every verb that takes
// it, and every verb for which it means something takes it.
TEST(Flags, EveryVerbThatScansTakesTheSameScanFlags) {
  const std::map<std::string, std::vector<std::string>> takers = {
      {"--root", {"facts", "probe", "scan", "serve", "plan", "snapshot"}},
      {"--prefix", {"facts", "probe", "scan", "serve", "plan", "snapshot"}},
      {"--run-root-envs-as",
       {"facts", "probe", "scan", "serve", "plan", "provision", "promote", "snapshot"}},
      {"--image-tag-file", {"facts", "scan", "serve", "plan", "provision", "promote", "snapshot"}},
      {"--image-tag-env", {"facts", "scan", "serve", "plan", "provision", "promote", "snapshot"}},
      {"--image-tag-command",
       {"facts", "scan", "serve", "plan", "provision", "promote", "snapshot"}},
      {"--containers", {"facts", "scan", "serve", "plan"}},
      {"--progress", {"scan", "plan", "provision", "promote"}},
      {"--detect-root", {"scan", "serve", "plan", "provision", "promote"}},
      {"--contracts-dir", {"scan", "serve", "plan", "provision", "promote"}},
      {"--contract", {"scan", "serve", "plan", "provision", "promote"}},
      {"--allowed-host", {"serve", "fleet"}},
  };
  std::map<std::string, std::string> helps;
  const auto help_line = [&](const std::string& verb, const std::string& flag) {
    if (!helps.contains(verb)) {
      helps[verb] = run_command({k_daemon, verb, "--help"}).out;
    }
    // The flag's line and the description CLI11 puts under a long one, its
    // words alone: where the verb requires it, CLI11 adds REQUIRED.
    std::istringstream lines(helps[verb]);
    std::string found;
    for (std::string line; std::getline(lines, line);) {
      if (!found.empty() && !line.starts_with("   ")) {
        break;
      }
      if (!found.empty() || line.starts_with("  " + flag + " ")) {
        found += " " + line;
      }
    }
    std::istringstream words(found);
    std::string meaning;
    for (std::string word; words >> word;) {
      meaning += word == "REQUIRED" ? "" : word + " ";
    }
    return meaning;
  };
  // docs/agent.md's table of shared flags says the same.
  const std::string doc = testing::read_text(ENVCONTRACT_SOURCE_DIR "/docs/agent.md");
  const auto doc_row = [&](const std::string& flag) {
    for (auto at = doc.find("\n| `" + flag.substr(0, 2)); at != std::string::npos;
         at = doc.find("\n| `", at + 1)) {
      const std::string row = doc.substr(at + 1, doc.find('\n', at + 1) - at - 1);
      const std::string flags = row.substr(0, row.find(" | "));
      if (flags.find("`" + flag + "`") != std::string::npos ||
          flags.find("`" + flag + " ") != std::string::npos) {
        return row.substr(flags.size());
      }
    }
    return std::string();
  };
  for (const auto& [flag, verbs] : takers) {
    const std::string row = doc_row(flag);
    EXPECT_NE(row, "") << "docs/agent.md's table has no row for " << flag;
    for (const auto& verb : verbs) {
      EXPECT_NE(row.find("`" + verb + "`"), std::string::npos)
          << "docs/agent.md's row of " << flag << " does not name " << verb << ": " << row;
    }
    const std::string first = help_line(verbs.front(), flag);
    EXPECT_NE(first, "") << verbs.front() << " has no " << flag;
    for (const auto& verb : verbs) {
      EXPECT_EQ(help_line(verb, flag), first) << verb << " " << flag;
    }
  }
}

// serve refuses a root that is not there, as scan does, whether a flag or
// the config names it (and so does every verb that looks for envs); and a
// database whose directory is not there, from a provisioning verb too,
// before it acts.
TEST(Flags, ServeRefusesRootsAndDatabaseDirectoriesThatAreNotThere) {
  testing::TempDir dir;
  const auto missing = dir.path() / "no-such-dir";
  const auto contract = testing::quick_demo_contract(dir.path()).string();
  const auto root = run_command({"/usr/bin/timeout", "20", k_daemon, "serve", "--contract",
                                 contract, "--root", missing.string(), "--listen", "127.0.0.1:0",
                                 "--database", (dir.path() / "a.db").string()});
  EXPECT_EQ(root.exit_code, 2) << root.err;
  EXPECT_EQ(root.err, "envcontractd serve: --root " + missing.string() +
                          ": no such directory (or it cannot be read)\n");
  // And every other verb that looks for envs, the same way.
  for (const std::string verb : {"facts", "probe", "scan", "plan", "snapshot"}) {
    std::vector<std::string> argv = {k_daemon, verb, "--prefix", missing.string()};
    if (verb == "scan" || verb == "plan") {
      argv.insert(argv.end(), {"--contract", contract});
    }
    const auto result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << verb << ": " << result.err;
    EXPECT_EQ(result.err, "envcontractd " + verb + ": --prefix " + missing.string() +
                              ": no such directory (or it cannot be read)\n");
  }
  const auto config = dir.write("agent.yaml", "roots: [" + missing.string() + "]\n");
  const auto configured =
      run_command({"/usr/bin/timeout", "20", k_daemon, "serve", "--config", config.string(),
                   "--contract", contract, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(configured.exit_code, 2) << configured.err;
  EXPECT_NE(
      configured.err.find("no such directory (or it cannot be read) (roots: or prefixes: of " +
                          config.string() + ")"),
      std::string::npos)
      << configured.err;
  const auto rollback =
      run_command({k_daemon, "rollback", "current", "--envs-dir", dir.path().string(), "--database",
                   (missing / "x.db").string()});
  EXPECT_EQ(rollback.exit_code, 2);
  EXPECT_EQ(rollback.err, "envcontractd rollback: the database's directory " + missing.string() +
                              " does not exist; create it, or name a database in a directory "
                              "that exists (--database, database:)\n");
  EXPECT_FALSE(std::filesystem::exists(missing));
}

// The agent takes --allowed-host as the fleet view does (it was config-only).
TEST(Flags, TheAgentTakesAllowedHostLikeTheFleetView) {
  testing::TempDir dir;
  testing::AgentProcess agent(
      dir.path(), {"--contract", testing::quick_demo_contract(dir.path()).string(), "--prefix",
                   xpu210v(), "--database", (dir.path() / "a.db").string(), "--interval", "1h",
                   "--allowed-host", "agent.fleet.example"});
  const auto status_for = [&](const std::string& host) {
    const auto result = run_command({"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                     "-H", "Host: " + host, agent.url() + "/healthz"});
    return result.out;
  };
  EXPECT_EQ(status_for("agent.fleet.example"), "200");
  EXPECT_EQ(status_for("agent.fleet.example:" + std::to_string(agent.port())), "200");
  EXPECT_EQ(status_for("attacker.example"), "421");
  const auto refused = run_command(
      {"/usr/bin/curl", "-s", "-H", "Host: attacker.example", agent.url() + "/healthz"});
  EXPECT_NE(refused.out.find("or --allowed-host"), std::string::npos) << refused.out;
}

// serve, plan and snapshot read the image from a variable, as scan does;
// serve and plan take container targets and auto's detect root.
TEST(Flags, TheScanFlagsMeanTheSameOnServeAndPlan) {
  testing::TempDir dir;
  const auto contract = testing::quick_demo_contract(dir.path()).string();
  ::setenv("ENVCONTRACT_TEST_IMAGE", "registry.example/flagos:9.9.9", 1);
  const auto plan = run_command({k_daemon, "plan", "--contract", contract, "--prefix", xpu210v(),
                                 "--image-tag-env", "ENVCONTRACT_TEST_IMAGE", "-o", "json"});
  EXPECT_EQ(plan.exit_code, 1) << plan.err;
  EXPECT_EQ(plan.out.find("image reference is read"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("run the image"), std::string::npos) << plan.out;
  const auto unknown =
      run_command({k_daemon, "plan", "--contract", contract, "--prefix", xpu210v(), "-o", "json"});
  EXPECT_NE(unknown.out.find("image reference is read"), std::string::npos) << unknown.out;

  testing::AgentProcess agent(
      dir.path(),
      {"--contract", contract, "--prefix", xpu210v(), "--database", (dir.path() / "a.db").string(),
       "--interval", "1h", "--image-tag-env", "ENVCONTRACT_TEST_IMAGE"});
  const auto report = testing::wait_for_report(agent);
  EXPECT_EQ(report["image"]["value"], "registry.example/flagos:9.9.9") << report["image"];

  // An invalid containers file stops serve and plan as it stops scan.
  const auto containers = dir.write("containers.yaml", "containers:\n  - nmae: x\n");
  for (const std::string verb : {"serve", "plan", "scan"}) {
    std::vector<std::string> argv = {
        "/usr/bin/timeout", "20",       k_daemon,  verb,           "--contract",
        contract,           "--prefix", xpu210v(), "--containers", containers.string()};
    if (verb == "serve") {
      argv.insert(argv.end(),
                  {"--listen", "127.0.0.1:0", "--database", (dir.path() / "c.db").string()});
    }
    const auto result = run_command(argv);
    EXPECT_EQ(result.exit_code, 2) << verb << ": " << result.err;
    EXPECT_NE(result.err.find(containers.string() + ":2:"), std::string::npos)
        << verb << ": " << result.err;
  }
  // plan takes auto as scan and serve do, looking where --contracts-dir and
  // --detect-root say.
  testing::TempDir xpu_root;
  xpu_root.write("dev/xpu0", "");
  xpu_root.write("dev/xpuctrl", "");
  const auto automatic =
      run_command({k_daemon, "plan", "--contract", "auto", "--contracts-dir",
                   ENVCONTRACT_SOURCE_DIR "/contracts/platforms", "--detect-root",
                   xpu_root.path().string(), "--prefix", xpu210v(), "-o", "json"});
  EXPECT_EQ(automatic.exit_code, 1) << automatic.err;
  EXPECT_NE(automatic.err.find("contract: auto chose " ENVCONTRACT_SOURCE_DIR
                               "/contracts/platforms/kunlunxin.yaml"),
            std::string::npos)
      << automatic.err;
  EXPECT_EQ(Json::parse(automatic.out, nullptr, false)["contract"], "kunlunxin") << automatic.out;
  // serve's --detect-root is where auto looks, as scan's.
  testing::TempDir bare;
  std::string log;
  EXPECT_EQ(
      testing::AgentProcess::run_to_exit(
          dir.path(),
          {"--contract", "auto", "--contracts-dir", ENVCONTRACT_SOURCE_DIR "/contracts/platforms",
           "--detect-root", bare.path().string(), "--database", (dir.path() / "b.db").string()},
          log),
      2);
  EXPECT_NE(log.find("found no accelerator"), std::string::npos) << log;
}

// plan scans before it plans: with --progress it says env by env what it
// waits for, as scan does; by default off a terminal it keeps stderr quiet.
TEST(Flags, PlanSaysWhatItScansWithProgress) {
  testing::TempDir dir;
  const auto contract = testing::quick_demo_contract(dir.path()).string();
  const auto asked = run_command(
      {k_daemon, "plan", "--contract", contract, "--prefix", xpu210v(), "--progress", "always"});
  EXPECT_EQ(asked.exit_code, 1) << asked.err;
  EXPECT_NE(asked.err.find("scanning 1 env\n"), std::string::npos) << asked.err;
  EXPECT_NE(asked.err.find("[1/1] xpu210v: drift ("), std::string::npos) << asked.err;
  const auto quiet = run_command({k_daemon, "plan", "--contract", contract, "--prefix", xpu210v()});
  EXPECT_EQ(quiet.exit_code, 1) << quiet.err;
  EXPECT_EQ(quiet.err.find("[1/1]"), std::string::npos) << quiet.err;
}

}  // namespace
}  // namespace envcontract
