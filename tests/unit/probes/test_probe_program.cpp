// The probe program's own JSON: it writes its records and reads the agent's
// request without the json module (which imports re, a fifth of its
// start-up), and must agree with json on every interpreter it runs in.
#include "probes/probe_program.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/json_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;

// Every Python 3 this machine has: pyenv's versions (3.6 to 3.13 on the
// development machine and CI) and Debian's own.
std::vector<std::string> interpreters() {
  std::vector<std::string> found;
  const char* pyenv_root = std::getenv("PYENV_ROOT");
  const char* home = std::getenv("HOME");
  const fs::path versions = pyenv_root != nullptr ? fs::path(pyenv_root) / "versions"
                            : home != nullptr     ? fs::path(home) / ".pyenv/versions"
                                                  : fs::path();
  std::error_code error;
  for (fs::directory_iterator it(versions, error), end; !error && it != end; it.increment(error)) {
    const auto python = it->path() / "bin/python3";
    if (it->path().filename().string().starts_with("3.") && fs::exists(python)) {
      found.push_back(python.string());
    }
  }
  std::sort(found.begin(), found.end());
  if (fs::exists("/usr/bin/python3")) {
    found.push_back("/usr/bin/python3");
  }
  return found;
}

// Imports the probe program as a module (its main() does not run) and
// compares its JSON with json's for values its records can hold, then
// again with json's C half hidden, as on an interpreter built without it.
constexpr const char* k_compare_writers = R"PY(
import sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "without _json":
    sys.modules["_json"] = None
before = set(sys.modules)  # a site-packages .pth file may have imported re already
import envcontract_probe as probe
if sys.argv[2] == "with _json":
    assert not {"json", "re"} & (set(sys.modules) - before), "the probe imported json or re"
import enum, json

class Version(str):
    def __repr__(self):
        return "Version(%s)" % str.__repr__(self)

class Level(enum.IntEnum):
    HIGH = 3

class Opaque:
    def __repr__(self):
        return "<opaque \"thing\">"

values = [
    None, True, False, 0, -7, 2 ** 100, 0.1, -0.0, 1e300, 5e-324,
    float("nan"), float("inf"), float("-inf"),
    "", "plain", "quote \" backslash \\ slash /", "\n\r\t\b\f\x00\x1f\x7f",
    "caf\u00e9 \u2028 \U0001f600", "lone \udcff surrogate", Version("2.10.0+cpu"), Level.HIGH,
    [1, [2, (3, "four")]], (), {}, b"bytes", {1, 2}, Opaque(),
    {"type": "import", "ok": True, "warnings": [], "seconds": 0.25, "nested": {"a": [None]}},
    {1: "int", 1.5: "float", True: "bool", None: "none"},
]
for value in values:
    mine = probe.json_text(value)
    theirs = json.dumps(value, default=repr)
    assert mine == theirs, "%r: %s != %s" % (value, mine, theirs)
print("agree on %d values" % len(values))
)PY";

TEST(ProbeProgram, WritesJsonAsTheJsonModuleDoesOnEveryInterpreter) {
  testing::TempDir dir;
  dir.write("envcontract_probe.py", std::string(probe_program_source()));
  const auto check = dir.write("compare_writers.py", k_compare_writers);
  const auto pythons = interpreters();
  ASSERT_FALSE(pythons.empty()) << "no Python 3 on this machine";
  for (const auto& python : pythons) {
    for (const std::string mode : {"with _json", "without _json"}) {
      const auto result =
          testing::run_command({python, "-I", check.string(), dir.path().string(), mode});
      EXPECT_EQ(result.exit_code, 0) << python << " " << mode << ": " << result.err;
      EXPECT_NE(result.out.find("agree on"), std::string::npos) << python << " " << mode;
    }
  }
}

// The request is the agent's JSON text read as a Python expression: every
// string the agent may put in it (a contract's snippet, a module name, text
// with invalid UTF-8, replaced) reads back as json reads it.
constexpr const char* k_compare_readers = R"PY(
import json, sys
sys.path.insert(0, sys.argv[1])
import envcontract_probe as probe
text = open(sys.argv[2], encoding="utf-8").read()
mine = eval(text, dict(probe.REQUEST_NAMES))
theirs = json.loads(text)
assert mine == theirs, "%r != %r" % (mine, theirs)
assert mine["flags"] == [True, False, None]
print("same request")
)PY";

TEST(ProbeProgram, ReadsTheAgentsRequestAsJsonReadsItOnEveryInterpreter) {
  using namespace std::string_literals;
  testing::TempDir dir;
  dir.write("envcontract_probe.py", std::string(probe_program_source()));
  const auto check = dir.write("compare_readers.py", k_compare_readers);
  nlohmann::ordered_json request = {
      {"chain",
       {{{"stage", "smoke"},
         {"code", "import torch\nprint(\"a\\tb\", '\\\\', r'\\n')\n# caf\xc3\xa9 \xe2\x80\xa8\n"},
         {"timeout_seconds", 30.5}},
        {{"stage", "imports"}, {"modules", {"torch", "torch_fl", "triton"}}}}},
      {"first_import", "torch"},
      {"control", "nul \0 bell \x07 escape \x1b del \x7f"s},
      {"invalid_utf8", "\xff\xfe half \xe2\x82"},
      {"emoji", "\xf0\x9f\x98\x80"},
      {"numbers", {0, -1, 1234567890123LL, 0.001, 1e300}},
      {"flags", {true, false, nullptr}},
      {"empty", nlohmann::ordered_json::object()},
  };
  const auto request_file = dir.write("request.json", common::json_text(request));
  const auto pythons = interpreters();
  ASSERT_FALSE(pythons.empty()) << "no Python 3 on this machine";
  for (const auto& python : pythons) {
    const auto result = testing::run_command(
        {python, "-I", check.string(), dir.path().string(), request_file.string()});
    EXPECT_EQ(result.exit_code, 0) << python << ": " << result.err;
    EXPECT_EQ(result.out, "same request\n") << python;
  }
}

}  // namespace
}  // namespace envcontract::probes
