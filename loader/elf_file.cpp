#include "loader/elf_file.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "process/small_files.hpp"

namespace envcontract::loader {
namespace fs = std::filesystem;

namespace {

std::string libelf_error() {
  const char* message = elf_errmsg(-1);
  return message ? message : "unknown libelf error";
}

// Sections are read into memory (ELF_C_READ): a hostile "library" may
// claim any size, and a sparse file costs its owner no disk for it. Real
// ones stay far below these (libtorch_cpu's .dynstr and .dynsym together are
// tens of MB), and the bound holds for all the sections of one file, so
// that a file cannot take it once per section.
constexpr std::uint64_t k_max_section_bytes_per_file = 256ULL * 1024 * 1024;
// Each kept symbol costs a DynamicSymbol; libtorch_cpu has a few hundred
// thousand.
constexpr std::size_t k_max_dynamic_symbols = 4U * 1024 * 1024;
// A linker writes each name once into a string table, sharing tails at
// most, so the names taken from a table add up to about its size. A crafted
// table with no NUL before its end makes every name run to the end, and a
// million symbols naming its start would cost a strlen of the whole table
// each: names are read against a budget of a few times their table.
constexpr std::uint64_t k_name_bytes_per_table_byte = 4;
constexpr std::uint64_t k_name_bytes_slack = 64 * 1024;

// Reads the sections of one file within the bounds above.
class SectionReader {
 public:
  explicit SectionReader(Elf* elf) : m_elf(elf) {}

  // Null when the section would take the file past its bound, or cannot
  // be read.
  Elf_Data* data(Elf_Scn* section) {
    GElf_Shdr header;
    if (section == nullptr || gelf_getshdr(section, &header) == nullptr) {
      return nullptr;
    }
    if (!m_charged.contains(section)) {
      if (header.sh_size > m_section_bytes_left) {
        m_oversized = true;
        return nullptr;
      }
      m_section_bytes_left -= header.sh_size;
      m_charged.insert(section);
    }
    return elf_getdata(section, nullptr);
  }

  // A string table is usable when it is within bounds and ends in NUL:
  // libelf then finds each string's end at once (it searches backwards
  // from the table's end), and no string runs past it.
  bool usable_string_table(std::size_t index) {
    Elf_Data* table = data(elf_getscn(m_elf, index));
    return table != nullptr && table->d_buf != nullptr && table->d_size > 0 &&
           static_cast<const char*>(table->d_buf)[table->d_size - 1] == '\0';
  }

  // A string from a usable string table; "" when the offset is bogus or
  // the table's name budget is spent (then overspent() says so).
  std::string_view string_at(std::size_t section, std::size_t offset) {
    const char* text = elf_strptr(m_elf, section, offset);
    if (text == nullptr) {
      return {};
    }
    auto [budget, first] = m_name_bytes_left.try_emplace(section, 0);
    if (first) {
      GElf_Shdr header;
      const bool known = gelf_getshdr(elf_getscn(m_elf, section), &header) != nullptr;
      budget->second =
          (known ? header.sh_size : 0) * k_name_bytes_per_table_byte + k_name_bytes_slack;
    }
    const std::size_t length = ::strnlen(text, budget->second);
    if (length >= budget->second) {
      m_overspent = true;
      budget->second = 0;
      return {};
    }
    budget->second -= length;
    return {text, length};
  }

  bool oversized() const { return m_oversized; }
  bool overspent() const { return m_overspent; }
  std::uint64_t bytes_read() const { return k_max_section_bytes_per_file - m_section_bytes_left; }

