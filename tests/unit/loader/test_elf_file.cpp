// The ELF reader on real libraries built here, and on hostile input.
#include "loader/elf_file.hpp"

#include <elf.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <thread>

#include "tests/support/compile.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::loader {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<const ElfFile> open_ok(const fs::path& path) {
  auto file = ElfFile::open(path);
  if (!file) {
    ADD_FAILURE() << path << ": " << file.error();
    return nullptr;
  }
  return file.value();
}

std::string open_error(const fs::path& path) {
  auto file = ElfFile::open(path);
  return file ? "<opened>" : file.error();
}

const DynamicSymbol* find_symbol(const ElfFile& elf, std::string_view name, bool defined) {
  for (const auto& symbol : elf.symbols()) {
    if (symbol.name == name && symbol.defined == defined) {
      return &symbol;
    }
  }
  return nullptr;
}

TEST(ElfFile, ReadsDynamicSectionAndSymbols) {
  testing::TempDir dir;
  testing::build_shared_library(dir.path() / "dep/libdep.so", "int dep(void) { return 1; }",
                                {"-Wl,-soname,libdep.so"});
  testing::build_shared_library(
      dir.path() / "libmain.so",
      "int dep(void);\n__attribute__((weak)) int optional(void);\n"
      "int main_entry(void) { return dep() + (optional ? optional() : 0); }",
      {"-Wl,-soname,libmain.so.1", "-L" + (dir.path() / "dep").string(), "-ldep",
       "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/dep"});
  const auto elf = open_ok(dir.path() / "libmain.so");
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->elf_class(), 64);
  EXPECT_EQ(elf->machine(), EM_X86_64);
  EXPECT_EQ(elf->soname(), "libmain.so.1");
  EXPECT_NE(std::find(elf->needed().begin(), elf->needed().end(), "libdep.so"),
            elf->needed().end());
  EXPECT_EQ(elf->runpath(), "$ORIGIN/dep");
  EXPECT_EQ(elf->rpath(), "");
  EXPECT_FALSE(elf->stripped());
  ASSERT_NE(find_symbol(*elf, "main_entry", true), nullptr);
  ASSERT_NE(find_symbol(*elf, "dep", false), nullptr);
  const auto* optional = find_symbol(*elf, "optional", false);
  ASSERT_NE(optional, nullptr);
  EXPECT_TRUE(optional->weak);
  EXPECT_EQ(elf->definitions("main_entry").size(), 1U);
  EXPECT_TRUE(elf->definitions("dep").empty());
}

TEST(ElfFile, ReadsSymbolVersions) {
  const auto libc = open_ok("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_NE(libc, nullptr);
  const auto& versions = libc->defined_versions();
  EXPECT_NE(std::find(versions.begin(), versions.end(), "GLIBC_2.34"), versions.end());
  const auto definitions = libc->definitions("malloc");
  ASSERT_FALSE(definitions.empty());
  EXPECT_EQ(definitions[0]->version, "GLIBC_2.2.5");

  // A library using libc records what it needs from it.
  testing::TempDir dir;
  testing::build_shared_library(dir.path() / "libuser.so",
                                "#include <stdlib.h>\nvoid* use(void) { return malloc(4); }");
  const auto user = open_ok(dir.path() / "libuser.so");
  ASSERT_NE(user, nullptr);
  const auto* malloc_ref = find_symbol(*user, "malloc", false);
  ASSERT_NE(malloc_ref, nullptr);
  EXPECT_EQ(malloc_ref->version, "GLIBC_2.2.5");
  EXPECT_EQ(malloc_ref->version_library, "libc.so.6");
  const auto& needed = user->needed_versions();
  EXPECT_TRUE(std::any_of(needed.begin(), needed.end(), [](const auto& entry) {
    return entry.library == "libc.so.6" && entry.version == "GLIBC_2.2.5";
  }));
}

// The index of definitions finds every defined symbol of a real library by
// its name, and only symbols of that name.
TEST(ElfFile, EveryDefinitionIsFoundByItsName) {
  const auto libc = open_ok("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_NE(libc, nullptr);
  std::size_t defined = 0;
  for (const auto& symbol : libc->symbols()) {
    if (!symbol.defined) {
      continue;
    }
    ++defined;
    const auto found = libc->definitions(symbol.name);
    ASSERT_NE(std::find(found.begin(), found.end(), &symbol), found.end()) << symbol.name;
    for (const auto* definition : found) {
      EXPECT_EQ(definition->name, symbol.name);
    }
  }
  EXPECT_GT(defined, 1000U);
  EXPECT_TRUE(libc->definitions("envcontract_no_such_symbol").empty());
  EXPECT_TRUE(libc->definitions("").empty());
}

// The index is made at the first lookup, which readers of one parsed file
// on several threads may make at once: each finds what it asked for.
TEST(ElfFile, TheFirstLookupsFromSeveralThreadsAtOnceAllFind) {
  const auto libc = open_ok("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_NE(libc, nullptr);
  std::atomic<int> found{0};
  std::vector<std::thread> readers;
  const std::vector<std::string> names = {"malloc", "free", "printf", "memcpy"};
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&, i] {
      if (!libc->definitions(names[static_cast<std::size_t>(i) % names.size()]).empty()) {
        ++found;
      }
    });
  }
  for (auto& reader : readers) {
    reader.join();
  }
  EXPECT_EQ(found.load(), 8);
}

