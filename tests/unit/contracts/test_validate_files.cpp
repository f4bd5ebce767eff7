// contracts/validate_files.cpp: `envcontractd validate` (and `fleetctl
// contract validate`) of many files and directories: every error of every
// file, "FILE: ok" for the rest, and an exit status that says which.
#include "contracts/validate_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "contracts/contract_loader.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::contracts {
namespace {

constexpr int k_valid = 0;
constexpr int k_invalid = 1;
constexpr int k_usage = 2;

const std::string k_good = "schema_version: 1\nchecks:\n  - kind: tools\n    on_path: [bash]\n";

// docs/contracts.md's bad.yaml: three errors, at 3:11, 6:5 and 9:5.
const std::string k_bad = R"(schema_version: 1
checks:
  - kind: tirton
  - kind: tools
    on_path: [bash]
    on_pth: [git]
  - kind: torch
    base: "2.10.0"
    base: "2.9.0"
)";

struct Run {
  int status = -1;
  std::string out;
  std::string err;
};

Run validate(const std::vector<std::filesystem::path>& paths,
             ValidateOutput output = ValidateOutput::verdicts) {
  std::ostringstream out;
  std::ostringstream err;
  const int status = validate_files(paths, output, out, err);
  return {status, out.str(), err.str()};
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    found.push_back(line);
  }
  return found;
}

// The line:column of every "FILE:LINE:COLUMN: LEVEL: ..." line about `file`.
std::vector<std::pair<int, int>> positions(const std::string& err,
                                           const std::filesystem::path& file,
                                           const std::string& level = "error") {
  std::vector<std::pair<int, int>> found;
  const std::string prefix = file.string() + ":";
  for (const auto& line : lines(err)) {
    int at_line = 0;
    int at_column = 0;
    char level_text[16] = {};
    if (line.starts_with(prefix) &&
        std::sscanf(line.c_str() + prefix.size(), "%d:%d: %15[a-z]:", &at_line, &at_column,
                    level_text) == 3 &&
        level == level_text) {
      found.emplace_back(at_line, at_column);
    }
  }
  return found;
}

TEST(ValidateFiles, EveryValidFileIsOkAndTheStatusIsZero) {
  testing::TempDir dir;
  const auto first = dir.write("first.yaml", k_good);
  const auto second = dir.write("second.yml", k_good);
  const auto run = validate({first, second});
  EXPECT_EQ(run.status, k_valid);
  EXPECT_EQ(lines(run.out),
            (std::vector<std::string>{first.string() + ": ok", second.string() + ": ok"}));
  EXPECT_EQ(run.err, "");
}

// All errors of all files in one run, each file's after its name, in the
// order the files were named; a valid file among them is still ok.
TEST(ValidateFiles, EveryErrorOfEveryFileIsPrintedAndTheStatusIsOne) {
  testing::TempDir dir;
  const auto bad = dir.write("bad.yaml", k_bad);
  const auto good = dir.write("good.yaml", k_good);
  const auto worse = dir.write("worse.yaml", "schema_version: 1\nchecks: [\n");
  const auto run = validate({bad, good, worse});
  EXPECT_EQ(run.status, k_invalid);
  EXPECT_EQ(lines(run.out), std::vector<std::string>{good.string() + ": ok"});
  EXPECT_EQ(positions(run.err, bad), (std::vector<std::pair<int, int>>{{3, 11}, {6, 5}, {9, 5}}));
  EXPECT_EQ(positions(run.err, worse).size(), 1U);
  const auto printed = lines(run.err);
  ASSERT_EQ(printed.size(), 6U) << run.err;
  // What the loader found, as it found it, then the file's verdict.
  const auto loaded = load_contract_file(bad);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(printed[i], loaded.diagnostics.sorted()[i].to_string());
  }
  EXPECT_EQ(printed[3], bad.string() + ": invalid (3 errors)");
  EXPECT_EQ(printed[5], worse.string() + ": invalid (1 error)");
}

