// libFuzzer target: any bytes as a shared library and as /etc/ld.so.cache.
// Both readers take a path, so the input is written to a private file first.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "loader/elf_file.hpp"
#include "loader/ld_cache.hpp"

namespace {

const std::filesystem::path& scratch_file() {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("envcontract-fuzz-" + std::to_string(::getpid()) + ".bin");
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto elf = envcontract::loader::ElfFile::open(scratch_file());
  if (elf) {
    for (const auto& symbol : (*elf)->symbols()) {
      (void)(*elf)->definitions(symbol.name);
    }
  }
  const auto cache = envcontract::loader::LdCache::load(scratch_file());
  (void)cache.lookup("libc.so.6");
  return 0;
}