// Two versions of one name (an old one kept for old binaries, the default
// one for new) are both definitions, in the order of the symbol table.
TEST(ElfFile, EveryVersionOfANameIsADefinitionInTableOrder) {
  testing::TempDir dir;
  const fs::path script = dir.path() / "versions.map";
  std::ofstream(script) << "V1 { global: twice; local: *; };\nV2 { global: twice; } V1;\n";
  testing::build_shared_library(dir.path() / "libtwice.so",
                                "int twice_old(void) { return 1; }\n"
                                "int twice_new(void) { return 2; }\n"
                                "__asm__(\".symver twice_old,twice@V1\");\n"
                                "__asm__(\".symver twice_new,twice@@V2\");\n",
                                {"-Wl,--version-script=" + script.string()});
  const auto elf = open_ok(dir.path() / "libtwice.so");
  ASSERT_NE(elf, nullptr);
  const auto found = elf->definitions("twice");
  ASSERT_EQ(found.size(), 2U);
  EXPECT_LT(found[0], found[1]);  // in the table's order
  std::vector<std::string_view> versions = {found[0]->version, found[1]->version};
  std::sort(versions.begin(), versions.end());
  EXPECT_EQ(versions, (std::vector<std::string_view>{"V1", "V2"}));
  EXPECT_NE(found[0]->hidden, found[1]->hidden);  // twice@V1 is not the default
}

TEST(ElfFile, StrippedLibraryHasNoSymtab) {
  testing::TempDir dir;
  testing::build_shared_library(dir.path() / "libstripped.so", "int f(void) { return 0; }", {"-s"});
  const auto elf = open_ok(dir.path() / "libstripped.so");
  ASSERT_NE(elf, nullptr);
  EXPECT_TRUE(elf->stripped());
  EXPECT_EQ(elf->definitions("f").size(), 1U);
}

TEST(ElfFile, ThirtyTwoBitLibrary) {
  testing::TempDir dir;
  const auto result =
      testing::run_command({"/usr/bin/cc", "-m32", "-shared", "-fPIC", "-o",
                            (dir.path() / "lib32.so").string(), "-x", "c", "/dev/null"});
  if (result.exit_code != 0) {
    GTEST_SKIP() << "no 32-bit toolchain (apt install gcc-multilib): " << result.err;
  }
  const auto elf = open_ok(dir.path() / "lib32.so");
  ASSERT_NE(elf, nullptr);
  EXPECT_EQ(elf->elf_class(), 32);
  EXPECT_EQ(elf->machine(), EM_386);
}