// A warning is for the author to read; the file is valid all the same.
TEST(ValidateFiles, AValidFileWithWarningsIsStillOk) {
  testing::TempDir dir;
  const auto config = dir.write("platform.yml",
                                "setup_script: s.sh\n"
                                "torch_contract: {base_version: \"2.10.0\"}\n"
                                "cache_volume: /data/cache\n");
  const auto run = validate({config});
  EXPECT_EQ(run.status, k_valid);
  EXPECT_EQ(lines(run.out), std::vector<std::string>{config.string() + ": ok"});
  EXPECT_EQ(positions(run.err, config, "warning"), (std::vector<std::pair<int, int>>{{3, 1}}));
  EXPECT_TRUE(positions(run.err, config, "error").empty()) << run.err;
}

TEST(ValidateFiles, AMissingFileIsInvalidAndTheFilesAfterItAreStillValidated) {
  testing::TempDir dir;
  const auto missing = dir.path() / "missing.yaml";
  const auto good = dir.write("good.yaml", k_good);
  const auto run = validate({missing, good});
  EXPECT_EQ(run.status, k_invalid);
  EXPECT_EQ(lines(run.out), std::vector<std::string>{good.string() + ": ok"});
  const auto printed = lines(run.err);
  ASSERT_EQ(printed.size(), 2U) << run.err;
  // No position to give: the file name alone, then the verdict.
  EXPECT_TRUE(printed[0].starts_with(missing.string() + ": error: ")) << printed[0];
  EXPECT_EQ(printed[1], missing.string() + ": invalid (1 error)");
}

TEST(ValidateFiles, EmptyAndCommentOnlyFilesAreInvalid) {
  testing::TempDir dir;
  const auto empty = dir.write("empty.yaml", "");
  const auto comments = dir.write("comments.yaml", "# to do: write the checks\n");
  const auto run = validate({empty, comments});
  EXPECT_EQ(run.status, k_invalid);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find(empty.string() + ": invalid (1 error)"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(comments.string() + ": invalid (1 error)"), std::string::npos) << run.err;
}

// A checkout's .github/configs: its .yaml and .yml files in name order;
// other files, subdirectories and a directory named like a contract are
// not contracts.
TEST(ValidateFiles, ADirectoryStandsForItsYamlFilesInNameOrder) {
  testing::TempDir dir;
  const auto configs = dir.path() / "configs";
  const auto b = dir.write("configs/b.yml", k_good);
  const auto a = dir.write("configs/a.yaml", k_good);
  const auto c = dir.write("configs/c.yaml", k_bad);
  dir.write("configs/notes.txt", "not: [yaml\n");
  dir.write("configs/README", "checks: [\n");
  dir.write("configs/sub/d.yaml", "checks: [\n");
  std::filesystem::create_directory(configs / "e.yaml");
  const auto run = validate({configs});
  EXPECT_EQ(run.status, k_invalid);
  EXPECT_EQ(lines(run.out), (std::vector<std::string>{a.string() + ": ok", b.string() + ": ok"}));
  EXPECT_EQ(positions(run.err, c).size(), 3U) << run.err;
  EXPECT_EQ(lines(run.err).back(), c.string() + ": invalid (3 errors)");
  for (const char* skipped : {"notes.txt", "README", "d.yaml", "e.yaml"}) {
    EXPECT_EQ(run.err.find(skipped), std::string::npos) << skipped << " in\n" << run.err;
  }
}

TEST(ValidateFiles, ADirectoryWithoutYamlFilesIsAnErrorAndTheRestIsStillValidated) {
  testing::TempDir dir;
  const auto empty = dir.path() / "empty";
  std::filesystem::create_directory(empty);
  dir.write("empty/contract.json", "{}");
  const auto good = dir.write("good.yaml", k_good);
  const auto run = validate({empty, good});
  EXPECT_EQ(run.status, k_invalid);
  EXPECT_EQ(lines(run.out), std::vector<std::string>{good.string() + ": ok"});
  ASSERT_EQ(lines(run.err).size(), 1U) << run.err;
  EXPECT_TRUE(lines(run.err)[0].starts_with(empty.string() + ": ")) << run.err;
}

