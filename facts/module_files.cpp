#include "facts/module_files.hpp"

#include <algorithm>
#include <limits>
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

ModuleFiles::Text ModuleFiles::keep(std::string_view text) {
  // An env's text of names stays far below 4 GiB (a name is at most a few
  // hundred bytes, a host's envs a few thousand names each); past it, the
  // facts could not be told apart, so the agent says so rather than wrap.
  if (m_text.size() + text.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("an env's module names add up to more than 4 GiB");
  }
  const Text kept{static_cast<std::uint32_t>(m_text.size()),
                  static_cast<std::uint32_t>(text.size())};
  m_text.append(text);
  return kept;
}

void ModuleFiles::add(const std::string& name, const std::string& location,
                      const std::string& real) {
  // Names come in order from the env's reader. Any other order is sorted
  // once, in finish(): inserting each in its place would move all the
  // modules after it, quadratic in a hostile env's tens of thousands.
  if (m_in_order && !m_modules.empty() && !(view(m_modules.back().name) < name)) {
    if (view(m_modules.back().name) == name) {
      return;
    }
    m_in_order = false;
  }
  const auto [directory, file] = split_last(location);
  const auto [real_directory, real_file] = split_last(real);
  Module module;
  module.name = keep(name);
  module.file = keep(file);
  module.real_file = real_file == file ? module.file : keep(real_file);
  module.directory = directory_index(directory);
  module.real_directory = directory_index(real_directory);
  m_modules.push_back(std::move(module));
}

void ModuleFiles::finish() {
  if (!m_in_order) {
    const auto by_name = [this](const Module& a, const Module& b) {
      return view(a.name) < view(b.name);
    };
    std::stable_sort(m_modules.begin(), m_modules.end(), by_name);
    const auto same_name = [this](const Module& a, const Module& b) {
      return view(a.name) == view(b.name);
    };
    m_modules.erase(std::unique(m_modules.begin(), m_modules.end(), same_name), m_modules.end());
    m_in_order = true;
  }
  m_modules.shrink_to_fit();
  m_text.shrink_to_fit();
  m_directories.shrink_to_fit();
  m_directory_index = {};
}

ModuleFile ModuleFiles::file_of(const Module& module) const {
  ModuleFile file;
  file.location = m_directories[module.directory];
  file.location += view(module.file);
  file.real = m_directories[module.real_directory];
  file.real += view(module.real_file);
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

const ModuleFiles::Module* ModuleFiles::lookup(std::string_view name) const {
  check_in_order();
  const auto at = std::lower_bound(
      m_modules.begin(), m_modules.end(), name,
      [this](const Module& module, std::string_view key) { return view(module.name) < key; });
  return at == m_modules.end() || view(at->name) != name ? nullptr : &*at;
}

std::optional<ModuleFile> ModuleFiles::find(std::string_view name) const {
  const Module* module = lookup(name);
  if (module == nullptr) {
    return std::nullopt;
  }
  return file_of(*module);
}

bool ModuleFiles::contains(std::string_view name) const {
  return lookup(name) != nullptr;
}

ModuleFile ModuleFiles::at(std::string_view name) const {
  auto found = find(name);
  if (!found) {
    throw std::out_of_range("no module " + std::string(name));
  }
  return std::move(*found);
}

std::string_view ModuleFiles::name(std::size_t i) const {
  check_in_order();
  return view(m_modules[i].name);
}

std::vector<std::string> ModuleFiles::names() const {
  check_in_order();
  std::vector<std::string> all;
  all.reserve(m_modules.size());
  for (const auto& module : m_modules) {
    all.emplace_back(view(module.name));
  }
  return all;
}

ModuleFile ModuleFiles::file(std::size_t i) const {
  check_in_order();
  return file_of(m_modules[i]);
}

}  // namespace envcontract::facts