TEST(ElfFile, HostileInputGetsAClearErrorPerFile) {
  testing::TempDir dir;
  testing::build_shared_library(dir.path() / "libgood.so", "int f(void) { return 0; }");
  std::ifstream good_file(dir.path() / "libgood.so", std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(good_file)), {});

  dir.write("libempty.so", "");
  EXPECT_EQ(open_error(dir.path() / "libempty.so"),
            "truncated: 0 bytes, too short for an ELF header");
  dir.write("libtext.so", "this is not a library, just text named like one\n");
  EXPECT_EQ(open_error(dir.path() / "libtext.so"), "not an ELF file");
  // Not a library, but nothing crafted: a failure, not a refusal.
  EXPECT_EQ(ElfFile::open(dir.path() / "libtext.so").error_code(), common::ErrorCode::failed);
  EXPECT_EQ(open_error("/usr/lib/x86_64-linux-gnu/libc.so"),
            "not an ELF file: a linker script (GNU ld INPUT/GROUP), as libc.so is");
  EXPECT_EQ(open_error(dir.path()), "not a regular file");
  EXPECT_EQ(open_error(dir.path() / "missing.so"), "cannot open: No such file or directory");

  // Truncated in the middle of the section headers, and at every few bytes.
  for (std::size_t size : {std::size_t{20}, std::size_t{64}, good.size() / 2, good.size() - 10}) {
    dir.write("libcut.so", good.substr(0, size));
    (void)ElfFile::open(dir.path() / "libcut.so");  // an error or a partial read, never a crash
  }
  // Bogus offsets: section headers pointing past the end, garbage counts.
  std::string bogus = good;
  auto* header = reinterpret_cast<Elf64_Ehdr*>(bogus.data());
  header->e_shoff = 0xffffffffffULL;
  dir.write("libbogus.so", bogus);
  EXPECT_NE(open_error(dir.path() / "libbogus.so"), "<opened>");
  bogus = good;
  header = reinterpret_cast<Elf64_Ehdr*>(bogus.data());
  header->e_shnum = 0xffff;
  header->e_shentsize = 0x7fff;
  dir.write("libbogus2.so", bogus);
  (void)ElfFile::open(dir.path() / "libbogus2.so");
  // Every byte of the dynamic section flipped: strings and counts go wild.
  for (std::size_t offset = 64; offset < good.size(); offset += 97) {
    std::string corrupt = good;
    corrupt[offset] = static_cast<char>(~corrupt[offset]);
    dir.write("libflip.so", corrupt);
    (void)ElfFile::open(dir.path() / "libflip.so");
  }
}

// Someone truncates and rewrites a library while the agent reads it: a
// mapping of the file died of SIGBUS (100 of 3,029 runs); read with pread,
// each open is an error or a complete read, and the agent lives.
TEST(ElfFile, ALibraryTruncatedWhileReadIsAnErrorNotACrash) {
  testing::TempDir dir;
  const fs::path original = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
  if (!fs::exists(original)) {
    GTEST_SKIP() << "no " << original << " to copy";
  }
  std::ifstream in(original, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const auto path = dir.write("libvictim.so", bytes);
  std::atomic<bool> done{false};
  std::thread vandal([&] {
    for (std::size_t round = 0; !done; ++round) {
      fs::resize_file(path, (round * 7919) % bytes.size());
      std::ofstream(path, std::ios::binary | std::ios::trunc)
          .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
  });
  // Surviving is the assertion: each open is an error or a complete read,
  // and every symbol name of a read still points at memory we own.
  for (int i = 0; i < 300; ++i) {
    auto file = ElfFile::open(path);
    if (file) {
      for (const auto& symbol : (*file)->symbols()) {
        (void)symbol.name.size();
      }
    }
  }
  done = true;
  vandal.join();
  // The complete file reads as before once nobody touches it.
  const auto settled = open_ok(path);
  ASSERT_NE(settled, nullptr);
  EXPECT_FALSE(settled->symbols().empty());
}

TEST(ElfFile, AFifoIsNeverOpenedForReading) {
  testing::TempDir dir;
  const auto fifo = dir.path() / "libfifo.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(open_error(fifo), "not a regular file");
}

// The section headers of a 64-bit ELF file held in `bytes`.
Elf64_Shdr* section_headers(std::string& bytes) {
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  return reinterpret_cast<Elf64_Shdr*>(bytes.data() + header->e_shoff);
}

Elf64_Shdr* section_of_type(std::string& bytes, std::uint32_t type) {
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(bytes.data());
  for (unsigned i = 0; i < header->e_shnum; ++i) {
    if (section_headers(bytes)[i].sh_type == type) {
      return &section_headers(bytes)[i];
    }
  }
  ADD_FAILURE() << "no section of type " << type;
  return nullptr;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), {}};
}

// A library whose dynamic symbol table and the string table it names claim
// these sizes (0: as built), placed past its end in a sparse
// file: a hostile owner pays no disk for them, the agent would pay memory.
fs::path with_sparse_sections(const testing::TempDir& dir, const std::string& name,
                              std::uint64_t symbols, std::uint64_t strings = 0) {
  std::string bytes = read_bytes(dir.path() / "libgood.so");
  Elf64_Shdr* symbol_table = section_of_type(bytes, SHT_DYNSYM);
  if (symbol_table == nullptr) {
    return {};
  }
  std::uint64_t end = (bytes.size() + 4095) / 4096 * 4096;
  auto place = [&end](Elf64_Shdr& section, std::uint64_t size) {
    section.sh_offset = end;
    section.sh_size = size;
    end += (size + 4095) / 4096 * 4096;
  };
  if (strings != 0) {
    place(section_headers(bytes)[symbol_table->sh_link], strings);
  }
  if (symbols != 0) {
    place(*symbol_table, symbols);
  }
  dir.write(name, bytes);
  fs::resize_file(dir.path() / name, end);
  return dir.path() / name;
}

