#pragma once

#include <filesystem>
#include <string>

namespace envcontract::common {

// A path as messages show it: absolute and normalised, so that a line in the
// journal of a service (whose working directory nobody knows) or in a CI log
// names one file. Falls back to the path as given when the working directory
// cannot be read.
inline std::string shown_path(const std::filesystem::path& path) {
  std::error_code error;
  const auto absolute = std::filesystem::absolute(path, error);
  return error ? path.string() : absolute.lexically_normal().string();
}

}  // namespace envcontract::common
