// libFuzzer target: any bytes as the small text files of envs (version.py,
// pyvenv.cfg, METADATA) and as versions, through the hand-written scanners
// that replaced backtracking regular expressions.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/pep440.hpp"
#include "process/small_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envcontract;
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)process::parse_python_assignments(text);
  (void)process::parse_key_values(text);
  (void)process::parse_headers(text);
  (void)process::is_python_identifier(text);
  const std::string release = process::first_release_number(text);
  if (!release.empty() && text.find(release) == std::string::npos) {
    __builtin_trap();
  }
  const auto half = text.size() / 2;
  (void)common::compare_versions(text.substr(0, half), text.substr(half));
  (void)common::is_version(text);
  return 0;
}