 private:
  Elf* m_elf;
  std::uint64_t m_section_bytes_left = k_max_section_bytes_per_file;
  std::set<Elf_Scn*> m_charged;
  std::map<std::size_t, std::uint64_t> m_name_bytes_left;
  bool m_oversized = false;
  bool m_overspent = false;
};

// Why a file was not read, or nothing when it was.
using Failure = std::optional<common::Error>;

Failure failed(std::string why) {
  return common::Error{std::move(why)};
}

// A file beyond the bounds of what a linker writes: refused, and reported
// as a hostile file of the env that holds it (library_resolver.cpp).
Failure refused(const std::string& why) {
  return common::Error{std::string(k_refused_elf) + why, common::ErrorCode::refused};
}

Failure oversized() {
  return refused("its dynamic sections add up to more than " +
                 std::to_string(k_max_section_bytes_per_file >> 20) +
                 " MiB, the bound read of one file (real libraries take tens of MB at most): its "
                 "symbols are not read");
}

bool looks_like_linker_script(const char* data, std::size_t size) {
  const std::string_view head(data, std::min<std::size_t>(size, 4096));
  return head.find("GROUP") != std::string_view::npos ||
         head.find("INPUT") != std::string_view::npos ||
         head.find("GNU ld script") != std::string_view::npos;
}

// Version entries are chained by relative offsets: each must move forward,
// and the total is bounded, so that a hostile chain cannot loop.
constexpr int k_max_version_entries = 65536;

struct VersionTables {
  // version index -> (name, library that provides it, for needed versions)
  std::map<unsigned, std::pair<std::string_view, std::string_view>> by_index;
  std::vector<std::string_view> defined;
  std::vector<ElfFile::NeededVersion> needed;
};

void read_verneed(SectionReader& reader, Elf_Scn* section, std::size_t strings,
                  VersionTables& tables) {
  Elf_Data* data = reader.data(section);
  if (data == nullptr || !reader.usable_string_table(strings)) {
    return;
  }
  int offset = 0;
  int entries = 0;
  // Each entry names a library; its aux entries name the versions needed from it.
  for (int guard = 0; guard < k_max_version_entries; ++guard) {
    GElf_Verneed need;
    if (gelf_getverneed(data, offset, &need) == nullptr) {
      return;
    }
    const std::string_view library = reader.string_at(strings, need.vn_file);
    int aux_offset = offset + static_cast<int>(need.vn_aux);
    for (unsigned i = 0; i < need.vn_cnt; ++i) {
      GElf_Vernaux aux;
      if (++entries > k_max_version_entries || gelf_getvernaux(data, aux_offset, &aux) == nullptr) {
        return;
      }
      const std::string_view version = reader.string_at(strings, aux.vna_name);
      tables.by_index[aux.vna_other & 0x7fff] = {version, library};
      tables.needed.push_back({library, version});
      if (aux.vna_next == 0 || aux.vna_next > data->d_size) {
        break;
      }
      aux_offset += static_cast<int>(aux.vna_next);
    }
    if (need.vn_next == 0 || need.vn_next > data->d_size) {
      return;
    }
    offset += static_cast<int>(need.vn_next);
  }
}

void read_verdef(SectionReader& reader, Elf_Scn* section, std::size_t strings,
                 VersionTables& tables) {
  Elf_Data* data = reader.data(section);
  if (data == nullptr || !reader.usable_string_table(strings)) {
    return;
  }
  int offset = 0;
  for (int guard = 0; guard < k_max_version_entries; ++guard) {
    GElf_Verdef def;
    if (gelf_getverdef(data, offset, &def) == nullptr) {
      return;
    }
    GElf_Verdaux aux;
    if (gelf_getverdaux(data, offset + static_cast<int>(def.vd_aux), &aux) != nullptr) {
      const std::string_view name = reader.string_at(strings, aux.vda_name);
      tables.by_index[def.vd_ndx & 0x7fff] = {name, {}};
      // Index 1 is the file's own name (VER_FLG_BASE), not a version.
      if ((def.vd_flags & VER_FLG_BASE) == 0) {
        tables.defined.push_back(name);
      }
    }
    if (def.vd_next == 0 || def.vd_next > data->d_size) {
      return;
    }
    offset += static_cast<int>(def.vd_next);
  }
}

// The sections the facts come from (any may be absent).
struct DynamicSections {
  Elf_Scn* dynamic = nullptr;
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* versym = nullptr;
  Elf_Scn* verneed = nullptr;
  Elf_Scn* verdef = nullptr;
  bool has_symtab = false;
};

// "" or why the section headers cannot be walked.
Failure find_sections(Elf* elf, DynamicSections& found) {
  std::size_t section_count = 0;
  if (elf_getshdrnum(elf, &section_count) != 0 || section_count == 0) {
    return failed("no section headers: cannot read its dynamic section");
  }
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) {
      return failed("corrupt section header: " + libelf_error());
    }
    switch (header.sh_type) {
      case SHT_DYNAMIC:
        found.dynamic = section;
        break;
      case SHT_DYNSYM:
        found.dynsym = section;
        break;
      case SHT_SYMTAB:
        found.has_symtab = true;
        break;
      case SHT_GNU_versym:
        found.versym = section;
        break;
      case SHT_GNU_verneed:
        found.verneed = section;
        break;
      case SHT_GNU_verdef:
        found.verdef = section;
        break;
      default:
        break;
    }
  }
  return {};
}

