#include "probes/search_path.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "common/python_names.hpp"
#include "probes/static_facts.hpp"
#include "process/small_files.hpp"
#include "process/system_root.hpp"

namespace envcontract::probes {
namespace fs = std::filesystem;

namespace {

// site.py reads at most this many .pth files per site dir here, and the
// path gets at most this many entries: a site dir with 100,000 .pth files
// is hostile, not a layout.
constexpr std::size_t k_max_pth_files = 256;
constexpr std::size_t k_max_entries = 1024;
constexpr std::size_t k_max_notes = 32;
// Editable installs' import hooks: Python imports each finder module once
// however many .pth lines import it, so each is read once here; and the
// modules they map are bounded like the path (a real finder maps a few).
constexpr std::size_t k_max_editable_finders = 256;
constexpr std::size_t k_max_editable_modules = 4096;

std::string variable(const facts::Environment& environment, const char* name) {
  const auto it = environment.find(name);
  return it == environment.end() ? "" : it->second;
}

// Lines of .pth files that run code site.py would run, but that are known
// to leave the search path of packages alone.
bool harmless_import_line(const std::string& line) {
  return line.find("SETUPTOOLS_USE_DISTUTILS") != std::string::npos ||  // distutils-precedence.pth
         line.starts_with("import _virtualenv");                        // virtualenv's patch
}

// "__editable___proj_0_1_finder" from
// "import __editable___proj_0_1_finder; __editable___proj_0_1_finder.install()".
std::string editable_finder_module(const std::string& line) {
  const std::string prefix = "import __editable___";
  if (!line.starts_with(prefix)) {
    return "";
  }
  const auto end = line.find_first_of("; \t\r\n", 7);
  const std::string module = line.substr(7, end == std::string::npos ? end : end - 7);
  return module.ends_with("_finder") && process::is_python_identifier(module) ? module : "";
}

class SearchPathBuilder {
 public:
  SearchPathBuilder(const PythonEnv& env, const facts::Environment& environment)
      : m_env(env),
        m_environment(environment),
        m_version(common::python_major_minor(env.python_version)),
        m_free_threaded(free_threaded(env, m_version)) {}

  SearchPath build() {
    add_pythonpath();
    if (m_version.empty()) {
      // Without the version, the site dirs are whatever lib/python*/ holds.
      note("the Python version is unknown: site dirs are guessed from lib/python*/site-packages");
      for (const auto& site : discovery::find_site_packages(m_env)) {
        add_site_dir(site, "site-packages");
      }
      m_path.base_prefix = m_env.prefix;
      return std::move(m_path);
    }
    bool system_site = true;
    if (m_env.kind == EnvKind::venv) {
      system_site = read_pyvenv_cfg();
    } else {
      m_path.base_prefix = m_env.prefix;
    }
    m_path.debian_layout = !m_path.base_prefix.empty() && uses_dist_packages(m_path.base_prefix);
    m_path.free_threaded = m_free_threaded;
    m_platlib64 = !m_path.base_prefix.empty() &&
                  stdlib_of(m_path.base_prefix).parent_path().filename() == "lib64";
    if (!m_path.base_prefix.empty()) {
      std::error_code error;
      const auto stdlib =
          process::canonical_in(m_env.system_root, stdlib_of(m_path.base_prefix), error);
      m_path.stdlib = error ? fs::path() : stdlib;
    }
    const bool is_venv = m_env.kind == EnvKind::venv;
    // site.main(): venv() adds the venv's own site dirs first, then the user
    // site, then the site dirs of PREFIXES (the base too when the venv
    // includes system site packages).
    if (is_venv) {
      add_prefix_site_dirs(m_env.prefix, true, "site-packages");
    }
    m_path.user_site =
        (!is_venv || system_site) && variable(m_environment, "PYTHONNOUSERSITE").empty();
    if (m_path.user_site) {
      add_user_site();
    }
    if (!is_venv) {
      add_prefix_site_dirs(m_env.prefix, false, "site-packages");
    } else if (system_site && !m_path.base_prefix.empty()) {
      add_prefix_site_dirs(m_path.base_prefix, true,
                           "system site-packages of " + m_path.base_prefix.string() +
                               " (include-system-site-packages = true)");
    }
    return std::move(m_path);
  }

