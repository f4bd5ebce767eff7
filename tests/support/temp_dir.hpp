#pragma once

#include <filesystem>
#include <string>

namespace envcontract::testing {

// A fresh directory under the system temp dir, removed with everything in it
// when the object goes out of scope.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return m_path; }

  // Writes `text` to `relative` (creating parent dirs) and returns its full path.
  std::filesystem::path write(const std::string& relative, const std::string& text) const;

 private:
  std::filesystem::path m_path;
};

}  // namespace envcontract::testing
