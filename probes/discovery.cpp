#include "probes/discovery.hpp"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "probes/activation.hpp"
#include "probes/small_files.hpp"
#include "probes/static_facts.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

std::string owner_of(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return "";
  }
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(info.st_uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found) {
    return found->pw_name;
  }
  return std::to_string(info.st_uid);
}

// "3.10.13" from conda-meta/python-3.10.13-h955ad1f_0.json.
std::string conda_python_version(const fs::path& prefix) {
  std::error_code error;
  for (fs::directory_iterator it(prefix / "conda-meta", error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("python-") || !name.ends_with(".json")) {
      continue;
    }
    // python-VERSION-BUILD.json: the build has no '-'.
    const std::string_view middle = std::string_view(name).substr(7, name.size() - 7 - 5);
    const auto dash = middle.find('-');
    if (dash == std::string_view::npos || dash + 1 == middle.size() ||
        middle.find('-', dash + 1) != std::string_view::npos) {
      continue;
    }
    const std::string_view version = middle.substr(0, dash);
    if (first_release_number(version) == version) {
      return std::string(version);
    }
  }
  return "";
}

std::string venv_python_version(const fs::path& prefix) {
  const auto text = read_env_file(prefix / "pyvenv.cfg", file_limits::small_text);
  if (!text) {
    return "";
  }
  const auto values = parse_key_values(*text);
  for (const char* key : {"version_info", "version"}) {
    if (const auto it = values.find(key); it != values.end()) {
      // virtualenv writes version_info = 3.10.13.final.0
      if (auto release = first_release_number(it->second); !release.empty()) {
        return release;
      }
    }
  }
  return "";
}

// "3.10" from lib/python3.10/: what the layout tells when metadata does not.
std::string layout_python_version(const fs::path& prefix) {
  std::error_code error;
  std::string best;
  for (fs::directory_iterator it(prefix / "lib", error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("python")) {
      continue;
    }
    const std::string version = name.substr(6);
    const auto dot = version.find('.');
    // Exactly N.N: python3.10, not python3.10.13 or python3.10t.
    if (first_release_number(version) == version && dot != std::string::npos &&
        version.find('.', dot + 1) == std::string::npos && dir_exists(it->path())) {
      best = std::max(best, version);
    }
  }
  return best;
}

void check_interpreter(PythonEnv& env) {
  env.python = env.prefix / "bin" / "python";
  std::error_code error;
  const auto status = fs::symlink_status(env.python, error);
  if (error || !fs::exists(status)) {
    if (!path_exists(env.prefix / "bin" / "python3")) {
      env.problems.push_back("no Python interpreter: " + env.python.string() +
                             " is missing (a half-deleted env?)");
      return;
    }
    env.python = env.prefix / "bin" / "python3";
  }
  if (fs::is_symlink(fs::symlink_status(env.python, error)) && !path_exists(env.python)) {
    const auto target = fs::read_symlink(env.python, error);
    env.problems.push_back(env.python.string() + " is a dangling symlink to " + target.string() +
                           ": its interpreter was removed or moved");
  }
}

}  // namespace

common::Result<std::vector<std::string>> parse_condarc_envs_dirs(const std::string& text) {
  std::vector<std::string> dirs;
  try {
    // yaml-cpp 0.7 bounds its own recursion (DeepRecursion), so nesting
    // cannot overflow the stack; the text itself is bounded by the reader.
    const YAML::Node config = YAML::Load(text);
    const YAML::Node envs_dirs = config.IsMap() ? config["envs_dirs"] : YAML::Node();
    if (envs_dirs && envs_dirs.IsSequence()) {
      for (const auto& dir : envs_dirs) {
        if (dir.IsScalar()) {
          dirs.push_back(dir.Scalar());
        }
      }
    }
  } catch (const YAML::Exception& error) {
    return common::Error{error.what()};
  }
  return dirs;
}

std::optional<PythonEnv> describe_prefix(const fs::path& prefix, const RunAsPolicy& run_as,
                                         const fs::path& scan_root) {
  PythonEnv env;
  std::error_code error;
  env.prefix = fs::canonical(prefix, error);
  if (error) {
    return std::nullopt;
  }
  FileProblemLog refused;
  if (dir_exists(env.prefix / "conda-meta")) {
    env.kind = EnvKind::conda;
    env.python_version = conda_python_version(env.prefix);
  } else if (path_exists(env.prefix / "pyvenv.cfg")) {
    env.kind = EnvKind::venv;
    env.python_version = venv_python_version(env.prefix);
  } else if (path_exists(env.prefix / "bin" / "python") ||
             path_exists(env.prefix / "bin" / "python3")) {
    env.kind = EnvKind::interpreter;
  } else {
    return std::nullopt;
  }
  if (env.python_version.empty()) {
    env.python_version = layout_python_version(env.prefix);
  }
  env.name = env.prefix.filename().string();
  if (env.name == ".venv" || env.name == "venv") {
    env.name = env.prefix.parent_path().filename().string() + "/" + env.name;
  }
  if (env.kind == EnvKind::conda && dir_exists(env.prefix / "envs")) {
    env.name = "base";
  }
  env.owner = owner_of(env.prefix);
  env.run_as = run_as_for_prefix(env.prefix, run_as);
  env.unsafe = find_unsafe_paths(
      {env.prefix, env.python, activation_inputs(env), find_site_packages(env), scan_root},
      env.run_as);
  check_interpreter(env);
  if (env.python_version.empty() && env.problems.empty()) {
    env.problems.push_back(
        "cannot tell the Python version: no conda-meta python record, no "
        "pyvenv.cfg version, no lib/pythonX.Y");
  }
  env.refused_files = refused.take();
  return env;
}