 private:
  void note(std::string text) {
    if (m_path.notes.size() < k_max_notes) {
      m_path.notes.push_back(std::move(text));
    }
  }

  // A bound reached: noted, and the path is known to be incomplete.
  void incomplete(std::string text) {
    if (m_path.incomplete.empty()) {
      m_path.incomplete = text;
    }
    note(std::move(text));
  }

  void unlisted(const fs::path& path) {
    if (m_path.unlisted.size() < k_max_entries) {
      m_path.unlisted.push_back(path.lexically_normal());
    } else {
      incomplete("more than " + std::to_string(k_max_entries) +
                 " places outside the path entries: the rest are not read");
    }
  }

  // Where `path` is read: in a running container, where its links lead
  // inside it (by path, a site dir linked to "/opt/..." would be the host's
  // directory of that name, or none); elsewhere, as it is.
  fs::path where_read(const fs::path& path) const {
    fs::path where = path.lexically_normal();
    if (process::is_process_root(m_env.system_root)) {
      std::error_code error;
      if (auto resolved = process::canonical_in(m_env.system_root, where, error); !error) {
        where = std::move(resolved);
      }
    }
    return where;
  }

  // Adds `path` once, as site.py's known_paths does (by absolute path).
  bool add_entry(const fs::path& path, std::string origin, bool site_dir) {
    const std::string key = path.lexically_normal().string();
    if (m_known.contains(key)) {
      return false;
    }
    if (m_path.entries.size() >= k_max_entries) {
      incomplete("more than " + std::to_string(k_max_entries) +
                 " path entries: the rest are not read");
      return false;
    }
    m_known.insert(key);
    m_path.entries.push_back({where_read(path), std::move(origin), site_dir});
    return true;
  }

  void add_pythonpath() {
    if (const std::string home = variable(m_environment, "PYTHONHOME"); !home.empty()) {
      note("PYTHONHOME is set by activation (" + home +
           "): the interpreter's own directories move, which reading files does not follow");
      std::stringstream parts(home);  // "prefix" or "prefix:exec_prefix"
      for (std::string part; std::getline(parts, part, ':');) {
        if (fs::path(part).is_absolute()) {
          const fs::path home_dir = in_tree(part);
          unlisted(home_dir);
          if (!m_version.empty()) {
            unlisted(home_dir / "lib" / ("python" + m_version));
            unlisted(home_dir / "lib" / ("python" + m_version) / "lib-dynload");
          }
        }
      }
    }
    std::stringstream parts(variable(m_environment, "PYTHONPATH"));
    for (std::string part; std::getline(parts, part, ':');) {
      if (part.empty()) {
        continue;  // the working directory, which is the probe's own
      }
      if (!fs::path(part).is_absolute()) {
        note("PYTHONPATH entry '" + part + "' is relative to wherever Python starts: not followed");
        unlisted(in_tree(m_env.prefix / part));  // where the probes start
        continue;
      }
      const fs::path entry = in_tree(part);
      if (process::dir_exists(entry)) {
        add_entry(entry, "PYTHONPATH", false);
      } else {
        unlisted(entry);  // a .zip, or a directory someone may yet create
      }
    }
  }

  // include-system-site-packages (site.py's default is true) and the base
  // installation, found as getpath does: the first directory at or above
  // `home` holding lib/pythonX.Y/os.py.
  bool read_pyvenv_cfg() {
    const auto text =
        process::read_env_file(m_env.prefix / "pyvenv.cfg", process::file_limits::small_text);
    const auto values = process::parse_key_values(text.value_or(""));
    bool system_site = true;
    if (const auto it = values.find("include-system-site-packages"); it != values.end()) {
      std::string value = it->second;
      std::transform(value.begin(), value.end(), value.begin(), ::tolower);
      system_site = value == "true";
    }
    const auto home = values.find("home");
    if (home == values.end() || !fs::path(home->second).is_absolute()) {
      note("pyvenv.cfg names no absolute home: the base interpreter is unknown");
      return system_site;
    }
    const fs::path top = m_env.system_root.empty() ? fs::path("/") : m_env.system_root;
    for (fs::path dir = in_tree(home->second); !dir.empty(); dir = dir.parent_path()) {
      if (process::path_exists(stdlib_of(dir) / "os.py")) {
        m_path.base_prefix = dir;
        break;
      }
      if (dir == top || dir == dir.root_path()) {
        break;  // not above the env's system root
      }
    }
    if (m_path.base_prefix.empty()) {
      note("no lib/python" + m_version + "/os.py (nor lib64/) at or above pyvenv.cfg's home " +
           home->second + ": the base interpreter is gone or moved");
    }
    return system_site;
  }