// The section's link: the string table its names are in.
std::size_t linked_strings(Elf_Scn* section) {
  GElf_Shdr header;
  return gelf_getshdr(section, &header) != nullptr ? header.sh_link : 0;
}

struct DynamicEntries {
  std::vector<std::string_view> needed;
  std::string_view soname;
  std::string_view rpath;
  std::string_view runpath;
};

// "" or why the dynamic section cannot be read.
Failure read_dynamic(Elf* elf, SectionReader& reader, Elf_Scn* dynamic, DynamicEntries& entries) {
  const std::size_t strings = linked_strings(dynamic);
  Elf_Data* data = reader.data(dynamic);
  if (data == nullptr || !reader.usable_string_table(strings)) {
    return reader.oversized() ? oversized() : failed("corrupt dynamic section: " + libelf_error());
  }
  const std::size_t entry_size = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
  const std::size_t count = entry_size != 0 ? data->d_size / entry_size : 0;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Dyn entry;
    if (gelf_getdyn(data, static_cast<int>(i), &entry) == nullptr || entry.d_tag == DT_NULL) {
      break;
    }
    switch (entry.d_tag) {
      case DT_NEEDED:
        entries.needed.push_back(reader.string_at(strings, entry.d_un.d_val));
        break;
      case DT_SONAME:
        entries.soname = reader.string_at(strings, entry.d_un.d_val);
        break;
      case DT_RPATH:
        entries.rpath = reader.string_at(strings, entry.d_un.d_val);
        break;
      case DT_RUNPATH:
        entries.runpath = reader.string_at(strings, entry.d_un.d_val);
        break;
      default:
        break;
    }
  }
  return {};
}

VersionTables read_versions(SectionReader& reader, const DynamicSections& sections) {
  VersionTables versions;
  if (sections.verneed != nullptr) {
    read_verneed(reader, sections.verneed, linked_strings(sections.verneed), versions);
  }
  if (sections.verdef != nullptr) {
    read_verdef(reader, sections.verdef, linked_strings(sections.verdef), versions);
  }
  return versions;
}

// The symbol's version, from .gnu.version and the version tables.
void version_symbol(Elf_Data* version_data, std::size_t index, const VersionTables& versions,
                    DynamicSymbol& symbol) {
  GElf_Versym version_index = 0;
  if (version_data == nullptr ||
      gelf_getversym(version_data, static_cast<int>(index), &version_index) == nullptr) {
    return;
  }
  symbol.hidden = (version_index & 0x8000) != 0;
  const auto found = versions.by_index.find(version_index & 0x7fff);
  // Indexes 0 (local) and 1 (global, unversioned) carry no version.
  if ((version_index & 0x7fff) > 1 && found != versions.by_index.end()) {
    symbol.version = found->second.first;
    symbol.version_library = found->second.second;
  }
}

