#include "provisioning/provision_steps.hpp"

#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/json_text.hpp"

namespace envcontract::provisioning {
namespace fs = std::filesystem;
namespace {

// Run by the new env's own interpreter, as the provisioning user: writes the
// recipe's activation where the agent's activation reads it (conda's
// conda-meta/state env_vars and etc/conda/activate.d, or the end of a venv's
// bin/activate). Its input comes on stdin, as JSON.
constexpr const char* k_activation_writer = R"py(
import json, os, shlex, sys
spec = json.load(sys.stdin)
prefix = spec["prefix"]

def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as out:
        out.write(text)

if spec["venv"]:
    lines = ["", "# Written by envcontract provision: the contract's activation."]
    lines += ["export %s=%s" % (name, shlex.quote(value)) for name, value in spec["env_vars"]]
    for name, text in spec["scripts"]:
        lines += ["# " + name, text.rstrip("\n")]
    write(os.path.join(prefix, "bin", "activate"), "\n".join(lines) + "\n", "a")
else:
    path = os.path.join(prefix, "conda-meta", "state")
    state = {}
    if os.path.exists(path):
        with open(path) as existing:
            state = json.load(existing)
    state.setdefault("env_vars", {}).update(dict(spec["env_vars"]))
    write(path, json.dumps(state, indent=2) + "\n")
    for name, text in spec["scripts"]:
        write(os.path.join(prefix, "etc", "conda", "activate.d", name), text)
print("activation written")
)py";

// `word` with each placeholder replaced by its value, in one pass from the
// left: a value is never read again for placeholders (an envs directory
// named "/srv/{wheelhouse}" is that directory).
std::string substitute(const std::string& word, const std::map<std::string, std::string>& values) {
  std::string out;
  for (std::size_t at = 0; at < word.size();) {
    const auto found = std::find_if(values.begin(), values.end(), [&](const auto& entry) {
      return word.compare(at, entry.first.size(), entry.first) == 0;
    });
    if (found == values.end()) {
      out += word[at++];
    } else {
      out += found->second;
      at += found->first.size();
    }
  }
  return out;
}

std::vector<std::string> expand(const std::string& text,
                                const std::map<std::string, std::string>& values) {
  std::vector<std::string> argv;
  for (const auto& word :
       contracts::split_command_template(text).value_or(std::vector<std::string>{})) {
    argv.push_back(substitute(word, values));
  }
  return argv;
}

bool executable_file(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string env_name_problem(const std::string& name) {
  if (name.empty()) {
    return "the env needs a name";
  }
  if (name.size() > 100) {
    return "an env name has at most 100 characters";
  }
  if (name.front() == '.' || name.front() == '-') {
    return "an env name cannot start with '" + std::string(1, name.front()) + "'";
  }
  if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
      std::string::npos) {
    return "'" + name + "' is not an env name: use letters, digits, '.', '_' and '-'";
  }
  return "";
}

common::Result<fs::path> find_base_python(const contracts::ProvisionRecipe& recipe,
                                          const std::vector<fs::path>& search_dirs) {
  if (recipe.python.starts_with("/")) {
    if (!executable_file(recipe.python)) {
      return common::Error{"the recipe's interpreter " + recipe.python +
                           " is not an executable file on this host; install it, or name "
                           "another in 'python' of 'provision'"};
    }
    return fs::path(recipe.python);
  }
  const std::string file = "python" + recipe.python;
  std::string searched;
  for (const auto& dir : search_dirs) {
    if (executable_file(dir / file)) {
      return dir / file;
    }
    searched += (searched.empty() ? "" : ", ") + dir.string();
  }
  return common::Error{"no " + file + " in " + (searched.empty() ? "(no directory)" : searched) +
                       ": install Python " + recipe.python +
                       ", add its directory to provisioning.python_dirs in the agent's config, "
                       "or give 'python' of 'provision' as an absolute path"};
}

std::vector<ProvisionStep> provision_steps(const contracts::ProvisionRecipe& recipe,
                                           const ProvisionTarget& target) {
  const fs::path prefix = target.envs_dir / target.name;
  const std::string python = (prefix / "bin" / "python").string();
  const std::map<std::string, std::string> values = {{"{prefix}", prefix.string()},
                                                     {"{python}", python},
                                                     {"{wheelhouse}", recipe.wheelhouse},
                                                     {"{name}", target.name}};
  // A clean environment: the agent's own variables (its token, proxies of
  // its own) never reach the recipe's commands. pip keeps no cache in the
  // user's home and reads no user config that would change what it installs.
  std::map<std::string, std::string> environment = {
      {"PATH", (prefix / "bin").string() + ":/usr/local/bin:/usr/bin:/bin"},
      {"HOME", target.home.string()},
      {"LANG", "C.UTF-8"},
      {"PIP_NO_CACHE_DIR", "1"},
      {"PIP_CONFIG_FILE", "/dev/null"},
      {"PIP_DISABLE_PIP_VERSION_CHECK", "1"},
      {"PYTHONNOUSERSITE", "1"},
      {"PYTHONDONTWRITEBYTECODE", "1"},
  };
  std::vector<ProvisionStep> steps;
  ProvisionStep create{"create", {}, environment, target.envs_dir, "", ""};
  if (recipe.creates_venv()) {
    create.argv = {target.base_python.string(), "-m", "venv", prefix.string()};
  } else {
    create.argv = expand(recipe.create, values);
  }
  steps.push_back(std::move(create));

  ProvisionStep install{
      "install", {python, "-m", "pip", "install", "--no-input"}, environment, prefix, "", ""};
  if (recipe.no_index) {
    install.argv.emplace_back("--no-index");
  }
  if (!recipe.wheelhouse.empty()) {
    install.argv.insert(install.argv.end(), {"--find-links", recipe.wheelhouse});
  }
  if (!recipe.index_url.empty()) {
    install.argv.insert(install.argv.end(), {"--index-url", recipe.index_url});
  }
  // After "--" nothing is an option of pip's, whatever a requirement says
  // (the contract's check of requirements keeps them out too).
  install.argv.emplace_back("--");
  install.argv.insert(install.argv.end(), recipe.packages.begin(), recipe.packages.end());
  steps.push_back(std::move(install));

  if (!recipe.env_vars.empty() || !recipe.activate_scripts.empty()) {
    nlohmann::ordered_json spec = {{"prefix", prefix.string()},
                                   {"venv", recipe.creates_venv()},
                                   {"env_vars", recipe.env_vars},
                                   {"scripts", recipe.activate_scripts}};
    std::string what;
    for (const auto& [name, value] : recipe.env_vars) {
      what += (what.empty() ? "" : ", ") + name + "=" + value;
    }
    for (const auto& [name, text] : recipe.activate_scripts) {
      what += (what.empty() ? "" : ", ") +
              (recipe.creates_venv() ? name : "etc/conda/activate.d/" + name);
    }
    const std::string where = recipe.creates_venv()
                                  ? "appends to " + (prefix / "bin/activate").string() + ": "
                                  : "writes conda's env_vars (conda-meta/state) and scripts: ";
    steps.push_back({"activation",
                     {python, "-I", "-c", k_activation_writer},
                     environment,
                     prefix,
                     common::json_text(spec),
                     "the new env's python " + where + what});
  }
  for (std::size_t i = 0; i < recipe.commands.size(); ++i) {
    steps.push_back({"command " + std::to_string(i + 1), expand(recipe.commands[i], values),
                     environment, prefix, "", ""});
  }
  return steps;
}

std::string shell_quoted(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789@%+=:,./-_") == std::string::npos;
  if (plain) {
    return word;
  }
  std::string out = "'";
  for (const char c : word) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& word : argv) {
    // The agent's own program given inline (the activation writer) is
    // named, not printed; a recipe's word is shown whole, newlines and all,
    // as it runs.
    const std::string shown = word == k_activation_writer
                                  ? "'<" + std::to_string(word.size()) + " bytes of Python>'"
                                  : shell_quoted(word);
    line += (line.empty() ? "" : " ") + shown;
  }
  return line;
}

}  // namespace envcontract::provisioning
