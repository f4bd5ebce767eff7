#include "probes/activation.hpp"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "probes/small_files.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

constexpr const char* k_base_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
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

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> files;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == extension) {
      files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// conda env config vars: conda-meta/state {"env_vars": {...}} and
// etc/conda/env_vars.d/*.json, applied before activate.d as conda does.
Environment conda_env_vars(const fs::path& prefix) {
  Environment variables;
  std::vector<fs::path> sources = sorted_files(prefix / "etc" / "conda" / "env_vars.d", ".json");
  sources.push_back(prefix / "conda-meta" / "state");
  for (const auto& source : sources) {
    const auto text = read_small_file(source, 1024 * 1024);
    if (!text) {
      continue;
    }
    const auto json = Json::parse(*text, nullptr, false);
    const Json* values = &json;
    if (json.is_object() && json.contains("env_vars")) {
      values = &json["env_vars"];
    }
    if (!values->is_object()) {
      continue;
    }
    for (const auto& [name, value] : values->items()) {
      if (value.is_string()) {
        variables[name] = value.get<std::string>();
      }
    }
  }
  return variables;
}

std::vector<fs::path> activation_inputs(const PythonEnv& env) {
  std::vector<fs::path> inputs;
  if (env.kind == EnvKind::conda) {
    inputs = sorted_files(env.prefix / "etc" / "conda" / "activate.d", ".sh");
    const auto vars = sorted_files(env.prefix / "etc" / "conda" / "env_vars.d", ".json");
    inputs.insert(inputs.end(), vars.begin(), vars.end());
    inputs.push_back(env.prefix / "conda-meta" / "state");
  } else if (env.kind == EnvKind::venv) {
    inputs.push_back(env.prefix / "bin" / "activate");
  }
  return inputs;
}

Environment parse_nul_separated(const std::string& text) {
  Environment environment;
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

// Variables bash sets for itself, not the scripts' doing.
void drop_shell_noise(Environment& environment) {
  for (const char* name : {"_", "SHLVL", "PWD", "OLDPWD"}) {
    environment.erase(name);
  }
}

}  // namespace

std::string to_string(Activation activation) {
  return activation == Activation::bare ? "bare" : "activated";
}

Environment bare_environment(const PythonEnv& env) {
  Environment environment;
  environment["PATH"] = k_base_path;
  environment["LANG"] = "C.UTF-8";
  // The home of the env's owner, as when that user runs it; never the agent's.
  environment["HOME"] = "/";
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (!env.owner.empty() &&
      getpwnam_r(env.owner.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 &&
      found != nullptr && found->pw_dir != nullptr) {
    environment["HOME"] = found->pw_dir;
  }
  return environment;
}

std::string activation_fingerprint(const PythonEnv& env) {
  std::string fingerprint = to_string(env.kind) + ";";
  for (const auto& input : activation_inputs(env)) {
    struct stat info {};
    if (::stat(input.c_str(), &info) == 0) {
      fingerprint += input.filename().string() + ":" + std::to_string(info.st_size) + ":" +
                     std::to_string(info.st_mtim.tv_sec) + "." +
                     std::to_string(info.st_mtim.tv_nsec) + ";";
    }
  }
  return fingerprint;
}

ActivatedEnvironment activate(const PythonEnv& env, std::chrono::milliseconds timeout) {
  ActivatedEnvironment result;
  result.bare = bare_environment(env);
  result.activated = result.bare;
  result.fingerprint = activation_fingerprint(env);
  for (const auto& input : activation_inputs(env)) {
    if (path_exists(input) && input.extension() == ".sh") {
      result.scripts.push_back(input);
    } else if (path_exists(input) && input.filename() == "activate") {
      result.scripts.push_back(input);
    }
  }

  std::error_code temp_error;
  std::string directory_template =
      (fs::temp_directory_path(temp_error) / "envcontract-activate-XXXXXX").string();
  if (temp_error || ::mkdtemp(directory_template.data()) == nullptr) {
    result.problem = "cannot create a temporary directory for activation";
    return result;
  }
  const fs::path directory = directory_template;
  const fs::path output = directory / "environment";

  ProcessSpec spec;
  spec.argv = {k_bash,
               "--noprofile",
               "--norc",
               "-c",
               k_activate_script,
               "envcontract-activate",
               to_string(env.kind),
               env.prefix.string(),
               env.name,
               output.string()};
  spec.environment = result.bare;
  if (env.kind == EnvKind::conda) {
    for (const auto& [name, value] : conda_env_vars(env.prefix)) {
      spec.environment[name] = value;
    }
  }
  spec.working_dir = env.prefix;
  ProcessLimits limits;
  limits.timeout = timeout;
  limits.max_output_bytes = 64 * 1024;
  const auto run = run_process(spec, limits);
  result.script_output = run.out + run.err;
  const auto text = read_small_file(output, 4 * 1024 * 1024);
  std::error_code ignored;
  fs::remove_all(directory, ignored);

  if (!run.succeeded() || !text) {
    result.problem =
        "activation " + run.describe() + (run.err.empty() ? std::string() : ": " + trim(run.err));
    return result;
  }
  result.activated = parse_nul_separated(*text);
  drop_shell_noise(result.activated);
  return result;
}

ActivatedEnvironment ActivationCache::get(const PythonEnv& env) {
  const std::string fingerprint = activation_fingerprint(env);
  {
    std::lock_guard lock(m_mutex);
    const auto it = m_entries.find(env.prefix);
    if (it != m_entries.end() && it->second.fingerprint == fingerprint) {
      return it->second;
    }
  }
  // Activation runs outside the lock: a slow script must not stall other envs.
  auto activated = activate(env);
  std::lock_guard lock(m_mutex);
  ++m_runs;
  m_entries[env.prefix] = activated;
  return activated;
}

std::size_t ActivationCache::activations_run() const {
  std::lock_guard lock(m_mutex);
  return m_runs;
}

std::vector<EnvironmentChange> environment_changes(const Environment& before,
                                                   const Environment& after) {
  std::vector<EnvironmentChange> changes;
  for (const auto& [name, value] : after) {
    const auto it = before.find(name);
    if (it == before.end() || it->second != value) {
      changes.push_back({name, it == before.end() ? "" : it->second, value});
    }
  }
  for (const auto& [name, value] : before) {
    if (!after.contains(name)) {
      changes.push_back({name, value, ""});
    }
  }
  std::sort(changes.begin(), changes.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return changes;
}

Json to_json(const ActivatedEnvironment& activation) {
  auto scripts = Json::array();
  for (const auto& script : activation.scripts) {
    scripts.push_back(script.string());
  }
  auto changes = Json::object();
  for (const auto& change : environment_changes(activation.bare, activation.activated)) {
    changes[change.name] = {{"bare", change.before}, {"activated", change.after}};
  }
  return {{"scripts", scripts},
          {"problem", activation.problem},
          {"changes", changes},
          {"bare", activation.bare},
          {"activated", activation.activated}};
}

}  // namespace envcontract::probes
