#include "loader/ld_cache.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

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

// Where the new format's header starts, as glibc's loader finds it: at the
// file's start, or right after a cache in the old (libc5) format, which
// older ldconfigs wrote first; any other file is no cache to the loader.
std::optional<std::size_t> new_format_start(const std::string& data) {
  if (data.starts_with(k_magic)) {
    return 0;
  }
  constexpr std::string_view k_old_magic = "ld.so-1.7.0";
  constexpr std::size_t k_old_header_size = 16;  // magic, padding, nlibs
  constexpr std::size_t k_old_entry_size = 12;   // flags, key, value
  if (!data.starts_with(k_old_magic) || data.size() < k_old_header_size) {
    return std::nullopt;
  }
  const std::size_t old_end =
      k_old_header_size + std::size_t{read_u32(data, 12)} * k_old_entry_size;
  // Aligned as struct cache_file_new is where the cache was written: 8 on
  // 64-bit systems, 4 on i386 (its entries' uint64_t aligned to 4 there).
  for (const std::size_t alignment : {std::size_t{8}, std::size_t{4}}) {
    const std::size_t start = (old_end + alignment - 1) & ~(alignment - 1);
    if (start < data.size() && std::string_view(data).substr(start).starts_with(k_magic)) {
      return start;
    }
  }
  return std::nullopt;
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
  const auto found = new_format_start(*data);
  if (!found || data->size() < *found + k_header_size) {
    cache.m_problem = path.string() + " is not in the glibc-ld.so.cache1.1 format";
    return cache;
  }
  const std::size_t start = *found;
  const std::uint32_t count = read_u32(*data, start + 20);
  // A cache shorter than its header says is corrupt, and the loader then
  // uses none of it: neither does the agent (some entries kept would find
  // libraries the loader does not).
  if ((data->size() - start - k_header_size) / k_entry_size < count) {
    cache.m_problem = path.string() + " is truncated: the loader ignores it";
    return cache;
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::size_t entry = start + k_header_size + std::size_t{i} * k_entry_size;
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
