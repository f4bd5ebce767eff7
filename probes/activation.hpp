#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "discovery/env_files.hpp"
#include "discovery/python_env.hpp"
#include "facts/activation.hpp"
#include "probes/fact_names.hpp"
#include "process/process_runner.hpp"

namespace envcontract::probes {

using facts::to_json;
using facts::to_string;

using facts::Activation;

// The environment a probe process gets when nothing is activated: a clean
// base (PATH, LANG, and HOME of the env's owner), never the agent's own
// variables (tokens, credentials).
facts::Environment bare_environment(const PythonEnv& env);

using facts::ActivatedEnvironment;

// Runs the env's real activation in a clean bash (never in our process):
// conda: CONDA_PREFIX, CONDA_DEFAULT_ENV, PATH, conda's env_vars (from
// conda-meta/state and etc/conda/env_vars.d/*.json), then every
// etc/conda/activate.d/*.sh in name order; venv: bin/activate. The prefix
// and name reach bash as arguments, never inside the script text. It runs
// as env.run_as, and not at all when code_refusal(env) says so.
// Its process tree gets the same limits as the env's probes (`resources`):
// an activate.d script is the env's code like any other.
ActivatedEnvironment activate(const PythonEnv& env,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30),
                              const process::Cancellation* cancellation = nullptr,
                              const process::ResourceLimits& resources = {});

// The variables of conda's env_vars JSON (conda-meta/state or an
// etc/conda/env_vars.d file named `source`): names that are not shell names,
// or that would change bash itself, are refused with a message in `refused`.
facts::Environment parse_conda_env_vars(const std::string& text, const std::string& source,
                                        std::vector<std::string>& refused);

// The environment the activation script dumped (NUL-separated NAME=value),
// without the shell's own bookkeeping variables.
facts::Environment parse_environment_dump(const std::string& text);

// What activation depends on: the scripts and files above with their sizes
// and modification times. Cheap: stat calls only.
std::string activation_fingerprint(const PythonEnv& env);

// Activation results per prefix, reused until the fingerprint changes.
class ActivationCache {
 public:
  // A cancelled activation is returned but not kept: the next scan runs it again.
  ActivatedEnvironment get(const PythonEnv& env,
                           const process::Cancellation* cancellation = nullptr,
                           const process::ResourceLimits& resources = {});
  std::size_t activations_run() const;

 private:
  mutable std::mutex m_mutex;
  std::map<std::filesystem::path, ActivatedEnvironment> m_entries;
  std::size_t m_runs = 0;
};

using facts::environment_changes;
using facts::EnvironmentChange;

}  // namespace envcontract::probes
