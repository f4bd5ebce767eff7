#include "probes/activation.hpp"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "common/json_from_outside.hpp"
#include "discovery/exec_prefix.hpp"
#include "discovery/exec_session.hpp"
#include "probes/import_safety.hpp"
#include "process/scratch_directory.hpp"
#include "process/small_files.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

constexpr const char* k_bash = "/bin/bash";

// Fixed text: the env's own values arrive as $1..$4, so a prefix with spaces,
// quotes or $() is never parsed as shell code. Environment variables are
// written NUL-separated to a file of ours, so whatever the scripts print on
// stdout cannot corrupt them.
constexpr const char* k_activate_script = R"sh(
kind=$1 prefix=$2 name=$3 out=$4
case "$kind" in
  conda)
    export CONDA_PREFIX="$prefix" CONDA_DEFAULT_ENV="$name" CONDA_SHLVL=1
    export CONDA_PROMPT_MODIFIER="($name) "
    export PATH="$prefix/bin:$PATH"
    for script in "$prefix"/etc/conda/activate.d/*.sh; do
      [ -f "$script" ] && . "$script"
    done
    ;;
  venv)
    if [ -f "$prefix/bin/activate" ]; then
      . "$prefix/bin/activate"
    else
      export VIRTUAL_ENV="$prefix" PATH="$prefix/bin:$PATH"
    fi
    ;;
  *)
    export PATH="$prefix/bin:$PATH"
    ;;
esac
for variable in $(compgen -e); do
  printf '%s=%s\0' "$variable" "${!variable}"
done > "$out"
)sh";

bool is_shell_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Variables that change what bash does before or while it runs the
// activation scripts, rather than what the env's programs see: a value for
// them would make our fixed script run someone else's code.
bool changes_bash_itself(const std::string& name) {
  static const std::set<std::string> names = {
      "BASH_ENV",       "ENV",        "SHELLOPTS",   "BASHOPTS",        "PS4",
      "PROMPT_COMMAND", "IFS",        "GLOBIGNORE",  "CDPATH",          "BASH_XTRACEFD",
      "FUNCNEST",       "EXECIGNORE", "BASH_COMPAT", "POSIXLY_CORRECT", "INPUTRC",
      "TMOUT"};
  return names.contains(name) || name.starts_with("BASH_FUNC_");
}

// conda env config vars: conda-meta/state {"env_vars": {...}} and
// etc/conda/env_vars.d/*.json, applied before activate.d as conda does.
// Names that are not shell names, or that would change bash itself, are
// refused with a message in `refused`.
facts::Environment conda_env_vars(const fs::path& prefix, std::vector<std::string>& refused) {
  facts::Environment variables;
  std::vector<fs::path> sources =
      discovery::sorted_files(prefix / "etc" / "conda" / "env_vars.d", ".json");
  sources.push_back(prefix / "conda-meta" / "state");
  for (const auto& source : sources) {
    if (const auto text = process::read_env_file(source, process::file_limits::conda_record)) {
      for (auto& [name, value] : parse_conda_env_vars(*text, source.string(), refused)) {
        variables[name] = std::move(value);
      }
    }
  }
  return variables;
}

}  // namespace

facts::Environment parse_conda_env_vars(const std::string& text, const std::string& source,
                                        std::vector<std::string>& refused) {
  facts::Environment variables;
  // {"env_vars": {NAME: value}} or {NAME: value}: nothing deeper is kept.
  auto parsed = common::parse_outside_json(
      text, source, {.max_bytes = process::file_limits::conda_record.max_bytes, .kept_depth = 2});
  const Json json = parsed ? std::move(parsed).value() : Json();
  const Json* values = &json;
  if (json.is_object() && json.contains("env_vars")) {
    values = &json["env_vars"];
  }
  if (!values->is_object()) {
    return variables;
  }
  for (const auto& [name, value] : values->items()) {
    if (!value.is_string()) {
      continue;
    }
    if (!is_shell_name(name)) {
      refused.push_back(source + ": '" + name + "' is not a shell variable name; not applied");
    } else if (changes_bash_itself(name)) {
      refused.push_back(source + ": " + name +
                        " changes how bash runs the activation scripts; not applied");
    } else {
      variables[name] = value.get<std::string>();
    }
  }
  return variables;
}

namespace {

facts::Environment parse_nul_separated(const std::string& text) {
  facts::Environment environment;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\0', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string entry = text.substr(start, end - start);
    const auto equals = entry.find('=');
    if (equals != std::string::npos && equals > 0) {
      environment[entry.substr(0, equals)] = entry.substr(equals + 1);
    }
    start = end + 1;
  }
  return environment;
}

// Variables bash sets for itself and the agent's markers, not the scripts'
// doing. (Counted as the activation's, the session's marker made every env
// probed through an engine's exec look as if its activation changed how
// libraries load, and so probed twice.)
void drop_shell_noise(facts::Environment& environment) {
  for (const char* name :
       {"_", "SHLVL", "PWD", "OLDPWD", process::k_probe_marker, process::k_session_marker}) {
    environment.erase(name);
  }
}

}  // namespace

facts::Environment parse_environment_dump(const std::string& text) {
  auto environment = parse_nul_separated(text);
  drop_shell_noise(environment);
  return environment;
}

facts::Environment bare_environment(const PythonEnv& env) {
  facts::Environment environment;
  environment["PATH"] = process::k_system_path;
  environment["LANG"] = "C.UTF-8";
  // Who runs it, as a login would tell it; never the agent's own.
  environment["HOME"] = env.run_as.home.empty() ? "/" : env.run_as.home.string();
  if (!env.run_as.user.empty()) {
    environment["USER"] = env.run_as.user;
    environment["LOGNAME"] = env.run_as.user;
  }
  environment["SHELL"] = env.run_as.shell.empty() ? "/bin/sh" : env.run_as.shell;
  return environment;
}

std::string activation_fingerprint(const PythonEnv& env) {
  std::string fingerprint = to_string(env.kind) + ";";
  // The change time and inode too: a script rewritten in place with its old
  // size and modification time put back (tar, rsync -t) changes only those.
  for (const auto& input : discovery::activation_inputs(env)) {
    struct stat info {};
    if (::stat(input.c_str(), &info) == 0) {
      fingerprint += input.filename().string() + ":" + std::to_string(info.st_size) + ":" +
                     std::to_string(info.st_mtim.tv_sec) + "." +
                     std::to_string(info.st_mtim.tv_nsec) + ":" +
                     std::to_string(info.st_ctim.tv_sec) + "." +
                     std::to_string(info.st_ctim.tv_nsec) + ":" + std::to_string(info.st_ino) + ";";
    }
  }
  return fingerprint;
}

ActivatedEnvironment activate(const PythonEnv& env, std::chrono::milliseconds timeout,
                              const process::Cancellation* cancellation,
                              const process::ResourceLimits& resources) {
  ActivatedEnvironment result;
  result.bare = bare_environment(env);
  result.activated = result.bare;
  result.fingerprint = activation_fingerprint(env);
  for (const auto& input : discovery::activation_inputs(env)) {
    if (process::path_exists(input) && input.extension() == ".sh") {
      result.scripts.push_back(input);
    } else if (process::path_exists(input) && input.filename() == "activate") {
      result.scripts.push_back(input);
    }
  }

  if (const auto refusal = discovery::code_refusal(env)) {
    result.problem = refusal->text;
    return result;
  }
  // Activation scripts may start the env's Python, which imports from the
  // search path it has before activation (the user site, a base's site
  // dirs): that is held to the rule first.
  PythonEnv before_activation = env;
  if (!before_activation.imports_checked) {
    refuse_unsafe_imports(before_activation, result);
    if (const auto refusal = discovery::code_refusal(before_activation)) {
      result.problem = refusal->text;
      return result;
    }
  }
  const auto credentials = discovery::credentials_of(env);
  // Inside a container target, everything it is handed is named as the
  // container sees it, and its results come back named so.
  process::ScratchDirectory directory("envcontract-activate", credentials,
                                      discovery::scratch_root(env),
                                      discovery::scratch_root_process(env));
  if (!directory.ok() || !directory.hand_over()) {
    result.problem = "cannot create a private directory for activation: " + directory.error();
    return result;
  }

  process::ProcessSpec spec;
  spec.argv = {k_bash,
               "--noprofile",
               "--norc",
               "-c",
               k_activate_script,
               "envcontract-activate",
               to_string(env.kind),
               discovery::seen_by_env(env, env.prefix),
               env.name,
               directory.file("environment").string()};
  spec.environment = result.bare;
  spec.credentials = credentials;
  if (env.kind == EnvKind::conda) {
    facts::Environment variables;
    {
      process::ReadingAs reading(env.reader());
      if (reading.ok()) {
        variables = conda_env_vars(env.prefix, result.refused_variables);
      }
    }
    for (const auto& [name, value] : variables) {
      spec.environment[name] = value;
    }
  }
  spec.working_dir = discovery::seen_by_env(env, env.prefix);
  process::ProcessLimits limits;
  limits.timeout = timeout;
  limits.max_output_bytes = 64 * 1024;
  limits.cancellation = cancellation;
  limits.resources = resources;
  const auto run = discovery::run_env_process(env, spec, limits);
  result.script_output = run.out + run.err;
  const auto text = directory.read("environment", 4 * 1024 * 1024);

  if (!run.succeeded() || !text) {
    result.problem = "activation " + run.describe();
    result.problem_output = process::trim(run.err);
    return result;
  }
  result.activated = parse_environment_dump(*text);
  return result;
}

ActivatedEnvironment ActivationCache::get(const PythonEnv& env,
                                          const process::Cancellation* cancellation,
                                          const process::ResourceLimits& resources) {
  const std::string fingerprint = activation_fingerprint(env);
  {
    std::lock_guard lock(m_mutex);
    const auto it = m_entries.find(env.prefix);
    if (it != m_entries.end() && it->second.fingerprint == fingerprint) {
      return it->second;
    }
  }
  // Activation runs outside the lock: a slow script must not stall other envs.
  auto activated = activate(env, std::chrono::seconds(30), cancellation, resources);
  std::lock_guard lock(m_mutex);
  ++m_runs;
  if (cancellation == nullptr || !cancellation->cancelled()) {
    m_entries[env.prefix] = activated;
  }
  return activated;
}

std::size_t ActivationCache::activations_run() const {
  std::lock_guard lock(m_mutex);
  return m_runs;
}

}  // namespace envcontract::probes
