#include "facts/module_files.hpp"

#include <algorithm>
#include <stdexcept>

namespace envcontract::facts {
namespace {

// "/a/b/c" → {"/a/b/", "c"}; "//c" → {"//", "c"}; "/" → {"/", ""};
// "c" → {"", "c"}. The two parts put together are the path as it was.
std::pair<std::string_view, std::string_view> split_last(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return {std::string_view(), path};
  }
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

}  // namespace

std::uint32_t ModuleFiles::directory_index(std::string_view directory) {
  if (m_directory_index.size() != m_directories.size()) {  // adding again after finish()
    for (std::size_t i = 0; i < m_directories.size(); ++i) {
      m_directory_index.emplace(m_directories[i], static_cast<std::uint32_t>(i));
    }
  }
  const auto [at, inserted] = m_directory_index.try_emplace(
      std::string(directory), static_cast<std::uint32_t>(m_directories.size()));
  if (inserted) {
    m_directories.emplace_back(directory);
  }
  return at->second;
}

void ModuleFiles::add(const std::string& name, const std::string& location,
                      const std::string& real) {
  // Names come in order from the env's reader. Any other order is sorted
  // once, in finish(): inserting each in its place would move all the
  // modules after it, quadratic in a hostile env's tens of thousands.
  if (m_in_order && !m_modules.empty() && !(m_modules.back().name < name)) {
    if (m_modules.back().name == name) {
      return;
    }
    m_in_order = false;
  }
  const auto [directory, file] = split_last(location);
  const auto [real_directory, real_file] = split_last(real);
  Module module;
  module.name = name;
  module.file = std::string(file);
  module.real_is_file = real_file == file;
  if (!module.real_is_file) {
    module.real_file = std::string(real_file);
  }
  module.directory = directory_index(directory);
  module.real_directory = directory_index(real_directory);
  m_modules.push_back(std::move(module));
}

void ModuleFiles::finish() {
  if (!m_in_order) {
    const auto by_name = [](const Module& a, const Module& b) { return a.name < b.name; };
    std::stable_sort(m_modules.begin(), m_modules.end(), by_name);
    const auto same_name = [](const Module& a, const Module& b) { return a.name == b.name; };
    m_modules.erase(std::unique(m_modules.begin(), m_modules.end(), same_name), m_modules.end());
    m_in_order = true;
  }
  m_modules.shrink_to_fit();
  m_directories.shrink_to_fit();
  m_directory_index = {};
}

ModuleFile ModuleFiles::file_of(const Module& module) const {
  ModuleFile file;
  file.location = m_directories[module.directory] + module.file;
  file.real =
      m_directories[module.real_directory] + (module.real_is_file ? module.file : module.real_file);
  return file;
}

std::string ModuleFiles::real_directory(std::size_t i) const {
  check_in_order();
  const auto& directory = m_directories[m_modules[i].real_directory];
  // Without its last slash, unless that slash is all there is ("/").
  return directory.size() > 1 ? directory.substr(0, directory.size() - 1) : directory;
}

void ModuleFiles::check_in_order() const {
  if (!m_in_order) {
    throw std::logic_error("ModuleFiles read before finish(): its modules are not in order");
  }
}

std::optional<ModuleFile> ModuleFiles::find(std::string_view name) const {
  check_in_order();
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

const std::string& ModuleFiles::name(std::size_t i) const {
  check_in_order();
  return m_modules[i].name;
}

ModuleFile ModuleFiles::file(std::size_t i) const {
  check_in_order();
  return file_of(m_modules[i]);
}

}  // namespace envcontract::facts