  // "python3.13t" for a free-threaded interpreter, else "python3.13": what
  // the interpreter is, not which directories happen to exist.
  std::string version_dir() const { return "python" + m_version + (m_free_threaded ? "t" : ""); }

  // Whether the env's interpreter is a free-threaded build: its executable
  // is named pythonX.Yt (bin/python links to it).
  static bool free_threaded(const PythonEnv& env, const std::string& version) {
    std::error_code error;
    const auto executable = process::canonical_in(env.system_root, env.python, error);
    return !error && executable.filename() == "python" + version + "t";
  }

  // Whether prefix/lib64 is a directory of its own (not a venv's link to lib).
  static bool distinct_lib64(const fs::path& prefix) {
    std::error_code error;
    return process::dir_exists(prefix / "lib64") &&
           !fs::equivalent(prefix / "lib64", prefix / "lib", error);
  }

  // The standard library of an installation at `prefix`: lib64/pythonX.Y
  // where the platform keeps it there, else lib/pythonX.Y.
  fs::path stdlib_of(const fs::path& prefix) const {
    const std::string dir = version_dir();
    if (distinct_lib64(prefix) && process::path_exists(prefix / "lib64" / dir / "os.py")) {
      return prefix / "lib64" / dir;
    }
    return prefix / "lib" / dir;
  }

  // Debian patches site.py to use dist-packages; its text says so.
  bool uses_dist_packages(const fs::path& prefix) {
    const auto source =
        process::read_env_file(stdlib_of(prefix) / "site.py", process::file_limits::python_source);
    return source && source->find("dist-packages") != std::string::npos;
  }

  // getsitepackages() for one prefix. `is_venv` is whether the interpreter
  // runs as a venv (Debian's site.py then also lists site-packages).
  void add_prefix_site_dirs(const fs::path& prefix, bool is_venv, const std::string& origin) {
    const fs::path lib = prefix / "lib" / version_dir();
    if (!m_path.debian_layout) {
      // platlibdir (lib64 on Fedora, RHEL, openSUSE: the base's, found with
      // its standard library, for every prefix) first, then lib.
      if (m_platlib64) {
        add_site_dir(prefix / "lib64" / version_dir() / "site-packages", origin);
      }
      add_site_dir(lib / "site-packages", origin);
      return;
    }
    const std::string debian = origin == "site-packages" ? "dist-packages (Debian)" : origin;
    if (is_venv) {
      add_site_dir(lib / "site-packages", origin);
    }
    add_site_dir(prefix / "local/lib" / ("python" + m_version) / "dist-packages", debian);
    add_site_dir(prefix / "lib/python3/dist-packages", debian);
    add_site_dir(lib / "dist-packages", debian);
  }

  void add_user_site() {
    std::string base = variable(m_environment, "PYTHONUSERBASE");
    if (base.empty()) {
      const std::string home = variable(m_environment, "HOME");
      if (home.empty()) {
        return;
      }
      base = home + "/.local";
    }
    add_site_dir(in_tree(base) / "lib" / version_dir() / "site-packages",
                 "user site of " + m_env.run_as.who());
  }