// A checkout is someone else's: a FIFO named like a contract would block the
// read forever, and a link to /dev/zero would fill memory. Only regular
// files are read.
TEST(ValidateFiles, SpecialFilesNamedLikeContractsInADirectoryAreNotRead) {
  testing::TempDir dir;
  const auto configs = dir.path() / "configs";
  const auto good = dir.write("configs/good.yaml", k_good);
  ASSERT_EQ(::mkfifo((configs / "fifo.yaml").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", configs / "zero.yaml");
  std::filesystem::create_symlink(configs / "gone", configs / "dangling.yml");
  const auto run = validate({configs});
  EXPECT_EQ(run.status, k_valid) << run.err;
  EXPECT_EQ(lines(run.out), std::vector<std::string>{good.string() + ": ok"});
  EXPECT_EQ(run.err, "");
}

TEST(ValidateFiles, PrintOfADirectoryIsAUsageError) {
  testing::TempDir dir;
  dir.write("configs/good.yaml", k_good);
  const auto run = validate({dir.path() / "configs"}, ValidateOutput::normalized_json);
  EXPECT_EQ(run.status, k_usage);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(lines(run.err).size(), 1U) << run.err;
}

TEST(ValidateFiles, PrintShowsTheNormalisedContractAsJsonInsteadOfOk) {
  testing::TempDir dir;
  const auto good = dir.write("good.yaml", k_good);
  const auto run = validate({good}, ValidateOutput::normalized_json);
  EXPECT_EQ(run.status, k_valid);
  EXPECT_EQ(run.err, "");
  const auto json = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << run.out;
  EXPECT_EQ(json["path"], good.string());
  ASSERT_EQ(json["checks"].size(), 1U);
  EXPECT_EQ(json["checks"][0]["kind"], "tools");

  const auto bad = dir.write("bad.yaml", k_bad);
  const auto invalid = validate({bad}, ValidateOutput::normalized_json);
  EXPECT_EQ(invalid.status, k_invalid);
  EXPECT_EQ(invalid.out, "");
  EXPECT_EQ(positions(invalid.err, bad).size(), 3U) << invalid.err;
}

// A big file is read whole: an error deep inside it is at its own line,
// and the file is no less valid for its size.
TEST(ValidateFiles, AHugeFileIsValidatedWithErrorsAtTheirLine) {
  testing::TempDir dir;
  std::string checks = "schema_version: 1\nchecks:\n";
  constexpr int k_checks = 3'000;
  for (int i = 0; i < k_checks; ++i) {
    checks += "  - {id: t" + std::to_string(i) + ", kind: tools, on_path: [bash]}\n";
  }
  const std::string padding(4 * 1024 * 1024, '#');
  const auto big = dir.write("big.yaml", checks + padding + "\n");
  const auto big_run = validate({big});
  EXPECT_EQ(big_run.status, k_valid) << big_run.err.substr(0, 1000);
  EXPECT_EQ(lines(big_run.out), std::vector<std::string>{big.string() + ": ok"});

  const std::string bad_line = "  - {id: typo, kind: tools, on_pth: [bash]}\n";
  const auto bad = dir.write("bad.yaml", checks + padding + "\n" + bad_line);
  const auto bad_run = validate({bad});
  EXPECT_EQ(bad_run.status, k_invalid);
  const int line = 2 + k_checks + 2;
  const int column = static_cast<int>(bad_line.find("on_pth")) + 1;
  const auto found = positions(bad_run.err, bad);
  ASSERT_FALSE(found.empty()) << bad_run.err;
  EXPECT_EQ(found.front().first, line) << bad_run.err;
  EXPECT_NE(std::find(found.begin(), found.end(), std::pair(line, column)), found.end())
      << bad_run.err;
}

// Diagnostics quote the contract (keys, values) and file names: a contract
// from a checkout with "\e]2;...\a" or "\e[2J" in a key must not drive the
// terminal of whoever validates it (common/printable).
TEST(ValidateFiles, ControlCharactersFromAContractDoNotReachTheTerminal) {
  testing::TempDir dir;
  const auto hostile = dir.write("hostile.yaml", k_good + "\"\\e[2J\\e]2;owned\\a\": 1\n");
  const auto run = validate({hostile});
  EXPECT_EQ(run.status, k_invalid);
  EXPECT_EQ(positions(run.err, hostile), (std::vector<std::pair<int, int>>{{5, 1}}));
  // Not streamed on failure: the output would clear this terminal too.
  EXPECT_EQ(run.err.find('\x1b'), std::string::npos);
  EXPECT_EQ(run.err.find('\a'), std::string::npos);
}

}  // namespace
}  // namespace envcontract::contracts
