// `envcontractd validate`, run as the real binary: output and exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/demo_host.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract {
namespace {

using testing::run_command;

const std::string k_binary = ENVCONTRACTD_PATH;
const std::string k_platforms = ENVCONTRACT_SOURCE_DIR "/contracts/platforms";

// A mistyped verb is named, with the likely one, in both tools; a verb that
// is close to nothing lists them all.
TEST(CommandLine, AnUnknownVerbIsNamedWithADidYouMean) {
  const auto daemon = run_command({k_binary, "sacn", "--root", "/"});
  EXPECT_EQ(daemon.exit_code, 2);
  EXPECT_NE(daemon.err.find("envcontractd: unknown command 'sacn' (did you mean 'scan'?)"),
            std::string::npos)
      << daemon.err;
  const auto fleet = run_command({FLEETCTL_PATH, "chek", "localhost"});
  EXPECT_EQ(fleet.exit_code, 2);
  EXPECT_NE(fleet.err.find("fleetctl: unknown command 'chek' (did you mean 'check'?)"),
            std::string::npos)
      << fleet.err;
  const auto far = run_command({k_binary, "frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.err.find("the commands are: validate, facts, probe, scan, serve"),
            std::string::npos)
      << far.err;
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  // Options before the verb and known verbs are left to the parser.
  EXPECT_EQ(run_command({k_binary, "--version"}).exit_code, 0);
}

// The probe verb names an env it cannot find and the ones it found, and a
// root without envs, instead of probing nothing.
TEST(CommandLine, ProbeNamesAnUnknownEnvAndTheEnvsFound) {
  const auto typo = run_command(
      {k_binary, "probe", "--root", testing::demo_host().string(), "--env", "torch-fl-cpux"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("no env named 'torch-fl-cpux' (did you mean 'torch-fl-cpu'?)"),
            std::string::npos)
      << typo.err;
  EXPECT_NE(typo.err.find("the envs found are: "), std::string::npos) << typo.err;
  EXPECT_EQ(typo.out, "");
  testing::TempDir empty;
  const auto nothing = run_command({k_binary, "probe", "--root", empty.path().string()});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("no Python environment was found"), std::string::npos) << nothing.err;
}

// Help says what each verb does: -v only where it changes the output, and
// the contract verbs' own exit codes rather than the host checks'.
TEST(CommandLine, EachVerbsHelpIsItsOwn) {
  for (const char* verb : {"history", "diff"}) {
    const auto help = run_command({FLEETCTL_PATH, verb, "--help"});
    EXPECT_EQ(help.out.find("--verbose"), std::string::npos) << verb << ":\n" << help.out;
  }
  EXPECT_NE(run_command({FLEETCTL_PATH, "check", "--help"}).out.find("--verbose"),
            std::string::npos);
  const auto contract = run_command({FLEETCTL_PATH, "contract", "--help"});
  EXPECT_NE(contract.out.find("0 all valid, 1 any invalid"), std::string::npos) << contract.out;
  EXPECT_EQ(contract.out.find("every host complies"), std::string::npos) << contract.out;
}

TEST(ValidateCli, PrintsOkPerValidFileAndExitsZero) {
  const auto result = run_command(
      {k_binary, "validate", k_platforms + "/kunlunxin.yaml", k_platforms + "/cuda.yaml"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, k_platforms + "/kunlunxin.yaml: ok\n" + k_platforms + "/cuda.yaml: ok\n");
  EXPECT_EQ(result.err, "");
}

TEST(ValidateCli, ReportsEveryErrorWithPositionAndExitsOne) {
  testing::TempDir dir;
  const auto bad = dir.write("bad.yaml",
                             "schema_version: 1\nchecks:\n  - kind: tirton\n"
                             "  - kind: tools\n    on_pth: [x]\n");
  const auto result =
      run_command({k_binary, "validate", bad.string(), k_platforms + "/kunlunxin.yaml"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, k_platforms + "/kunlunxin.yaml: ok\n");
  EXPECT_EQ(result.err, bad.string() +
                            ":3:11: error: unknown check kind 'tirton' (did you mean 'triton'?); "
                            "see docs/contracts.md for the kinds\n" +
                            bad.string() +
                            ":4:5: error: 'tools' check is missing the required key "
                            "'on_path'\n" +
                            bad.string() +
                            ":5:5: error: unknown key 'on_pth' in 'tools' check (did you "
                            "mean 'on_path'?)\n" +
                            bad.string() + ": invalid (3 errors)\n");
}

TEST(ValidateCli, PrintShowsTheNormalisedContractAsJson) {
  const auto result = run_command(
      {k_binary, "validate", "--print", k_platforms + "/kunlunxin-environment-check.yaml"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["display_name"], "Kunlunxin");
  ASSERT_EQ(json["checks"].size(), 3U);
  for (const auto& check : json["checks"]) {
    EXPECT_TRUE(check.contains("kind"));
    EXPECT_TRUE(check.contains("params"));
    EXPECT_TRUE(check.contains("stage"));
  }
  EXPECT_EQ(json["checks"][0]["params"]["cuda"]["mode"], "none");
}

TEST(ValidateCli, InvalidUtf8InAContractIsPrintedNotACrash) {
  // Found by fuzzing: JSON output used to throw on bytes that are not UTF-8.
  testing::TempDir dir;
  const auto contract =
      dir.write("latin1.yaml",
                "schema_version: 1\ndescription: \"caf\xe9\"\nchecks:\n  - kind: tools\n"
                "    on_path: [xpu-smi]\n");
  const auto result = run_command({k_binary, "validate", "--print", contract.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(nlohmann::json::parse(result.out)["description"], "caf\xef\xbf\xbd");
}

TEST(ValidateCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_command({k_binary}).exit_code, 2);
  EXPECT_EQ(run_command({k_binary, "validate"}).exit_code, 2);
  EXPECT_EQ(run_command({k_binary, "validate", "/nonexistent/contract.yaml"}).exit_code, 2);
  EXPECT_EQ(run_command({k_binary, "frobnicate"}).exit_code, 2);
  const auto two = run_command({k_binary, "validate", "--print", k_platforms + "/kunlunxin.yaml",
                                k_platforms + "/cuda.yaml"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("--print takes exactly one FILE"), std::string::npos);
}

TEST(ValidateCli, HelpDescribesExitCodes) {
  const auto result = run_command({k_binary, "validate", "--help"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("Exit status: 0 all valid, 1 any invalid, 2 usage error."),
            std::string::npos);
}

}  // namespace
}  // namespace envcontract

namespace envcontract {
namespace {

// A directory of CI configs is validated file by file, in name order.
TEST(ValidateCli, ADirectoryValidatesEveryConfigInIt) {
  const std::string lines = ENVCONTRACT_SOURCE_DIR "/tests/data/contracts/ci-lines";
  const auto result = testing::run_command({ENVCONTRACTD_PATH, "validate", lines});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, lines + "/early-main-ascend.yml: ok\n" + lines +
                            "/kunlunxin-vendor.yml: ok\n" + lines + "/newest-main-cuda.yml: ok\n" +
                            lines + "/torch-contract-branch-musa.yml: ok\n");
  const auto fleetctl = testing::run_command({FLEETCTL_PATH, "contract", "validate", lines});
  EXPECT_EQ(fleetctl.exit_code, 0) << fleetctl.err;
  EXPECT_EQ(fleetctl.out, result.out);

  testing::TempDir dir;
  dir.write("notes.txt", "not a contract\n");
  const auto empty = testing::run_command({ENVCONTRACTD_PATH, "validate", dir.path().string()});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("holds no .yaml or .yml file"), std::string::npos) << empty.err;
  dir.write("bad.yml",
            "setup_script: s.sh\nintegration_tests:\n  - name: t\n    phase: funtcional\n"
            "    command: 'true'\n");
  const auto bad = testing::run_command({ENVCONTRACTD_PATH, "validate", dir.path().string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(
      bad.err.find("bad.yml:4:12: error: unknown phase 'funtcional' (did you mean 'functional'?)"),
      std::string::npos)
      << bad.err;
  const auto print = testing::run_command({ENVCONTRACTD_PATH, "validate", "--print", lines});
  EXPECT_EQ(print.exit_code, 2);
}

}  // namespace
}  // namespace envcontract