  // addsitedir(): the directory, then what each of its .pth files adds.
  void add_site_dir(const fs::path& named, const std::string& origin) {
    const fs::path site = where_read(named);
    if (!process::dir_exists(site)) {
      return;
    }
    if (!add_entry(named, origin, true)) {
      // Already on the path (PYTHONPATH, a .pth line): site.py still reads
      // its .pth files, and it is still a site dir.
      const std::string key = site.string();
      bool known = false;
      for (auto& entry : m_path.entries) {
        if (entry.path.string() == key) {
          known = !entry.site_dir;
          entry.site_dir = true;
        }
      }
      if (!known) {
        return;  // the same site dir twice (or the path is full): read once
      }
    }
    std::vector<std::string> pth_files;
    std::error_code error;
    for (const std::string& name : process::list_names(site, error)) {
      if (name.ends_with(".pth") && !name.starts_with(".")) {
        pth_files.push_back(name);
      }
    }
    std::sort(pth_files.begin(), pth_files.end());
    if (pth_files.size() > k_max_pth_files) {
      incomplete(site.string() + " holds " + std::to_string(pth_files.size()) +
                 " .pth files: only the first " + std::to_string(k_max_pth_files) + " are read");
      pth_files.resize(k_max_pth_files);
    }
    for (const auto& name : pth_files) {
      read_pth_file(site, name);
    }
  }

  void read_pth_file(const fs::path& site, const std::string& name) {
    const auto text = process::read_env_file(site / name, process::file_limits::small_text);
    if (!text) {
      return;
    }
    std::istringstream lines(*text);
    std::size_t number = 0;
    for (std::string line; std::getline(lines, line);) {
      ++number;
      if (m_path.entries.size() >= k_max_entries) {
        if (m_path.incomplete.empty()) {
          incomplete("more than " + std::to_string(k_max_entries) +
                     " path entries: the rest are not read");
        }
        return;  // no more lines are looked at
      }
      if (line.starts_with("#") || process::trim(line).empty()) {
        continue;
      }
      if (line.starts_with("import ") || line.starts_with("import\t")) {
        read_import_line(site, name, number, line);
        continue;
      }
      line.erase(line.find_last_not_of(" \t\r\n\f\v") + 1);
      const fs::path dir = in_tree(fs::path(line).is_absolute() ? fs::path(line) : site / line);
      if (process::path_exists(dir)) {
        add_entry(dir, name + " in " + site.string(), false);
      } else {
        unlisted(dir);  // site.py adds it once it exists
      }
    }
  }

  void read_import_line(const fs::path& site, const std::string& name, std::size_t number,
                        const std::string& line) {
    if (harmless_import_line(line)) {
      return;
    }
    const std::string finder = editable_finder_module(line);
    if (finder.empty()) {
      note(name + " in " + site.string() + " runs code at start-up (line " +
           std::to_string(number) + "); what it does to sys.path is not read from files");
      return;
    }
    // A module imported again is not run again: sys.modules has it.
    if (m_finders_read.contains(finder)) {
      return;
    }
    if (m_finders_read.size() >= k_max_editable_finders) {
      incomplete("more than " + std::to_string(k_max_editable_finders) +
                 " editable installs' import hooks: the rest are not read");
      return;
    }
    m_finders_read.insert(finder);
    const fs::path file = site / (finder + ".py");
    const std::string source =
        process::read_env_file(file, process::file_limits::editable_finder).value_or("");
    const auto mapping = parse_string_dict(source, "MAPPING");
    // Namespace packages it serves from directories of their own: code loads
    // from there too.
    for (const auto& [package, paths] : parse_string_lists_dict(source, "NAMESPACES")) {
      for (const auto& path : paths) {
        if (fs::path(path).is_absolute()) {
          unlisted(in_tree(path));
        }
      }
    }
    if (mapping.empty()) {
      note(file.string() + " (an editable install's import hook) maps no modules that can be read");
    }
    for (const auto& [module, path] : mapping) {
      if (m_path.editable.size() >= k_max_editable_modules) {
        incomplete("more than " + std::to_string(k_max_editable_modules) +
                   " modules of editable installs: the rest are not read");
        return;
      }
      if (process::is_python_identifier(module) && fs::path(path).is_absolute() &&
          process::path_exists(in_tree(path))) {
        m_path.editable.push_back({module, in_tree(path), file});
      }
    }
  }