TEST(ElfFile, SectionsLargerInAllThanAnyLibrarysAreNotRead) {
  testing::TempDir dir;
  testing::build_shared_library(dir.path() / "libgood.so", "int f(void) { return 0; }");
  // One string table of 257 MiB: refused before it is read.
  const auto huge = with_sparse_sections(dir, "libhuge.so", 0, 257ULL << 20);
  EXPECT_TRUE(
      open_error(huge).starts_with("refused: its dynamic sections add up to more than 256 MiB"))
      << open_error(huge);
  // Told by its code, not its words: the resolver reports it as a hostile file.
  EXPECT_EQ(ElfFile::open(huge).error_code(), common::ErrorCode::refused);
  // A string table of 170 MiB and a symbol table of 90 MiB: each below the
  // bound, together above it.
  const auto two = with_sparse_sections(dir, "libtwo.so", 90ULL << 20, 170ULL << 20);
  EXPECT_TRUE(
      open_error(two).starts_with("refused: its dynamic sections add up to more than 256 MiB"))
      << open_error(two);
  // A symbol table within the bound but with more symbols than any library:
  // refused on its header's word, before it is read.
  const auto many = with_sparse_sections(dir, "libmany.so", 100ULL << 20);
  EXPECT_EQ(
      open_error(many),
      "refused: 4369066 dynamic symbols, more than the 4194304 read of one file (real libraries "
      "have up to a few hundred thousand): its symbols are not read, so nothing it "
      "provides or needs can be checked");
}

// A string table with no NUL before its end makes every name run to the
// end of it: n symbols cost n times the table, quadratic in a crafted file.
TEST(ElfFile, NamesThatRunToTheEndOfTheirTableAreACraftedFile) {
  testing::TempDir dir;
  std::string source;
  for (int i = 0; i < 300; ++i) {
    source += "int function_number_" + std::to_string(i) + "(void) { return " + std::to_string(i) +
              "; }\n";
  }
  testing::build_shared_library(dir.path() / "libmany.so", source);
  ASSERT_NE(open_ok(dir.path() / "libmany.so"), nullptr);
  std::string bytes = read_bytes(dir.path() / "libmany.so");
  const Elf64_Shdr* symbols = section_of_type(bytes, SHT_DYNSYM);
  ASSERT_NE(symbols, nullptr);
  const Elf64_Shdr& names = section_headers(bytes)[symbols->sh_link];
  ASSERT_GT(names.sh_size, 2U);
  // Every NUL but the table's last (which libelf requires) becomes a letter.
  std::replace(bytes.begin() + static_cast<std::ptrdiff_t>(names.sh_offset),
               bytes.begin() + static_cast<std::ptrdiff_t>(names.sh_offset + names.sh_size - 1),
               '\0', 'x');
  dir.write("libendless.so", bytes);
  EXPECT_EQ(
      open_error(dir.path() / "libendless.so"),
      "refused: its symbol and library names add up to more than 4 times the string tables that "
      "hold them: a crafted file (a table with no end to its names), not one a linker "
      "wrote; its symbols are not read");
}

// The bounds above leave every real library readable: the largest of this
// machine's, and the libpython, libstdc++ and libcrypto of the toolchains.
TEST(ElfFile, TheLargestLibrariesOfThisMachineAreWithinTheBounds) {
  std::vector<std::pair<std::uintmax_t, fs::path>> libraries;
  std::error_code error;
  for (const char* root : {"/usr/lib/x86_64-linux-gnu", "/usr/lib"}) {
    for (fs::recursive_directory_iterator
             it(root, fs::directory_options::skip_permission_denied, error),
         end;
         it != end; it.increment(error)) {
      if (error) {
        break;
      }
      const auto name = it->path().filename().string();
      if (it->is_regular_file(error) && !it->is_symlink(error) &&
          name.find(".so") != std::string::npos) {
        libraries.emplace_back(it->file_size(error), it->path());
      }
    }
  }
  ASSERT_GT(libraries.size(), 20U);
  std::sort(libraries.rbegin(), libraries.rend());
  libraries.resize(20);
  for (const auto& [size, path] : libraries) {
    const auto opened = ElfFile::open(path);
    if (!opened) {
      // Not every large file named *.so is a library; none may hit a bound.
      EXPECT_EQ(opened.error().find("more than"), std::string::npos)
          << path << ": " << opened.error();
    }
  }
}

}  // namespace
}  // namespace envcontract::loader