// "" or why the dynamic symbol table is refused or cannot be read.
Failure read_symbols(Elf* elf, SectionReader& reader, const DynamicSections& sections,
                     const VersionTables& versions, std::vector<DynamicSymbol>& symbols) {
  GElf_Shdr header;
  gelf_getshdr(sections.dynsym, &header);
  const std::size_t entry_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  // Counted from the header, before the table is read.
  if (entry_size != 0 && header.sh_size / entry_size > k_max_dynamic_symbols) {
    return refused(std::to_string(header.sh_size / entry_size) +
                   " dynamic symbols, more than the " + std::to_string(k_max_dynamic_symbols) +
                   " read of one file (real libraries have up to a few hundred thousand): its "
                   "symbols are not read, so nothing it provides or needs can be checked");
  }
  Elf_Data* data = reader.data(sections.dynsym);
  if (data == nullptr || !reader.usable_string_table(header.sh_link)) {
    return reader.oversized() ? oversized()
                              : failed("corrupt dynamic symbol table: " + libelf_error());
  }
  Elf_Data* version_data = sections.versym ? reader.data(sections.versym) : nullptr;
  const std::size_t count =
      entry_size != 0 ? std::min(data->d_size / entry_size, k_max_dynamic_symbols) : 0;
  symbols.reserve(count);
  // Entry 0 is the null symbol.
  for (std::size_t i = 1; i < count; ++i) {
    GElf_Sym raw;
    if (gelf_getsym(data, static_cast<int>(i), &raw) == nullptr) {
      break;
    }
    DynamicSymbol symbol;
    symbol.name = reader.string_at(header.sh_link, raw.st_name);
    symbol.defined = raw.st_shndx != SHN_UNDEF;
    if (symbol.name.empty() || (!symbol.defined && GELF_ST_BIND(raw.st_info) == STB_LOCAL)) {
      continue;
    }
    symbol.weak = GELF_ST_BIND(raw.st_info) == STB_WEAK;
    symbol.type = GELF_ST_TYPE(raw.st_info);
    version_symbol(version_data, i, versions, symbol);
    symbols.push_back(symbol);
  }
  return {};
}

// A version table or string table left unread would leave facts wrong, not
// just missing: the file is reported as not read instead.
Failure refusal_of(const SectionReader& reader) {
  if (reader.oversized()) {
    return oversized();
  }
  if (reader.overspent()) {
    return refused("its symbol and library names add up to more than " +
                   std::to_string(k_name_bytes_per_table_byte) +
                   " times the string tables that hold them: a crafted file (a table with no end "
                   "to its names), not one a linker wrote; its symbols are not read");
  }
  return {};
}

}  // namespace

ElfFile::~ElfFile() {
  if (m_elf != nullptr) {
    elf_end(static_cast<Elf*>(m_elf));
  }
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

common::Result<std::shared_ptr<const ElfFile>> ElfFile::open(const fs::path& path) {
  std::shared_ptr<ElfFile> file(new ElfFile());
  if (auto error = file->load(path)) {
    return std::move(*error);
  }
  return std::shared_ptr<const ElfFile>(std::move(file));
}

std::optional<common::Error> ElfFile::open_elf(const fs::path& path) {
  static const bool initialised = elf_version(EV_CURRENT) != EV_NONE;
  if (!initialised) {
    return failed("libelf is out of date");
  }
  // Never opens a FIFO or a device put where a library is expected.
  struct stat info {};
  std::string refusal;
  const int fd = process::open_regular_file(path, info, refusal);
  if (fd < 0) {
    return failed(refusal.empty() ? std::string("cannot open: ") + std::strerror(errno)
                                  : "not a regular file");
  }
  m_fd = fd;
  char head[4096];
  const ssize_t head_size = ::pread(fd, head, sizeof head, 0);
  if (head_size < 16) {
    return failed("truncated: " + std::to_string(std::max<ssize_t>(head_size, 0)) +
                  " bytes, too short for an ELF header");
  }
  if (std::memcmp(head, ELFMAG, SELFMAG) != 0) {
    return failed(looks_like_linker_script(head, static_cast<std::size_t>(head_size))
                      ? "not an ELF file: a linker script (GNU ld INPUT/GROUP), as libc.so is"
                      : "not an ELF file");
  }
  // ELF_C_READ, not a mapping: libelf reads the sections we ask for with
  // pread into memory of its own. A library truncated by someone else while
  // we read it then gives a read error, where a mapping would raise SIGBUS
  // and kill the agent.
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  m_elf = elf;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    return failed("not a readable ELF file: " + libelf_error());
  }
  GElf_Ehdr header;
  if (gelf_getehdr(elf, &header) == nullptr) {
    return failed("truncated or corrupt ELF header: " + libelf_error());
  }
  m_class = header.e_ident[EI_CLASS] == ELFCLASS32 ? 32 : 64;
  m_machine = header.e_machine;
  return {};
}

