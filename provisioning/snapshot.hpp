#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// A contract written from a known-good env (`envcontractd snapshot`): what
// the env is, as checks a person can review and trim. The facts come in as
// plain values; this only writes YAML, with a comment on every check.
namespace envcontract::provisioning {

struct SnapshotTorch {
  std::string version;  // "2.10.0+cpu"
  std::string base;     // "2.10.0"
  std::string local;    // "cpu", or ""
  std::optional<std::string> cuda;
  std::optional<std::string> hip;
  bool cuda_library_present = false;  // torch/lib/libtorch_cuda.so
};

struct SnapshotTriton {
  std::string provider;  // "flagtree"
  std::string provider_version;
  std::vector<std::string> backends;
};

// A devices check of the base contract, and what it counted in the env.
struct SnapshotDevices {
  std::string id;
  std::string expression;
  std::vector<std::string> imports;
  std::chrono::milliseconds timeout{60'000};
  std::optional<long long> observed;  // nullopt: it did not count (`problem` says why)
  std::string base_op;                // the base contract's comparison: ">=", ">", "=="
  long long base_value = 0;
  std::string problem;
  bool advisory = false;  // the base check's severity
};

// A smoke check of the base contract, kept as it is, with how it went.
struct SnapshotSmoke {
  std::string id;
  std::string description;
  std::string code;
  std::string expect_output;
  std::chrono::milliseconds timeout{120'000};
  std::string outcome;  // "passed", or what went wrong
  bool advisory = false;
};

struct SnapshotInput {
  std::string contract_name;  // the new contract's name
  std::string platform;       // from the base contract, or ""
  std::string env;            // the golden env's name and prefix
  std::string prefix;
  std::string host;
  std::string taken_at;        // RFC 3339
  std::string python_version;  // "3.10.13"
  std::optional<SnapshotTorch> torch;
  std::optional<SnapshotTriton> triton;
  std::vector<std::string> imported;                                 // in import order
  std::vector<std::pair<std::string, std::string>> import_failures;  // module, error
  bool pin = false;                                                  // pin every distribution
  std::vector<std::pair<std::string, std::string>> distributions;    // name, version
  // Set by activation (name, value), without the shell's own and the env
  // manager's bookkeeping.
  std::vector<std::pair<std::string, std::string>> variables;
  // Set by activation to a value under the env's own prefix: other envs set
  // them to their own, so only that they are set is stated.
  std::vector<std::string> variables_set;
  // The first directory activation puts on LD_LIBRARY_PATH; "{prefix}/..."
  // when it is the env's own.
  std::string library_path_first;
  std::string image;  // the host's image reference, or ""
  std::vector<SnapshotDevices> devices;
  std::vector<SnapshotSmoke> smokes;
};

// The contract as YAML text, commented for review.
std::string snapshot_yaml(const SnapshotInput& input);

// `text` as a YAML double-quoted scalar (escapes for quotes, backslashes and
// control characters).
std::string yaml_quoted(const std::string& text);

}  // namespace envcontract::provisioning
