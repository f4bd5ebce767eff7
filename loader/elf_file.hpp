#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace envcontract::loader {

// One entry of an ELF file's dynamic symbol table. Strings are views into the
// sections read: valid while the ElfFile lives.
struct DynamicSymbol {
  std::string_view name;
  bool defined = false;
  bool weak = false;       // STB_WEAK: an undefined weak symbol may stay unresolved
  bool hidden = false;     // a non-default version (name@VER rather than name@@VER)
  unsigned char type = 0;  // STT_FUNC, STT_OBJECT, ...
  // The version required (undefined: from .gnu.version_r, with the library
  // that must provide it) or provided (defined: from .gnu.version_d).
  std::string_view version;
  std::string_view version_library;
};

// The start of ElfFile::open's message for a file beyond the bounds of what
// a linker writes (a crafted file, elf_file.cpp), whose error's code is
// common::ErrorCode::refused: it is also reported as a hostile file of the
// env that holds it.
inline constexpr std::string_view k_refused_elf = "refused: ";

// An ELF shared object or executable, read without running anything:
// read once (its sections into memory, not mapped), parsed with libelf, every
// error a message rather than a crash.
class ElfFile {
 public:
  // The file's facts, or what is wrong with it ("not an ELF file: a linker
  // script (GNU ld INPUT/GROUP)", "truncated: ...", ...).
  static common::Result<std::shared_ptr<const ElfFile>> open(const std::filesystem::path& path);

  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  // The path it was opened by: from ElfCache, any name of the file (its hard
  // links share one parse), so not where an env found it.
  const std::filesystem::path& path() const { return m_path; }
  int elf_class() const { return m_class; }       // 32 or 64
  unsigned machine() const { return m_machine; }  // EM_X86_64, ...
  std::string_view soname() const { return m_soname; }
  const std::vector<std::string_view>& needed() const { return m_needed; }
  std::string_view rpath() const { return m_rpath; }
  std::string_view runpath() const { return m_runpath; }
  bool stripped() const { return !m_has_symtab; }
  const std::vector<DynamicSymbol>& symbols() const { return m_symbols; }
  // Versions this file defines (.gnu.version_d), e.g. "GLIBC_2.34".
  const std::vector<std::string_view>& defined_versions() const { return m_defined_versions; }
  // Versions it needs, with the library that must define each (.gnu.version_r).
  struct NeededVersion {
    std::string_view library;
    std::string_view version;
  };
  const std::vector<NeededVersion>& needed_versions() const { return m_needed_versions; }

  // Defined symbols named `name` (any version), in the order of the table,
  // found by binary search over an index of their names' hashes, made at the
  // first call (safe from several threads).
  std::vector<const DynamicSymbol*> definitions(std::string_view name) const;

  // About what this parsed file holds in memory: the sections read and the
  // symbols kept. Bounds what the resolver and the cache hold at once.
  std::uint64_t bytes_held() const { return m_bytes_held; }

 private:
  ElfFile() = default;
  // Each "" or what is wrong with the file.
  std::optional<common::Error> load(const std::filesystem::path& path);
  // The file and its ELF header.
  std::optional<common::Error> open_elf(const std::filesystem::path& path);
  void index_definitions() const;

  std::filesystem::path m_path;
  int m_fd = -1;          // open while loading only
  void* m_elf = nullptr;  // Elf*, kept opaque so callers need no libelf header
  int m_class = 0;
  unsigned m_machine = 0;
  std::string_view m_soname;
  std::vector<std::string_view> m_needed;
  std::string_view m_rpath;
  std::string_view m_runpath;
  bool m_has_symtab = false;
  std::vector<DynamicSymbol> m_symbols;
  std::vector<std::string_view> m_defined_versions;
  std::vector<NeededVersion> m_needed_versions;
  // Each defined symbol's name hash (high bits) and index into m_symbols
  // (low bits), sorted.
  mutable std::vector<std::uint64_t> m_definitions;
  mutable std::once_flag m_definitions_made;
  std::uint64_t m_bytes_held = 0;
};

}  // namespace envcontract::loader