  // An absolute path read from the env's files or environment, as the agent
  // names it: inside a container's rootfs, the rootfs' own (process/system_root.hpp).
  fs::path in_tree(const fs::path& path) const {
    return process::under_root(m_env.system_root, path);
  }

  const PythonEnv& m_env;
  const facts::Environment& m_environment;
  const std::string m_version;
  const bool m_free_threaded;
  bool m_platlib64 = false;  // the base keeps its standard library in lib64 (platlibdir)
  SearchPath m_path;
  std::set<std::string> m_known;
  std::set<std::string> m_finders_read;  // editable finder modules, by module name
};

// A Python string literal starting at `at` ('...' or "..."); advances `at`
// past it. Only the escapes paths need are decoded.
std::optional<std::string> read_string_literal(const std::string& text, std::size_t& at) {
  if (at >= text.size() || (text[at] != '\'' && text[at] != '"')) {
    return std::nullopt;
  }
  const char quote = text[at++];
  std::string value;
  while (at < text.size() && text[at] != quote) {
    if (text[at] == '\n') {
      return std::nullopt;
    }
    if (text[at] == '\\' && at + 1 < text.size()) {
      ++at;
    }
    value += text[at++];
  }
  if (at >= text.size()) {
    return std::nullopt;
  }
  ++at;
  return value;
}

void skip_blanks(const std::string& text, std::size_t& at) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' ||
                              text[at] == '\r' || text[at] == ',')) {
    ++at;
  }
}

}  // namespace

SearchPath compute_search_path(const PythonEnv& env, const facts::Environment& environment) {
  return SearchPathBuilder(env, environment).build();
}

namespace {

// The dict literal assigned to `name` in Python source, each value a string
// literal or, with `lists`, a list of them; empty when anything else is found.
std::map<std::string, std::vector<std::string>> parse_dict_literal(const std::string& source,
                                                                   const std::string& name,
                                                                   bool lists) {
  if (name.empty()) {
    return {};
  }
  std::size_t at = 0;
  // The assignment starts a line: NAME = {...} or NAME: dict[str, str] = {...}.
  for (;; at += name.size()) {
    at = source.find(name, at);
    if (at == std::string::npos) {
      return {};
    }
    const bool line_start = at == 0 || source[at - 1] == '\n';
    const char next = at + name.size() < source.size() ? source[at + name.size()] : '\0';
    if (line_start && (next == ' ' || next == '=' || next == ':')) {
      break;
    }
  }
  const auto line_end = source.find('\n', at);
  const auto equals = source.find('=', at);
  const auto open = source.find('{', at);
  if (equals == std::string::npos || open == std::string::npos || equals > line_end ||
      open > line_end || open < equals) {
    return {};
  }
  std::map<std::string, std::vector<std::string>> values;
  at = open + 1;
  while (true) {
    skip_blanks(source, at);
    if (at < source.size() && source[at] == '}') {
      return values;
    }
    const auto key = read_string_literal(source, at);
    skip_blanks(source, at);
    if (!key || at >= source.size() || source[at] != ':') {
      return {};
    }
    ++at;
    skip_blanks(source, at);
    std::vector<std::string> items;
    if (lists && at < source.size() && source[at] == '[') {
      for (++at;;) {
        skip_blanks(source, at);
        if (at < source.size() && source[at] == ']') {
          ++at;
          break;
        }
        const auto item = read_string_literal(source, at);
        if (!item) {
          return {};
        }
        items.push_back(*item);
      }
    } else {
      const auto value = read_string_literal(source, at);
      if (!value) {
        return {};
      }
      items.push_back(*value);
    }
    values.emplace(*key, std::move(items));
  }
}

}  // namespace

std::map<std::string, std::string> parse_string_dict(const std::string& source,
                                                     const std::string& name) {
  std::map<std::string, std::string> values;
  for (auto& [key, items] : parse_dict_literal(source, name, false)) {
    values.emplace(key, std::move(items.front()));  // one string each without lists
  }
  return values;
}

std::map<std::string, std::vector<std::string>> parse_string_lists_dict(const std::string& source,
                                                                        const std::string& name) {
  return parse_dict_literal(source, name, true);
}

}  // namespace envcontract::probes