namespace {

class Discoverer {
 public:
  explicit Discoverer(const DiscoveryOptions& options) : m_options(options) {}

  Discovery run() {
    for (const auto& root : m_options.roots) {
      if (!dir_exists(root)) {
        problem(root, "root is not a readable directory");
        continue;
      }
      std::error_code error;
      m_scan_root = fs::weakly_canonical(root, error);
      walk(root);
      for (const auto& home : home_dirs(root)) {
        search_home(root, home);
      }
      for (const char* condarc : {"etc/conda/.condarc", "etc/conda/condarc"}) {
        read_condarc(root, root / condarc, root / "root");
      }
    }
    m_scan_root = "/";
    for (const auto& prefix : m_options.prefixes) {
      if (!add(prefix, "configured prefix")) {
        problem(prefix,
                "configured prefix is not a Python environment (no conda-meta/, "
                "pyvenv.cfg or bin/python)");
      }
    }
    Discovery result;
    for (auto& [prefix, env] : m_envs) {
      result.envs.push_back(std::move(env));
    }
    result.problems = std::move(m_problems);
    disambiguate_names(result.envs);
    return result;
  }

 private:
  void problem(const fs::path& path, std::string text) {
    m_problems.push_back({path, std::move(text)});
  }

  // Adds the env at `prefix` (once, however it is reached). A conda
  // installation brings its envs/ along.
  bool add(const fs::path& prefix, const std::string& how) {
    auto env = describe_prefix(prefix, m_options.run_as, m_scan_root);
    if (!env) {
      return false;
    }
    const fs::path key = env->prefix;
    auto [it, inserted] = m_envs.emplace(key, std::move(*env));
    auto& found_by = it->second.found_by;
    if (std::find(found_by.begin(), found_by.end(), how) == found_by.end()) {
      found_by.push_back(how);
    }
    if (inserted && it->second.kind == EnvKind::conda && dir_exists(key / "envs")) {
      add_children(key / "envs", "conda envs of " + key.string());
    }
    return true;
  }

  void add_children(const fs::path& dir, const std::string& how) {
    std::error_code error;
    fs::directory_iterator it(dir, error);
    if (error) {
      if (error != std::errc::no_such_file_or_directory) {
        problem(dir, "cannot read directory: " + error.message());
      }
      return;
    }
    for (fs::directory_iterator end; it != end; it.increment(error)) {
      const auto& child = it->path();
      std::error_code child_error;
      (void)fs::canonical(child, child_error);
      if (child_error) {
        problem(child, "cannot resolve: " + child_error.message());
        continue;
      }
      if (!dir_exists(child)) {
        continue;
      }
      if (!add(child, how)) {
        problem(child,
                "not a Python environment (no conda-meta/, pyvenv.cfg or bin/python): a "
                "half-deleted env?");
      }
    }
    if (error) {
      problem(dir, "cannot read directory: " + error.message());
    }
  }

  static bool is_env_prefix(const fs::path& dir) {
    return dir_exists(dir / "conda-meta") || path_exists(dir / "pyvenv.cfg");
  }

  static bool skip_during_walk(const fs::path& root, const fs::path& dir) {
    static const std::set<std::string> k_skipped_names = {"node_modules",  ".git",   "__pycache__",
                                                          "site-packages", ".cache", ".pyenv"};
    static const std::set<std::string> k_pseudo_filesystems = {"proc", "sys", "dev", "run"};
    const std::string name = dir.filename().string();
    if (k_skipped_names.contains(name)) {
      return true;
    }
    return dir.parent_path() == root && k_pseudo_filesystems.contains(name) && root == "/";
  }

  // Breadth-first, depth- and budget-limited; never descends into an env.
  void walk(const fs::path& root) {
    std::deque<std::pair<fs::path, int>> queue = {{root, 0}};
    std::size_t opened = 0;
    while (!queue.empty()) {
      auto [dir, depth] = queue.front();
      queue.pop_front();
      if (is_env_prefix(dir)) {
        add(dir, "found under " + root.string());
        continue;
      }
      if (depth >= m_options.max_depth) {
        continue;
      }
      if (++opened > m_options.max_directories) {
        problem(root, "stopped walking after " + std::to_string(m_options.max_directories) +
                          " directories; name deeper env roots explicitly");
        return;
      }
      std::error_code error;
      fs::directory_iterator it(dir, error);
      if (error) {
        problem(dir, "cannot read directory: " + error.message());
        continue;
      }
      for (fs::directory_iterator end; it != end; it.increment(error)) {
        std::error_code status_error;
        const auto status = it->symlink_status(status_error);
        // Symlinked directories are not followed during the walk: their
        // targets are found where they live, and loops cannot trap us.
        if (!status_error && fs::is_directory(status) && !skip_during_walk(root, it->path())) {
          queue.emplace_back(it->path(), depth + 1);
        }
      }
      if (error) {
        problem(dir, "cannot read directory: " + error.message());
      }
    }
  }

