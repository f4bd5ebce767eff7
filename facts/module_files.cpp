#include "facts/module_files.hpp"

#include <algorithm>
#include <stdexcept>

namespace envcontract::facts {
namespace {

// "/a/b/c" → {"/a/b", "c"}; "/c" → {"/", "c"}; "c" → {"", "c"}. joined()
// puts back exactly what was split, doubled slashes included.
std::pair<std::string_view, std::string_view> split_last(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return {std::string_view(), path};
  }
  return {slash == 0 ? path.substr(0, 1) : path.substr(0, slash), path.substr(slash + 1)};
}

std::string joined(const std::string& directory, const std::string& file) {
  if (directory.empty()) {
    return file;
  }
  return directory == "/" ? directory + file : directory + "/" + file;
}

}  // namespace

std::uint32_t ModuleFiles::directory_index(std::string_view directory) {
  // A few dozen directories per env, most modules in the last one added:
  // searched from the back.
  for (std::size_t i = m_directories.size(); i-- > 0;) {
    if (m_directories[i] == directory) {
      return static_cast<std::uint32_t>(i);
    }
  }
  m_directories.emplace_back(directory);
  return static_cast<std::uint32_t>(m_directories.size() - 1);
}

void ModuleFiles::add(const std::string& name, const std::string& location,
                      const std::string& real) {
  const auto at = std::lower_bound(
      m_modules.begin(), m_modules.end(), name,
      [](const Module& module, const std::string& key) { return module.name < key; });
  if (at != m_modules.end() && at->name == name) {
    return;
  }
  const auto [directory, file] = split_last(location);
  const auto [real_directory, real_file] = split_last(real);
  Module module{name, std::string(file), real_file == file ? "" : std::string(real_file), 0, 0};
  module.directory = directory_index(directory);
  module.real_directory = directory_index(real_directory);
  m_modules.insert(at, std::move(module));
}

void ModuleFiles::shrink_to_fit() {
  m_modules.shrink_to_fit();
  m_directories.shrink_to_fit();
}

ModuleFile ModuleFiles::file_of(const Module& module) const {
  ModuleFile file;
  file.location = joined(m_directories[module.directory], module.file);
  file.real = joined(m_directories[module.real_directory],
                     module.real_file.empty() ? module.file : module.real_file);
  return file;
}

std::optional<ModuleFile> ModuleFiles::find(std::string_view name) const {
  const auto at = std::lower_bound(
      m_modules.begin(), m_modules.end(), name,
      [](const Module& module, std::string_view key) { return module.name < key; });
  if (at == m_modules.end() || at->name != name) {
    return std::nullopt;
  }
  return file_of(*at);
}

ModuleFile ModuleFiles::at(std::string_view name) const {
  auto found = find(name);
  if (!found) {
    throw std::out_of_range("no module " + std::string(name));
  }
  return std::move(*found);
}

ModuleFile ModuleFiles::file(std::size_t i) const {
  return file_of(m_modules[i]);
}

}  // namespace envcontract::facts