std::optional<common::Error> ElfFile::load(const fs::path& path) {
  m_path = path;
  if (auto error = open_elf(path)) {
    return error;
  }
  Elf* elf = static_cast<Elf*>(m_elf);
  DynamicSections sections;
  if (auto error = find_sections(elf, sections)) {
    return error;
  }
  m_has_symtab = sections.has_symtab;
  SectionReader reader(elf);
  if (sections.dynamic != nullptr) {
    DynamicEntries entries;
    if (auto error = read_dynamic(elf, reader, sections.dynamic, entries)) {
      return error;
    }
    m_needed = std::move(entries.needed);
    m_soname = entries.soname;
    m_rpath = entries.rpath;
    m_runpath = entries.runpath;
  }
  const VersionTables versions = read_versions(reader, sections);
  m_defined_versions = versions.defined;
  m_needed_versions = versions.needed;
  if (sections.dynsym != nullptr) {
    if (auto error = read_symbols(elf, reader, sections, versions, m_symbols)) {
      return error;
    }
  }
  if (auto error = refusal_of(reader)) {
    return error;
  }
  // The index of definitions is made when first asked for (a system
  // library deep in a closure often never is), but counted now: what the
  // cache holds must not grow behind its back.
  const auto defined = std::count_if(m_symbols.begin(), m_symbols.end(),
                                     [](const DynamicSymbol& symbol) { return symbol.defined; });
  m_bytes_held = reader.bytes_read() + m_symbols.capacity() * sizeof(DynamicSymbol) +
                 static_cast<std::uint64_t>(defined) * sizeof(std::uint64_t);
  // Everything kept points into sections already read: the file itself is
  // no longer needed, and an agent must not hold thousands of descriptors.
  elf_cntl(elf, ELF_C_FDDONE);
  ::close(m_fd);
  m_fd = -1;
  return {};
}

// The index packs a name's hash above the symbol's place in the table, so it
// sorts as integers: sorting the names themselves (long C++ names sharing
// long prefixes) took a third of the scan's reading of an env over Debian's
// torch. Equal names stay side by side, as before.
namespace {
constexpr unsigned k_index_bits = 22;  // k_max_dynamic_symbols is 2^22
static_assert((std::size_t{1} << k_index_bits) >= k_max_dynamic_symbols);
constexpr std::uint64_t k_index_mask = (std::uint64_t{1} << k_index_bits) - 1;

std::uint64_t name_key(std::string_view name) {
  return static_cast<std::uint64_t>(std::hash<std::string_view>{}(name)) & ~k_index_mask;
}
}  // namespace

void ElfFile::index_definitions() const {
  m_definitions.clear();
  m_definitions.reserve(static_cast<std::size_t>(
      std::count_if(m_symbols.begin(), m_symbols.end(),
                    [](const DynamicSymbol& symbol) { return symbol.defined; })));
  for (std::uint32_t i = 0; i < m_symbols.size(); ++i) {
    if (m_symbols[i].defined) {
      m_definitions.push_back(name_key(m_symbols[i].name) | i);
    }
  }
  std::sort(m_definitions.begin(), m_definitions.end());
}

std::vector<const DynamicSymbol*> ElfFile::definitions(std::string_view name) const {
  std::vector<const DynamicSymbol*> found;
  // Readers on several threads share one parsed file: the first makes it.
  std::call_once(m_definitions_made, [this] { index_definitions(); });
  const std::uint64_t key = name_key(name);
  // Names whose hashes agree above the index bits share a run; equal names
  // are among them.
  for (auto it = std::lower_bound(m_definitions.begin(), m_definitions.end(), key);
       it != m_definitions.end() && (*it & ~k_index_mask) == key; ++it) {
    const DynamicSymbol& symbol = m_symbols[*it & k_index_mask];
    if (symbol.name == name) {
      found.push_back(&symbol);
    }
  }
  return found;
}

}  // namespace envcontract::loader
