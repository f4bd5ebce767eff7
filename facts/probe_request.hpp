#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace envcontract::facts {

// What a contract's checks need gathered in each env beyond what every scan
// gathers. Each kind of the check-kind registry adds its part
// (contracts/check_kind.cpp); probes gather it; nothing else reads contracts
// to decide what to probe.
struct ProbeRequest {
  std::vector<std::string> imports;  // the imports stage, in this order
  std::chrono::milliseconds imports_timeout{60'000};
  // Read torch's view again after `imports` (some vendor packages patch
  // torch.version on import).
  bool torch_after_imports = false;
  // torch's own view of itself (the identity stage: import torch), for a
  // torch check. A devices or smoke stage that imports torch asks for it
  // too, by its imports; a contract that never needs torch never imports it.
  bool torch_identity = false;
  struct Devices {
    std::string id;
    std::string expression;
    std::vector<std::string> imports;
    std::chrono::milliseconds timeout{60'000};
  };
  std::vector<Devices> devices;
  struct Smoke {
    std::string id;
    std::string code;
    std::chrono::milliseconds timeout{120'000};
  };
  std::vector<Smoke> smokes;
  // Shell commands (bash -c) run in the activated environment, with `extra`
  // variables on top; they need no Python and run even when torch does not import.
  struct Command {
    std::string id;
    std::string run;
    std::map<std::string, std::string> extra;
    std::chrono::milliseconds timeout{300'000};
    // Run as the FlagOS CI runner runs an integration test: `layers` applied
    // in order over the activated environment, each value's ${VAR} and $VAR
    // expanded against what is set so far (unset ones left as written);
    // `bash --noprofile --norc -c` with `set -euo pipefail`; in `workdir`
    // ("": the env's prefix).
    bool ci_runner = false;
    std::vector<std::pair<std::string, std::string>> layers;
    std::string workdir;
    // The CI runner's fail-fast: once a `fail_fast` command of a `group`
    // (the platform config it comes from) fails, later commands of that
    // group are not run, and their stages name it (stage_names::fail_fast_stop).
    std::string group;
    bool fail_fast = false;
  };
  std::vector<Command> commands;
  // Libraries looked up by name as each env's loader would find them.
  std::vector<std::string> library_names;
  // Path patterns globbed in each env ({prefix}, {site}, ${VAR}: path_pattern.hpp).
  std::vector<std::string> path_patterns;
  // Device node globs (absolute), globbed on the host the envs run on.
  std::vector<std::string> device_globs;
  // Executables looked up on each env's activated PATH.
  std::vector<std::string> tools;

  // Each adds an item once, keeping the first position.
  void add_import(const std::string& module);
  void add_library_name(const std::string& name);
  void add_path_pattern(const std::string& pattern);
  void add_device_glob(const std::string& pattern);
  void add_tool(const std::string& name);
};

}  // namespace envcontract::facts
