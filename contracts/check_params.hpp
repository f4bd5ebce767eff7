#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "contracts/values.hpp"

// The parameters of each check kind as plain types: what the kind's parser
// (kinds_*.cpp) makes of a check's keys, defaults filled in, and what its
// probe request and judge read. An empty string or list is "not constrained".
// JSON only at the edge: to_json() is the normalised form `validate --print`
// shows and a check result's `expected`.
namespace envcontract::contracts {

using Strings = std::vector<std::string>;
// Name-value pairs in the contract's order (variables, pinned distributions).
template <typename Value>
using NamedList = std::vector<std::pair<std::string, Value>>;

// Whether a check looks at the env as after `conda activate` or as a bare
// `env/bin/python` sees it.
enum class ActivationMode { activated, bare };
std::string to_string(ActivationMode mode);

// What a torch check demands of its CUDA or HIP toolkit.
struct ToolkitRule {
  enum class Mode { none, required, any, exact };
  Mode mode = Mode::none;
  std::string version;  // for Mode::exact: "12.9"
};
std::string to_string(ToolkitRule::Mode mode);

struct TorchParams {
  std::string version;  // "2.10.0+cpu"
  std::string base;     // "2.10.0"
  std::string local;    // "cpu"
  std::optional<ToolkitRule> cuda;
  std::optional<ToolkitRule> hip;
  Strings forbidden_paths;  // absolute path prefixes torch must not live under
  // Text torch.__file__ must not contain (torch_contract's forbidden_torch_paths,
  // read as its check_torch_contract.py reads them: `part in torch.__file__`).
  Strings forbidden_path_parts;
  Strings required_paths;  // ... and one of which it must live under
  Strings after_import;    // judge torch's view after importing these
};

struct TritonParams {
  std::string provider;  // normalised distribution name, "flagtree"
  std::vector<VersionClause> provider_version;
  std::string version_prefix;  // "3.6."
  Strings backends;
  Strings forbid_distributions;
};

struct PythonParams {
  std::vector<VersionClause> version;
};

struct DistributionsParams {
  NamedList<std::vector<VersionClause>> pins;  // normalised names
  Strings absent;                              // normalised names
};

struct ModulesParams {
  Strings present;
  Strings absent;
};

struct ImportsParams {
  Strings modules;
  bool ordered = true;
  std::chrono::milliseconds timeout{60'000};
};

struct FilesParams {
  Strings exist;  // path patterns ({prefix}, {site}, /, globs)
  Strings absent;
};

struct LibrariesParams {
  Strings present;  // file names looked up as the loader would
  Strings absent;
};

struct LinkageParams {
  std::string library;  // a path pattern
  Strings must_not_need;
  Strings must_need;
  bool transitive = true;
};

struct DeviceNodesParams {
  std::string glob;  // under /dev/
  Comparison count{">=", 1};
};

struct EnvironmentParams {
  ActivationMode activation = ActivationMode::activated;
  NamedList<std::string> equals;
  Strings set;
  Strings unset;
};

struct SearchPathParams {
  std::string variable = "LD_LIBRARY_PATH";
  ActivationMode activation = ActivationMode::activated;
  Strings starts_with;       // directories, in order, at the front
  Strings must_not_contain;  // directories no entry may lie under
};

struct ToolsParams {
  Strings on_path;
};

struct GlibcParams {
  std::string min_version;  // "2.38"
};

struct DevicesParams {
  std::string expression;  // "torch_fl.flagos.device_count()"
  Strings imports;
  Comparison count{">", 0};
  std::chrono::milliseconds timeout{60'000};
};

struct SmokeParams {
  std::string code;
  std::string expect_output;  // a regular expression, or "" for any output
  std::chrono::milliseconds timeout{120'000};
};

struct CommandParams {
  std::string run;
  int expect_exit = 0;
  std::string expect_output;
  std::chrono::milliseconds timeout{300'000};
};

// One entry of a platform config's `integration_tests` list.
struct IntegrationEntry {
  std::string name;
  std::string id;
  std::string phase;
  std::string failure_policy;
  std::string command;
  NamedList<std::string> environment;
  // The config's `integration_environment`, applied before `environment`.
  NamedList<std::string> runner_environment;
};

struct IntegrationTestParams {
  std::string from;  // the platform config, as the contract names it
  std::string test;  // the entry's id or name
  std::chrono::milliseconds timeout{600'000};
  // A checkout of the repository the config belongs to, where the CI runner
  // runs commands ("": none; commands with repository paths are skipped).
  std::string workdir;
  IntegrationEntry entry;
  // Why the entry could not be read (its config is in a checkout of the
  // repository that is not configured, or lacks it): the check is skipped.
  std::string needs_checkout;
};

using CheckParams =
    std::variant<TorchParams, TritonParams, PythonParams, DistributionsParams, ModulesParams,
                 ImportsParams, FilesParams, LibrariesParams, LinkageParams, DeviceNodesParams,
                 EnvironmentParams, SearchPathParams, ToolsParams, GlibcParams, DevicesParams,
                 SmokeParams, CommandParams, IntegrationTestParams>;

// The normalised form: every parameter, defaults filled in; strings only when
// set, lists always, durations as "timeout_ms".
nlohmann::ordered_json to_json(const CheckParams& params);
nlohmann::ordered_json to_json(const IntegrationEntry& entry);

}  // namespace envcontract::contracts