  static std::vector<fs::path> home_dirs(const fs::path& root) {
    std::vector<fs::path> homes;
    if (dir_exists(root / "root")) {
      homes.push_back(root / "root");
    }
    std::error_code error;
    for (fs::directory_iterator it(root / "home", error), end; !error && it != end;
         it.increment(error)) {
      homes.push_back(it->path());
    }
    if (root == "/") {
      setpwent();
      while (const passwd* entry = getpwent()) {
        const fs::path home = entry->pw_dir;
        if (std::find(homes.begin(), homes.end(), home) == homes.end() && dir_exists(home) &&
            home != "/") {
          homes.push_back(home);
        }
      }
      endpwent();
    }
    return homes;
  }

  void search_home(const fs::path& root, const fs::path& home) {
    read_environments_txt(root, home / ".conda" / "environments.txt");
    for (const char* condarc : {".condarc", ".config/conda/.condarc", ".conda/.condarc"}) {
      read_condarc(root, home / condarc, home);
    }
    const std::pair<const char*, const char*> k_env_dirs[] = {
        {".pyenv/versions", "pyenv versions"},
        {".virtualenvs", "~/.virtualenvs"},
        {".cache/pypoetry/virtualenvs", "poetry virtualenvs"},
        {".local/share/virtualenvs", "pipenv virtualenvs"},
        {".local/share/uv/tools", "uv tool envs"},
        {".conda/envs", "~/.conda/envs"},
    };
    for (const auto& [relative, how] : k_env_dirs) {
      const fs::path dir = home / relative;
      if (dir_exists(dir)) {
        add_children(dir, std::string(how) + " of " + home.string());
      }
    }
  }

  // A path written inside `root`'s filesystem: as is on this host, else
  // under the root (a container's rootfs records its own absolute paths).
  static std::optional<fs::path> resolve_in_root(const fs::path& root, const fs::path& path) {
    if (path_exists(path)) {
      return path;
    }
    const fs::path inside = root / path.relative_path();
    if (root != "/" && path.is_absolute() && path_exists(inside)) {
      return inside;
    }
    return std::nullopt;
  }

  // conda's envs_dirs: where `conda create -n` puts envs besides envs/.
  // Read as data (yaml-cpp); conda itself is never run.
  void read_condarc(const fs::path& root, const fs::path& file, const fs::path& home) {
    if (!path_exists(file)) {
      return;
    }
    const auto read = read_file_bounded(file, file_limits::conda_config);
    if (!read.text) {
      if (!read.refusal.empty()) {
        problem(file, "conda configuration not read: it " + read.refusal);
      }
      return;
    }
    auto parsed = parse_condarc_envs_dirs(*read.text);
    if (!parsed) {
      problem(file, "cannot read conda configuration: " + parsed.error());
      return;
    }
    for (auto dir : parsed.value()) {
      if (dir.starts_with("~/")) {
        dir = (home / dir.substr(2)).string();
      }
      if (const auto resolved = resolve_in_root(root, dir)) {
        add_children(*resolved, "envs_dirs of " + file.string());
      }
    }
  }

  void read_environments_txt(const fs::path& root, const fs::path& file) {
    if (!path_exists(file)) {
      return;
    }
    const auto read = read_file_bounded(file, file_limits::env_list);
    const auto& text = read.text;
    if (!text) {
      problem(file, "cannot read conda's list of envs" +
                        (read.refusal.empty() ? std::string() : ": it " + read.refusal));
      return;
    }
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      const fs::path listed = trim(line);
      if (listed.empty()) {
        continue;
      }
      const auto prefix = resolve_in_root(root, listed);
      if (!prefix) {
        problem(listed, "listed in " + file.string() +
                            " but does not exist: a stale entry (the env was deleted without "
                            "'conda env remove')");
        continue;
      }
      if (!add(*prefix, "listed in " + file.string())) {
        problem(*prefix, "listed in " + file.string() + " but is not a Python environment");
      }
    }
  }

  // Names must identify envs in reports: a second "base" or a venv named
  // like a conda env gets its prefix as name.
  static void disambiguate_names(std::vector<PythonEnv>& envs) {
    std::map<std::string, int> counts;
    for (const auto& env : envs) {
      ++counts[env.name];
    }
    for (auto& env : envs) {
      if (counts[env.name] > 1) {
        env.name = env.prefix.string();
      }
    }
  }

  const DiscoveryOptions& m_options;
  fs::path m_scan_root = "/";  // the root being walked: safety checks stop there
  std::map<fs::path, PythonEnv> m_envs;
  std::vector<DiscoveryProblem> m_problems;
};

}  // namespace

Discovery discover_envs(const DiscoveryOptions& options) {
  return Discoverer(options).run();
}

}  // namespace envcontract::probes
