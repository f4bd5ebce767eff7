#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Where `import NAME` finds each top-level module of an env. An env has
// hundreds (the standard library's among them) and its facts are kept
// between scans, so each module is its name, its file's name and the index
// of its directory among the env's few dozen, not a path of its own: a
// std::filesystem::path per module, twice, was most of the kept facts.
namespace envcontract::facts {

struct ModuleFile {
  std::string location;  // as found along the path
  std::string real;      // with symlinks resolved: where the interpreter reports it
};

class ModuleFiles {
 public:
  // Records `name`, found at `location`, `real` once symlinks are resolved
  // (both absolute). A name already recorded keeps its first place.
  void add(const std::string& name, const std::string& location, const std::string& real);
  // Done adding: gives back the room kept for more (up to half of it).
  void shrink_to_fit();

  std::optional<ModuleFile> find(std::string_view name) const;
  std::size_t count(std::string_view name) const { return find(name) ? 1 : 0; }
  ModuleFile at(std::string_view name) const;  // throws std::out_of_range

  // In name order.
  std::size_t size() const { return m_modules.size(); }
  const std::string& name(std::size_t i) const { return m_modules[i].name; }
  ModuleFile file(std::size_t i) const;
  // The directory holding the module's real file: what a change to it
  // shows in.
  const std::string& real_directory(std::size_t i) const {
    return m_directories[m_modules[i].real_directory];
  }

 private:
  struct Module {
    std::string name;
    std::string file;       // the last component of its location
    std::string real_file;  // ... and of its real path, "" when the same
    std::uint32_t directory = 0;
    std::uint32_t real_directory = 0;
  };
  std::uint32_t directory_index(std::string_view directory);
  ModuleFile file_of(const Module& module) const;

  std::vector<Module> m_modules;  // sorted by name
  std::vector<std::string> m_directories;
};

}  // namespace envcontract::facts
