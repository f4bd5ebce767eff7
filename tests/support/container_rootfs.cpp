#include "tests/support/container_rootfs.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/background_process.hpp"
#include "tests/support/processes.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/system_venv.hpp"

namespace envcontract::testing {
namespace fs = std::filesystem;

namespace {

// `source` at the same path under `rootfs`: a hard link, or a copy when the
// two are on different filesystems.
void link_into(const fs::path& rootfs, const fs::path& source) {
  const fs::path target = rootfs / source.relative_path();
  std::error_code error;
  fs::create_directories(target.parent_path());
  if (fs::exists(fs::symlink_status(target))) {
    return;
  }
  fs::create_hard_link(source, target, error);
  if (error) {
    fs::copy_file(source, target, error);
  }
}

// A path as it is on this machine, or as a link to its real file (merged
// /usr: /lib64/ld-linux-x86-64.so.2 is /usr/lib/x86_64-linux-gnu/...).
void place(const fs::path& rootfs, const fs::path& path) {
  const fs::path real = fs::canonical(path);
  link_into(rootfs, real);
  const fs::path shown = rootfs / path.relative_path();
  if (fs::weakly_canonical(shown) != rootfs / real.relative_path() &&
      !fs::exists(fs::symlink_status(shown))) {
    fs::create_directories(shown.parent_path());
    fs::create_symlink(real, shown);
  }
}

// The libraries `files` load, as ldd names them.
std::set<fs::path> libraries_of(const std::vector<std::string>& files) {
  std::vector<std::string> argv = {"/usr/bin/ldd"};
  argv.insert(argv.end(), files.begin(), files.end());
  const auto run = run_command(argv);
  std::set<fs::path> libraries;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      if (word.starts_with("/") && word.find(".so") != std::string::npos && !word.ends_with(":")) {
        libraries.insert(word);
      }
    }
  }
  return libraries;
}

void link_tree(const fs::path& rootfs, const fs::path& dir) {
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    const auto name = it->path().filename().string();
    if (it->is_directory() && (name == "test" || name == "__pycache__" || name == "idlelib")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && !it->is_symlink()) {
      link_into(rootfs, it->path());
    }
  }
}

}  // namespace

std::string make_container_rootfs(const fs::path& rootfs,
                                  const std::vector<std::string>& library_dirs) {
  if (::geteuid() != 0) {
    return "building a root filesystem with its own ld.so.cache needs root (ldconfig -r)";
  }
  const std::string version = system_python_version();
  const fs::path python = "/usr/bin/python" + version;
  const fs::path stdlib = "/usr/lib/python" + version;
  for (const auto& dir : {"usr/bin", "usr/lib", "usr/lib64", "etc", "proc", "dev", "root"}) {
    fs::create_directories(rootfs / dir);
  }
  fs::create_directories(rootfs / "tmp");
  fs::permissions(rootfs / "tmp", fs::perms::all | fs::perms::sticky_bit);
  for (const auto& [link, to] : {std::pair{"bin", "usr/bin"}, std::pair{"lib", "usr/lib"},
                                 std::pair{"lib64", "usr/lib64"}, std::pair{"sbin", "usr/bin"}}) {
    fs::create_symlink(to, rootfs / link);
  }

  std::vector<std::string> binaries = {python.string(), "/usr/bin/bash"};
  for (const auto& entry : fs::directory_iterator(stdlib / "lib-dynload")) {
    binaries.push_back(entry.path().string());
  }
  for (const auto& library : libraries_of(binaries)) {
    place(rootfs, library);
  }
  link_into(rootfs, python);
  link_into(rootfs, "/usr/bin/bash");
  fs::create_symlink("python" + version, rootfs / "usr/bin/python3");
  link_tree(rootfs, stdlib);

  std::ofstream(rootfs / "etc/os-release") << "ID=debian\nVERSION_ID=\"12\"\n"
                                              "PRETTY_NAME=\"a test's own container\"\n";
  std::ofstream(rootfs / "etc/passwd") << "root:x:0:0:root:/root:/bin/bash\n"
                                          "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n";
  std::ofstream(rootfs / "etc/group") << "root:x:0:\nnogroup:x:65534:\n";
  std::ofstream conf(rootfs / "etc/ld.so.conf");
  conf << "/usr/lib/x86_64-linux-gnu\n";
  for (const auto& dir : library_dirs) {
    conf << dir << "\n";
  }
  conf.close();
  const auto ldconfig = run_command({"/sbin/ldconfig", "-r", rootfs.string()});
  if (ldconfig.exit_code != 0) {
    return "ldconfig -r " + rootfs.string() + " failed: " + ldconfig.err;
  }
  return "";
}

std::string bubblewrap_path() {
  for (const char* path : {"/usr/bin/bwrap", "/usr/local/bin/bwrap"}) {
    if (::access(path, X_OK) == 0) {
      return path;
    }
  }
  return "";
}

namespace {

// bwrap entering `rootfs` read-only at /, with `tmp` (bwrap's words for
// /tmp) and namespaces of its own but the network's.
std::vector<std::string> bubblewrap_words(const fs::path& rootfs,
                                          const std::vector<std::string>& tmp) {
  std::vector<std::string> words = {bubblewrap_path(), "--ro-bind", rootfs.string(), "/"};
  words.insert(words.end(), tmp.begin(), tmp.end());
  words.insert(words.end(), {"--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-ipc",
                             "--unshare-uts", "--die-with-parent"});
  return words;
}

}  // namespace

std::vector<std::string> bubblewrap_prefix(const fs::path& rootfs) {
  return bubblewrap_words(rootfs, {"--bind", (rootfs / "tmp").string(), "/tmp"});
}

RunningContainer::RunningContainer(const fs::path& rootfs, const fs::path& log) {
  const std::string python = "/usr/bin/python" + system_python_version();
  auto words = bubblewrap_words(rootfs, {"--perms", "1777", "--tmpfs", "/tmp"});
  words.insert(words.end(), {python, "-c", "import time\nwhile True: time.sleep(60)"});
  try {
    m_bwrap = spawn_logged(words, log);
  } catch (const std::exception&) {
    return;
  }
  // bwrap forks its namespaces' init, which forks the command: the first
  // descendant that runs the interpreter.
  const fs::path real_python = fs::canonical(python);
  for (int attempt = 0; attempt < 200 && m_inside == 0; ++attempt) {
    std::vector<pid_t> level = {m_bwrap};
    for (int depth = 0; depth < 4 && m_inside == 0; ++depth) {
      std::vector<pid_t> next;
      for (const pid_t pid : level) {
        std::istringstream children(read_proc_file("/proc/" + std::to_string(pid) + "/task/" +
                                                   std::to_string(pid) + "/children"));
        for (pid_t child = 0; children >> child;) {
          std::error_code error;
          // Inside the container the interpreter is the rootfs's hard link.
          const auto exe = fs::read_symlink("/proc/" + std::to_string(child) + "/exe", error);
          if (!error && exe.filename() == real_python.filename()) {
            m_inside = child;
          }
          next.push_back(child);
        }
      }
      level = std::move(next);
    }
    if (m_inside == 0) {
      ::usleep(10'000);
    }
  }
}

RunningContainer::~RunningContainer() {
  if (m_bwrap > 0) {
    ::kill(-m_bwrap, SIGKILL);
    int status = 0;
    ::waitpid(m_bwrap, &status, 0);
  }
}

}  // namespace envcontract::testing
