#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// Where `import NAME` finds each top-level module of an env. An env has
// hundreds (the standard library's among them), its facts are kept between
// scans and a host's are all held while it is scanned, so each module is its
// name and its file's name, both in one buffer of text of the env's, and the
// index of its directory among the env's few dozen, not a path of its own: a
// std::filesystem::path per module, twice, was most of the kept facts, and
// three strings per module the largest part of what a 1,000-env scan held
// (docs/performance.md).
namespace envcontract::facts {

struct ModuleFile {
  std::string location;  // as found along the path
  std::string real;      // with symlinks resolved: where the interpreter reports it
};

class ModuleFiles {
 public:
  // Records `name`, found at `location`, `real` once symlinks are resolved.
  // Paths are kept as text, exactly as given (absolute, relative, doubled
  // slashes alike). Of two modules of one name, the first added is kept.
  void add(const std::string& name, const std::string& location, const std::string& real);
  // Done adding: puts the modules in name order and drops what adding needs.
  // Reading before finish() throws std::logic_error, unless every name was
  // added in order; adding again afterwards works.
  void finish();

  std::optional<ModuleFile> find(std::string_view name) const;
  bool contains(std::string_view name) const;
  std::size_t count(std::string_view name) const { return contains(name) ? 1 : 0; }
  ModuleFile at(std::string_view name) const;  // throws std::out_of_range

  // In name order.
  std::size_t size() const { return m_modules.size(); }
  std::string_view name(std::size_t i) const;  // valid while this lives unchanged
  std::vector<std::string> names() const;
  ModuleFile file(std::size_t i) const;
  // The directory holding the module's real file: what a change to it
  // shows in. "" for a bare relative name.
  std::string real_directory(std::size_t i) const;

 private:
  // A piece of m_text.
  struct Text {
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
  };
  struct Module {
    Text name;
    Text file;       // what follows the last slash of its location
    Text real_file;  // ... and of its real path (the same as `file` when they agree)
    std::uint32_t directory = 0;
    std::uint32_t real_directory = 0;
  };
  std::uint32_t directory_index(std::string_view directory);
  Text keep(std::string_view text);
  std::string_view view(Text text) const { return {m_text.data() + text.offset, text.size}; }
  ModuleFile file_of(const Module& module) const;
  // The module named `name`, or null.
  const Module* lookup(std::string_view name) const;

  void check_in_order() const;

  std::vector<Module> m_modules;  // in name order once finished
  std::string m_text;             // every module's name and file names
  bool m_in_order = true;
  // Up to and with the last slash, so that a path is its directory followed
  // by its file, whatever slashes it had.
  std::vector<std::string> m_directories;
  // Only while adding: a host can hold tens of thousands of directories
  // (modules each linked from its own), too many to search one by one.
  std::unordered_map<std::string, std::uint32_t> m_directory_index;
};

}  // namespace envcontract::facts
