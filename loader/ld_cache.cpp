#include "loader/ld_cache.hpp"

#include <cstdint>
#include <cstring>

#include "process/small_files.hpp"
#include "process/system_root.hpp"

namespace envcontract::loader {

namespace {

constexpr std::string_view k_magic = "glibc-ld.so.cache1.1";
constexpr std::size_t k_header_size = 48;  // magic+version, nlibs, len_strings, flags, ...
constexpr std::size_t k_entry_size = 24;   // flags, key, value, osversion, hwcap

std::uint32_t read_u32(const std::string& data, std::size_t offset) {
  std::uint32_t value = 0;
  std::memcpy(&value, data.data() + offset, sizeof value);
  return value;
}

// A NUL-terminated string at `offset`, or "" when it runs off the data.
std::string string_at(const std::string& data, std::size_t offset) {
  if (offset >= data.size()) {
    return {};
  }
  const auto end = data.find('\0', offset);
  return end == std::string::npos ? std::string() : data.substr(offset, end - offset);
}

}  // namespace

LdCache LdCache::load(const std::filesystem::path& path, const std::filesystem::path& root) {
  LdCache cache;
  const auto read = process::read_file_bounded(path, {"loader cache", 64 * 1024 * 1024, false, 0});
  const auto& data = read.text;
  if (!data) {
    cache.m_problem =
        "cannot read " + path.string() + (read.refusal.empty() ? "" : ": it " + read.refusal);
    return cache;
  }
  const auto start = data->find(k_magic);
  if (start == std::string::npos || data->size() < start + k_header_size) {
    cache.m_problem = path.string() + " is not in the glibc-ld.so.cache1.1 format";
    return cache;
  }
  const std::uint32_t count = read_u32(*data, start + 20);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t entry = start + k_header_size + std::size_t{i} * k_entry_size;
    if (entry + k_entry_size > data->size()) {
      cache.m_problem = path.string() + " is truncated";
      break;
    }
    // String offsets are relative to the start of the new-format header.
    const std::string key = string_at(*data, start + read_u32(*data, entry + 4));
    std::string value = string_at(*data, start + read_u32(*data, entry + 8));
    if (root != "/" && !value.empty()) {
      value = process::under_root(root, value.starts_with('/') ? value : "/" + value).string();
    }
    if (!key.empty() && !value.empty()) {
      cache.m_entries.emplace(key, value);
      cache.m_order.push_back(value);
    }
  }
  return cache;
}

std::vector<std::filesystem::path> LdCache::lookup(const std::string& soname) const {
  std::vector<std::filesystem::path> paths;
  const auto [begin, end] = m_entries.equal_range(soname);
  for (auto it = begin; it != end; ++it) {
    paths.push_back(it->second);
  }
  return paths;
}

std::vector<std::filesystem::path> LdCache::paths_named_like(std::string_view prefix) const {
  std::vector<std::filesystem::path> paths;
  for (const std::string& path : m_order) {
    const auto slash = path.rfind('/');
    const std::string_view name = slash == std::string::npos
                                      ? std::string_view(path)
                                      : std::string_view(path).substr(slash + 1);
    if (name.starts_with(prefix)) {
      paths.emplace_back(path);
    }
  }
  return paths;
}

}  // namespace envcontract::loader
