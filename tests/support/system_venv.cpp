#include "tests/support/system_venv.hpp"

#include <fstream>
#include <stdexcept>

#include "tests/support/run_command.hpp"

namespace envcontract::testing {
namespace fs = std::filesystem;

std::string system_python_version() {
  static const std::string version = [] {
    const auto run = run_command(
        {"/usr/bin/python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"});
    const std::string text = run.out.substr(0, run.out.find('\n'));
    if (text.empty()) {
      throw std::runtime_error("cannot run /usr/bin/python3: " + run.err);
    }
    return text;
  }();
  return version;
}

fs::path make_system_venv(const fs::path& prefix) {
  fs::create_directories(system_venv_site(prefix));
  fs::create_directories(prefix / "bin");
  std::ofstream(prefix / "pyvenv.cfg") << "home = /usr/bin\ninclude-system-site-packages = "
                                          "false\nversion = "
                                       << system_python_version() << ".0\n";
  fs::create_symlink("/usr/bin/python3", prefix / "bin" / "python");
  return prefix;
}

fs::path system_venv_site(const fs::path& prefix) {
  return prefix / "lib" / ("python" + system_python_version()) / "site-packages";
}

void open_to_all(const fs::path& dir) {
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
}

}  // namespace envcontract::testing
