#include "discovery/discovery.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/python_names.hpp"
#include "common/yaml_aliases.hpp"
#include "discovery/env_files.hpp"
#include "discovery/interpreter_links.hpp"
#include "process/run_as.hpp"
#include "process/small_files.hpp"
#include "process/stall_guard.hpp"
#include "process/system_root.hpp"
#include "process/user_database.hpp"

namespace envcontract::discovery {
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

// "3.10.13" from conda-meta/python-3.10.13-h955ad1f_0.json, and that file's
// name (as conda-meta/NAME) in `recorded_in`.
std::string conda_python_version(const fs::path& prefix, std::string& recorded_in) {
  std::error_code error;
  for (const std::string& name : process::list_names(prefix / "conda-meta", error)) {
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
    if (process::first_release_number(version) == version) {
      recorded_in = "conda-meta/" + name;
      return std::string(version);
    }
  }
  return "";
}

std::string venv_python_version(const fs::path& prefix) {
  const auto text = process::read_env_file(prefix / "pyvenv.cfg", process::file_limits::small_text);
  if (!text) {
    return "";
  }
  const auto values = process::parse_key_values(*text);
  for (const char* key : {"version_info", "version"}) {
    if (const auto it = values.find(key); it != values.end()) {
      // virtualenv writes version_info = 3.10.13.final.0
      if (auto release = process::first_release_number(it->second); !release.empty()) {
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
  for (const std::string& name : process::list_names(prefix / "lib", error)) {
    if (!name.starts_with("python")) {
      continue;
    }
    const std::string version = name.substr(6);
    const auto dot = version.find('.');
    // Exactly N.N: python3.10, not python3.10.13 or python3.10t.
    if (process::first_release_number(version) == version && dot != std::string::npos &&
        version.find('.', dot + 1) == std::string::npos &&
        process::dir_exists(prefix / "lib" / name)) {
      best = std::max(best, version);
    }
  }
  return best;
}

std::string env_name(const fs::path& prefix, bool conda_installation) {
  if (conda_installation) {
    return "base";
  }
  std::string name = prefix.filename().string();
  if (name == ".venv" || name == "venv") {
    name = prefix.parent_path().filename().string() + "/" + name;
  }
  return name;
}

void check_interpreter(PythonEnv& env, InterpreterLinks& links) {
  env.python = env.prefix / "bin" / "python";
  std::error_code error;
  const auto status = fs::symlink_status(env.python, error);
  if (error || !fs::exists(status)) {
    if (!process::path_exists(env.prefix / "bin" / "python3")) {
      env.problems.push_back(
          {facts::EnvProblem::Kind::no_interpreter,
           "no Python interpreter: " + env.python.string() + " is missing (a half-deleted env?)"});
      return;
    }
    env.python = env.prefix / "bin" / "python3";
  }
  links = follow_interpreter_links(env);
  if (links.missing && links.chain.size() > 1) {
    env.problems.push_back(
        {facts::EnvProblem::Kind::no_interpreter,
         env.python.string() + " is a dangling symlink: " + links.text(env.prefix) + ", and " +
             links.last_inside + " does not exist: its interpreter was removed or moved"});
  } else if (links.loop) {
    env.problems.push_back({facts::EnvProblem::Kind::no_interpreter,
                            env.python.string() + " never reaches a file: " +
                                links.text(env.prefix) + " ... (a loop of symlinks)"});
  }
}

// The interpreter's word over the env's records: conda-meta and pyvenv.cfg
// say what was installed, bin/python is what runs (an upgrade that stopped
// half-way leaves them apart), and the site dirs the interpreter reads
// follow from its own version.
void settle_python_version(PythonEnv& env, const InterpreterLinks& links,
                           const std::string& recorded_in) {
  const std::string running = links.python_version();
  if (running.empty() || common::python_major_minor(env.python_version) == running) {
    return;
  }
  // lib/pythonX.Y is no record of what was installed: a system prefix may
  // hold several.
  if (!env.python_version.empty() && !recorded_in.empty()) {
    env.python_version_conflict = recorded_in + " says Python " + env.python_version + ", but " +
                                  links.text(env.prefix) + " is Python " + running;
  }
  env.python_version = running;
}

}  // namespace

common::Result<std::vector<std::string>> parse_condarc_envs_dirs(const std::string& text) {
  std::vector<std::string> dirs;
  // Any user writes their .condarc: aliases that make a cycle or a billion
  // laughs are refused before the tree is built, as for a contract.
  if (const auto problem = common::find_yaml_alias_problem(text)) {
    return common::Error{"line " + std::to_string(problem->line) + ", column " +
                         std::to_string(problem->column) + ": " + problem->message};
  }
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

std::optional<PythonEnv> describe_prefix(const fs::path& prefix, const process::RunAsPolicy& run_as,
                                         const fs::path& scan_root, const facts::ExecPrefix& exec) {
  PythonEnv env;
  std::error_code error;
  // Inside a container reached through its process's root, links resolve
  // there (realpath would name the host's path).
  env.prefix = !exec.empty() && process::is_process_root(scan_root)
                   ? process::canonical_in(scan_root, prefix, error)
                   : fs::canonical(prefix, error);
  if (error || !fs::exists(env.prefix, error)) {
    return std::nullopt;
  }
  process::FileProblemLog refused;
  std::string recorded_in;  // where python_version was read
  if (process::dir_exists(env.prefix / "conda-meta")) {
    env.kind = EnvKind::conda;
    env.python_version = conda_python_version(env.prefix, recorded_in);
  } else if (process::path_exists(env.prefix / "pyvenv.cfg")) {
    env.kind = EnvKind::venv;
    env.python_version = venv_python_version(env.prefix);
    recorded_in = env.python_version.empty() ? "" : "pyvenv.cfg";
  } else if (process::path_exists(env.prefix / "bin" / "python") ||
             process::path_exists(env.prefix / "bin" / "python3")) {
    env.kind = EnvKind::interpreter;
  } else {
    return std::nullopt;
  }
  if (env.python_version.empty()) {
    env.python_version = layout_python_version(env.prefix);
  }
  env.name =
      env_name(env.prefix, env.kind == EnvKind::conda && process::dir_exists(env.prefix / "envs"));
  env.owner = owner_of(env.prefix);
  // Only an env inside the tree belongs to it: one that a root's
  // environments.txt names on the host, or that a link leads out to, is the
  // host's.
  const std::string root_text = scan_root.string();
  const std::string prefix_text = env.prefix.string();
  const bool inside = !scan_root.empty() && scan_root != "/" &&
                      (prefix_text == root_text || prefix_text.starts_with(root_text + "/"));
  if (inside && !exec.empty()) {
    // A container target's env: its tree is the container's, whatever it
    // holds, and its name says whose it is (every conda image has a base).
    env.system_root = scan_root;
    env.exec = exec;
    env.name = exec.target + ":" + env.name;
  } else if (inside && process::is_system_root(scan_root)) {
    env.system_root = scan_root;
  }
  // An image's tree read on the host: its owners are the image author's word.
  const bool image_tree = env.system_root != "/" && env.exec.empty();  // owners_are_facts
  env.run_as = image_tree ? process::run_as_for_image_env(env.prefix, run_as)
                          : process::run_as_for_prefix(env.prefix, run_as);
  if (!env.exec.empty()) {
    // A container's files are read on the host as nobody's uid (facts/env.hpp).
    env.read_as = process::run_as_for_image_env(env.prefix, run_as);
  }
  // The interpreter first: what bin/python is and where it leads are held to
  // the safety rule too.
  InterpreterLinks links;
  check_interpreter(env, links);
  settle_python_version(env, links, recorded_in);
  env.unsafe = find_unsafe_paths({env.prefix, env.python, activation_inputs(env),
                                  find_site_packages(env), scan_root, image_tree},
                                 env.run_as);
  if (env.python_version.empty() && env.problems.empty()) {
    env.problems.push_back({facts::EnvProblem::Kind::unknown_version,
                            "cannot tell the Python version: no conda-meta python record, no "
                            "pyvenv.cfg version, no lib/pythonX.Y"});
  }
  env.refused_files = refused.take();
  return env;
}

namespace {

bool lies_within(const fs::path& path, const fs::path& root) {
  const std::string text = path.string();
  const std::string top = root.string();
  return text == top || text.starts_with(top == "/" ? top : top + "/");
}

class Discoverer {
 public:
  explicit Discoverer(const DiscoveryOptions& options)
      : m_options(options),
        m_mounts(options.mounts
                     ? options.mounts
                     : std::make_shared<const process::MountTable>(process::MountTable::load())) {}

  // One root: its walk and its conda configuration (homes are units of their own).
  void search_root(const fs::path& root) {
    if (kept_out(root)) {
      return;
    }
    if (!process::dir_exists(root)) {
      problem(root, "root is not a readable directory");
      return;
    }
    enter_root(root);
    walk(root);
    for (const char* condarc : {"etc/conda/.condarc", "etc/conda/condarc"}) {
      read_condarc(root, root / condarc, root / "root");
    }
  }

  std::vector<fs::path> homes_of(const fs::path& root) {
    if (kept_out(root) || !process::dir_exists(root)) {
      return {};
    }
    return home_dirs(root);
  }

  void search_home_of(const fs::path& root, const fs::path& home) {
    enter_root(root);
    search_home(root, home);
  }

  // Envs found from now on belong to `target` (its root canonical).
  void enter_target(const ContainerTarget& target) { m_target = &target; }

  void search_prefixes() {
    m_scan_root = "/";
    for (const auto& given : m_options.prefixes) {
      const fs::path prefix = fs::absolute(given).lexically_normal();
      if (!add(prefix, "configured prefix")) {
        problem(prefix,
                "configured prefix is not a Python environment (no conda-meta/, "
                "pyvenv.cfg or bin/python)");
      }
    }
  }

  CandidateSearch result() {
    CandidateSearch found;
    for (auto& [prefix, candidate] : m_candidates) {
      found.candidates.push_back(std::move(candidate));
    }
    found.problems = std::move(m_problems);
    m_candidates.clear();
    m_problems.clear();
    return found;
  }

 private:
  void enter_root(const fs::path& root) {
    std::error_code error;
    m_scan_root = m_target != nullptr ? process::canonical_in(m_target->root, root, error)
                                      : fs::weakly_canonical(root, error);
  }

  void problem(const fs::path& path, std::string text) {
    m_problems.push_back({path, std::move(text)});
  }

  // Whether `path` lies in a user's FUSE mount, which discovery never
  // enters (each such mount is reported once).
  bool kept_out(const fs::path& path) {
    const auto mount = m_mounts->holding(path);
    if (!mount) {
      return false;
    }
    if (m_reported_mounts.insert(mount->mount_point).second) {
      problem(mount->mount_point,
              process::describe(*mount) +
                  ": not searched for envs (the agent reads no filesystem served by a user's "
                  "process: one that stops answering would stall the reader for good)");
    }
    return true;
  }

  // `path` with its symlinks resolved as realpath(3) would, but without
  // touching anything inside a user's mount: nullopt when it leads into one
  // (reported), or does not resolve.
  // In a container reached through its process's root (/proc/PID/root, a
  // magic link that resolves to another namespace's "/"), links resolve
  // inside it, as its own processes resolve them: an absolute one starts
  // again at its root, and ".." stops there.
  std::optional<fs::path> resolved_outside_user_mounts(const fs::path& path, bool* kept = nullptr) {
    const bool in_process_root = m_target != nullptr && process::is_process_root(m_target->root) &&
                                 lies_within(path, m_target->root);
    const fs::path top = in_process_root ? m_target->root : fs::path("/");
    fs::path done = top;
    std::deque<fs::path> rest;
    // ".." is taken against what is resolved so far, as the kernel takes it:
    // normalising first would skip a symlink the kernel follows.
    const fs::path below =
        in_process_root ? fs::path(path.string().substr(top.string().size())) : path;
    for (const auto& part : below.relative_path()) {
      rest.push_back(part);
    }
    int links = 0;
    while (!rest.empty()) {
      const fs::path part = rest.front();
      rest.pop_front();
      if (part.empty() || part == ".") {
        continue;
      }
      if (part == "..") {
        done = done != top && done.has_relative_path() ? done.parent_path() : done;
        continue;
      }
      const fs::path next = done / part;
      if (kept_out(next)) {
        if (kept != nullptr) {
          *kept = true;
        }
        return std::nullopt;
      }
      struct stat info {};
      if (::lstat(next.c_str(), &info) != 0) {
        return std::nullopt;
      }
      if (!S_ISLNK(info.st_mode)) {
        done = next;
        continue;
      }
      std::error_code error;
      const auto target = fs::read_symlink(next, error);
      if (error || ++links > 40) {
        return std::nullopt;
      }
      std::deque<fs::path> spliced;
      for (const auto& piece : target.relative_path()) {
        spliced.push_back(piece);
      }
      rest.insert(rest.begin(), spliced.begin(), spliced.end());
      if (target.is_absolute()) {
        done = top;
      }
    }
    return done;
  }

  // Whether `path`, resolved outside users' mounts, is a directory (a file):
  // only the resolved path, with no link left in it, is handed to the kernel.
  bool real_dir(const fs::path& path) {
    const auto resolved = resolved_outside_user_mounts(path);
    return resolved && process::dir_exists(*resolved);
  }
  bool real_file(const fs::path& path) {
    const auto resolved = resolved_outside_user_mounts(path);
    return resolved && process::path_exists(*resolved);
  }

  // The tree an env at `resolved` belongs to: the image root (a configured
  // root that is a system's tree, not "/") it lies in, however it was
  // reached; a user's environments.txt or .condarc naming an env inside an
  // image must not make the image's code the host's (its owners are the
  // image author's word). Else the root being searched.
  fs::path tree_of(const fs::path& resolved) {
    if (!m_image_roots) {
      m_image_roots.emplace();
      for (const auto& root : m_options.roots) {
        std::error_code error;
        const auto canonical = fs::weakly_canonical(root, error);
        if (!error && canonical != "/" && process::is_system_root(canonical)) {
          m_image_roots->push_back(canonical);
        }
      }
    }
    fs::path tree = m_scan_root;
    for (const auto& root : *m_image_roots) {
      if (lies_within(resolved, root) && root.string().size() > tree.string().size()) {
        tree = root;
      }
    }
    return tree;
  }

  // Adds the env at `prefix` (once, however it is reached). A conda
  // installation brings its envs/ along.
  bool add(const fs::path& prefix, const std::string& how) {
    bool kept = false;
    const auto resolved = resolved_outside_user_mounts(prefix, &kept);
    if (!resolved) {
      return kept;  // kept out (and reported), or no such directory
    }
    if (m_target != nullptr && !lies_within(*resolved, m_target->root)) {
      // A link in the container that leads out of it: not the container's
      // env, and not one the configuration asked to look for on the host.
      problem(prefix, "leads out of container " + m_target->name + " (to " + resolved->string() +
                          "): not scanned");
      return true;
    }
    const auto mount = m_mounts->within(*resolved);
    // Only markers outside a user's mount are looked at, and an env needs
    // one: a directory holding a mount is no env for that alone.
    EnvKind kind = EnvKind::interpreter;
    if (real_dir(*resolved / "conda-meta")) {
      kind = EnvKind::conda;
    } else if (real_file(*resolved / "pyvenv.cfg")) {
      kind = EnvKind::venv;
    } else if (!real_file(*resolved / "bin" / "python") &&
               !real_file(*resolved / "bin" / "python3")) {
      return false;
    }
    const bool conda_installation = kind == EnvKind::conda && real_dir(*resolved / "envs");
    // Found from the host (a walk of /, a listed path) inside a container's
    // root: the container's all the same, and it runs there.
    std::optional<ContainerTarget> owner;
    if (m_target != nullptr) {
      owner = *m_target;
    } else {
      for (const auto& container : m_options.containers) {
        if (!container.problem.empty() || container.root.empty() ||
            process::is_process_root(container.root)) {
          continue;  // the host's walk never enters /proc
        }
        std::error_code error;
        const auto root = fs::weakly_canonical(container.root, error);
        if (!error && root != "/" && lies_within(*resolved, root)) {
          owner = container;
          owner->root = root;
        }
      }
    }
    auto [it, inserted] =
        m_candidates.emplace(*resolved, EnvCandidate{*resolved,
                                                     {},
                                                     owner ? owner->root : tree_of(*resolved),
                                                     kind,
                                                     mount,
                                                     conda_installation,
                                                     owner_of(*resolved),
                                                     owner ? owner->exec : facts::ExecPrefix{}});
    auto& found_by = it->second.found_by;
    if (std::find(found_by.begin(), found_by.end(), how) == found_by.end()) {
      found_by.push_back(how);
    }
    if (inserted && conda_installation) {
      // Listed as the installation's owner, as a home is read (home_reader):
      // a user's envs/ linked to a directory only root may list must not
      // have that directory's entries named in the report. A container's
      // tree keeps being read as root, as its homes are: its owners' uids
      // may not pass the directories above it.
      std::optional<process::ReadingAs> as_owner;
      const auto& tree = it->second.scan_root;
      if (!owner && m_target == nullptr && (tree == "/" || !process::is_system_root(tree))) {
        const auto reader = home_reader(*resolved);
        if (reader) {
          as_owner.emplace(*reader);
        }
        if (!reader || !as_owner->ok()) {
          problem(*resolved / "envs", "not searched for envs: cannot read it as its owner" +
                                          (reader ? " (" + reader->user + ")" : std::string()));
          return true;
        }
      }
      if (const auto envs = resolved_outside_user_mounts(*resolved / "envs")) {
        add_children(*envs, "conda envs of " + resolved->string());
      }
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
      if (kept_out(child)) {
        continue;
      }
      bool kept = false;
      const auto real_child = resolved_outside_user_mounts(child, &kept);
      if (!real_child) {
        if (!kept) {
          problem(child, "cannot resolve: a dangling link, or a directory it cannot pass");
        }
        continue;
      }
      if (!process::dir_exists(*real_child)) {
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

  // `dir` comes from the walk, which follows no link below its root: only
  // a marker that is itself a link needs resolving step by step.
  bool is_env_prefix(const fs::path& dir) {
    const auto marker = [&](const char* name, bool directory) {
      const fs::path path = dir / name;
      if (kept_out(path)) {
        return false;
      }
      struct stat info {};
      if (::lstat(path.c_str(), &info) != 0) {
        return false;
      }
      if (S_ISLNK(info.st_mode)) {
        return directory ? real_dir(path) : real_file(path);
      }
      return directory ? S_ISDIR(info.st_mode) : true;
    };
    return marker("conda-meta", true) || marker("pyvenv.cfg", false);
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
      if (kept_out(dir)) {
        continue;
      }
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
      process::note_reading(dir);
      std::error_code error;
      fs::directory_iterator it(dir, error);
      if (error) {
        problem(dir, "cannot read directory: " + error.message());
        continue;
      }
      for (fs::directory_iterator end; it != end; it.increment(error)) {
        // A user's mount point is never looked at: lstat(2) of it already
        // asks the mount's server.
        if (kept_out(it->path())) {
          continue;
        }
        process::note_reading(it->path());
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

  std::vector<fs::path> home_dirs(const fs::path& root) {
    std::vector<fs::path> homes;
    if (real_dir(root / "root")) {
      homes.push_back(root / "root");
    }
    std::error_code error;
    const auto listed = resolved_outside_user_mounts(root / "home");
    for (fs::directory_iterator it(listed ? *listed : fs::path(), error), end;
         listed && !error && it != end; it.increment(error)) {
      if (!kept_out(it->path())) {
        homes.push_back(it->path());
      }
    }
    if (root == "/") {
      // A copy of the list, walked under the user database's own lock: the
      // homes are looked at after it (one on a dead NFS server blocks).
      for (const auto& user : process::all_users().value_or(std::vector<process::UserEntry>{})) {
        const fs::path& home = user.home;
        if (std::find(homes.begin(), homes.end(), home) == homes.end() && home != "/" &&
            real_dir(home)) {
          homes.push_back(home);
        }
      }
    }
    return homes;
  }

  // Whom a home of this host is read as (see search_home): its owner; a
  // home owned by root as root, since only root put anything in it, unless
  // its group or others may write to it (a shared home, mode 2775): then as
  // nobody, whatever run_root_envs_as says.
  std::optional<facts::RunAs> home_reader(const fs::path& home) const {
    struct stat info {};
    if (::stat(home.c_str(), &info) != 0) {
      return std::nullopt;
    }
    if (info.st_uid != 0) {
      return process::resolve_run_as(info.st_uid, m_options.run_as);
    }
    if ((info.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
      return process::resolve_run_as(0, process::RunAsPolicy{"root"});
    }
    return process::resolve_run_as(0, process::RunAsPolicy{"nobody"});
  }

  // On this host, a home's files are its owner's to write, so they are read
  // as home_reader says: a link from ~/.conda/environments.txt to
  // /etc/shadow, or an envs_dirs naming a directory only root may list, then
  // fails as it would for that user. An operating system tree other than
  // the host's (a container's rootfs) keeps being read as root: its owners'
  // uids may not pass the directories above it.
  void search_home(const fs::path& root, const fs::path& home) {
    std::optional<process::ReadingAs> as_owner;
    if (m_target == nullptr && (root == "/" || !process::is_system_root(root))) {
      const auto reader = home_reader(home);
      if (!reader) {
        return;
      }
      as_owner.emplace(*reader);
      if (!as_owner->ok()) {
        problem(home, "not searched for envs: cannot read it as " + reader->user +
                          (reader->problem.empty() ? std::string() : " (" + reader->problem + ")"));
        return;
      }
      // Entering it is what every read below needs: a home its reader
      // cannot enter is said, not passed over in silence.
      if (::faccessat(AT_FDCWD, home.c_str(), X_OK, AT_EACCESS) != 0) {
        problem(home, "not searched for envs: " + reader->user + ", whom it is read as, cannot " +
                          "enter it (" + std::strerror(errno) + ")");
        return;
      }
    }
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
      const auto dir = resolved_outside_user_mounts(home / relative);
      if (dir && process::dir_exists(*dir)) {
        add_children(*dir, std::string(how) + " of " + home.string());
      }
    }
  }

  // A path written inside `root`'s filesystem: as is on this host, else
  // under the root (a container's rootfs records its own absolute paths).
  // Resolved: what is handed to the kernel afterwards holds no link.
  // `kept`: it leads into a user's mount (reported).
  std::optional<fs::path> resolve_in_root(const fs::path& root, const fs::path& path,
                                          bool* kept = nullptr) {
    if (m_target != nullptr && path.is_absolute()) {
      // A container's files name its own paths, whatever the host has there.
      return resolved_outside_user_mounts(m_target->root / path.relative_path(), kept);
    }
    if (auto resolved = resolved_outside_user_mounts(path, kept)) {
      return resolved;
    }
    const fs::path inside = root / path.relative_path();
    if (root != "/" && path.is_absolute()) {
      return resolved_outside_user_mounts(inside, kept);
    }
    return std::nullopt;
  }

  // conda's envs_dirs: where `conda create -n` puts envs besides envs/.
  // Read as data (yaml-cpp); conda itself is never run.
  void read_condarc(const fs::path& root, const fs::path& file, const fs::path& home) {
    const auto real = resolved_outside_user_mounts(file);
    if (!real) {
      return;
    }
    const auto read = process::read_file_bounded(*real, process::file_limits::conda_config);
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
    const auto real = resolved_outside_user_mounts(file);
    if (!real) {
      return;
    }
    const auto read = process::read_file_bounded(*real, process::file_limits::env_list);
    const auto& text = read.text;
    if (!text) {
      problem(file, "cannot read conda's list of envs" +
                        (read.refusal.empty() ? std::string() : ": it " + read.refusal));
      return;
    }
    std::istringstream lines(*text);
    std::size_t not_paths = 0;
    for (std::string line; std::getline(lines, line);) {
      const fs::path listed = process::trim(line);
      if (listed.empty()) {
        continue;
      }
      if (!listed.is_absolute()) {
        // conda writes one prefix per line: anything else is not echoed
        // (the report is read by every user of the host).
        ++not_paths;
        continue;
      }
      bool kept = false;
      const auto prefix = resolve_in_root(root, listed, &kept);
      if (kept) {
        continue;  // in a user's mount: reported as such
      }
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
    if (not_paths > 0) {
      problem(file, std::to_string(not_paths) + (not_paths == 1 ? " line is" : " lines are") +
                        " not an absolute path, as conda writes an env's prefix: not shown");
    }
  }

  const DiscoveryOptions& m_options;
  std::shared_ptr<const process::MountTable> m_mounts;
  std::optional<std::vector<fs::path>> m_image_roots;  // tree_of's, made at its first call
  std::set<fs::path> m_reported_mounts;
  fs::path m_scan_root = "/";                 // the root being walked: safety checks stop there
  const ContainerTarget* m_target = nullptr;  // the container being searched, if any
  std::map<fs::path, EnvCandidate> m_candidates;
  std::vector<DiscoveryProblem> m_problems;
};

}  // namespace

std::vector<DiscoveryUnit> discovery_units(const DiscoveryOptions& options) {
  std::vector<DiscoveryUnit> units;
  for (const auto& given : options.roots) {
    // A relative root (`--root ./envs`) is the caller's working directory's:
    // made absolute here, before any unit resolves it component by component.
    const fs::path root = fs::absolute(given).lexically_normal();
    units.push_back(
        {"discovery of " + root.string(), root.string(), [root](const DiscoveryOptions& o) {
           Discoverer discoverer(o);
           discoverer.search_root(root);
           return discoverer.result();
         }});
    units.push_back(
        {"home directories of " + root.string(), root.string(), [root](const DiscoveryOptions& o) {
           Discoverer discoverer(o);
           CandidateSearch found;
           for (const auto& home : discoverer.homes_of(root)) {
             found.more_units.push_back({"discovery of home " + home.string(), home.string(),
                                         [root, home](const DiscoveryOptions& inner) {
                                           Discoverer each(inner);
                                           each.search_home_of(root, home);
                                           return each.result();
                                         }});
           }
           auto problems = discoverer.result();
           found.problems = std::move(problems.problems);
           return found;
         }});
  }
  for (const auto& given : options.containers) {
    if (!given.problem.empty()) {
      continue;
    }
    std::error_code error;
    if (given.root.empty()) {
      continue;
    }
    auto target = std::make_shared<ContainerTarget>(given);
    // A process's root is a magic link: realpath names it "/", the host's.
    target->root =
        process::is_process_root(given.root) ? given.root : fs::weakly_canonical(given.root, error);
    for (const auto& env_root : given.env_roots) {
      const fs::path root = (target->root / env_root.relative_path()).lexically_normal();
      units.push_back({"discovery of container " + target->name + " at " + env_root.string(),
                       root.string(), [root, target](const DiscoveryOptions& o) {
                         Discoverer discoverer(o);
                         discoverer.enter_target(*target);
                         discoverer.search_root(root);
                         return discoverer.result();
                       }});
    }
    units.push_back(
        {"home directories of container " + target->name, target->root.string(),
         [target](const DiscoveryOptions& o) {
           Discoverer discoverer(o);
           discoverer.enter_target(*target);
           CandidateSearch found;
           for (const auto& home : discoverer.homes_of(target->root)) {
             std::error_code ignored;
             if (!lies_within(process::canonical_in(target->root, home, ignored), target->root)) {
               continue;  // a home linking out of the container is not its own
             }
             found.more_units.push_back({"discovery of home " + home.string(), home.string(),
                                         [target, home](const DiscoveryOptions& inner) {
                                           Discoverer each(inner);
                                           each.enter_target(*target);
                                           each.search_home_of(target->root, home);
                                           return each.result();
                                         }});
           }
           auto problems = discoverer.result();
           found.problems = std::move(problems.problems);
           return found;
         }});
  }
  if (!options.prefixes.empty()) {
    units.push_back({"configured prefixes", "", [](const DiscoveryOptions& o) {
                       Discoverer discoverer(o);
                       discoverer.search_prefixes();
                       return discoverer.result();
                     }});
  }
  return units;
}

void merge_candidates(CandidateSearch& into, CandidateSearch&& from) {
  for (auto& problem : from.problems) {
    const bool known =
        std::any_of(into.problems.begin(), into.problems.end(), [&](const DiscoveryProblem& seen) {
          return seen.path == problem.path && seen.problem == problem.problem;
        });
    if (!known) {
      into.problems.push_back(std::move(problem));
    }
  }
  for (auto& candidate : from.candidates) {
    const auto same =
        std::find_if(into.candidates.begin(), into.candidates.end(),
                     [&](const EnvCandidate& seen) { return seen.prefix == candidate.prefix; });
    if (same == into.candidates.end()) {
      into.candidates.push_back(std::move(candidate));
      continue;
    }
    if (same->exec.empty() && !candidate.exec.empty()) {
      // Also reached from the host (a walk of / into a rootfs): it is the
      // container's, and runs there.
      same->exec = candidate.exec;
      same->scan_root = candidate.scan_root;
    }
    for (auto& how : candidate.found_by) {
      if (std::find(same->found_by.begin(), same->found_by.end(), how) == same->found_by.end()) {
        same->found_by.push_back(std::move(how));
      }
    }
  }
  std::sort(into.candidates.begin(), into.candidates.end(),
            [](const EnvCandidate& a, const EnvCandidate& b) { return a.prefix < b.prefix; });
  for (auto& unit : from.more_units) {
    into.more_units.push_back(std::move(unit));
  }
}

CandidateSearch find_env_candidates(const DiscoveryOptions& given) {
  // Every unit reads the one mount table.
  DiscoveryOptions options = given;
  if (!options.mounts) {
    options.mounts = std::make_shared<const process::MountTable>(process::MountTable::load());
  }
  CandidateSearch all;
  std::deque<DiscoveryUnit> units;
  for (auto& unit : discovery_units(options)) {
    units.push_back(std::move(unit));
  }
  while (!units.empty()) {
    auto found = units.front().run(options);
    units.pop_front();
    for (auto& more : found.more_units) {
      units.push_back(std::move(more));
    }
    found.more_units.clear();
    merge_candidates(all, std::move(found));
  }
  return all;
}

std::optional<PythonEnv> describe_candidate(const EnvCandidate& candidate,
                                            const process::RunAsPolicy& run_as) {
  std::optional<PythonEnv> env;
  if (candidate.holds_mount) {
    // Named, and none of it read: kind and name come from markers outside the mount.
    const std::string why =
        process::describe(*candidate.holds_mount) +
        " inside this env: none of the env is read or run (the agent reads no filesystem served "
        "by a user's process: one that stops answering would stall the reader for good)";
    env = unread_env(candidate, why);
    env->run_as = process::run_as_for_prefix(candidate.prefix, run_as);
    env->user_mount = candidate.holds_mount->mount_point;
    env->problems.push_back({facts::EnvProblem::Kind::user_mount, why});
  } else {
    env = describe_prefix(candidate.prefix, run_as, candidate.scan_root, candidate.exec);
  }
  if (env) {
    env->found_by = candidate.found_by;
  }
  return env;
}

PythonEnv unread_env(const EnvCandidate& candidate, const std::string& why) {
  PythonEnv env;
  env.prefix = candidate.prefix;
  env.kind = candidate.likely_kind;
  env.name = env_name(candidate.prefix, candidate.conda_installation);
  env.owner = candidate.owner;
  env.python = candidate.prefix / "bin" / "python";
  env.found_by = candidate.found_by;
  env.imports_checked = true;
  env.imports_unchecked = why;
  return env;
}

void name_envs_apart(std::vector<PythonEnv>& envs) {
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

Discovery discover_envs(const DiscoveryOptions& options) {
  auto search = find_env_candidates(options);
  Discovery result;
  result.problems = std::move(search.problems);
  for (const auto& candidate : search.candidates) {
    if (auto env = describe_candidate(candidate, options.run_as)) {
      result.envs.push_back(std::move(*env));
    } else {
      result.problems.push_back({candidate.prefix, "not a Python environment after all"});
    }
  }
  name_envs_apart(result.envs);
  return result;
}

}  // namespace envcontract::discovery
