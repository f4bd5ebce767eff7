#include "tests/support/temp_dir.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace envcontract::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "envcontract-test-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp");
  }
  m_path = pattern;
  // Reachable by the unprivileged users that probes run as (the agent never
  // runs env code as root); nothing in it is writable by them.
  std::filesystem::permissions(
      m_path, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                  std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                  std::filesystem::perms::others_exec);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(m_path, ignored);
}

std::filesystem::path TempDir::write(const std::string& relative, const std::string& text) const {
  const auto path = m_path / relative;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    throw std::runtime_error("cannot write " + path.string());
  }
  return path;
}

}  // namespace envcontract::testing
