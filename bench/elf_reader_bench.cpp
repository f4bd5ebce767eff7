// Reading a huge library: a 512 MB shared object with 300,000 dynamic
// symbols, generated here. Measures ElfFile::open (read and parse) with the
// first lookup (which makes the index of definitions), then a lookup of
// every symbol, against a baseline measured in the same run: `nm -D
// --defined-only`, the command people ran by hand in the incident.
// Target (issue #5): opening must not take seconds; we hold it to 1 s.
//
// Usage: elf_reader_bench [WORK_DIR]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench/report_only.hpp"
#include "loader/elf_file.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using envcontract::loader::ElfFile;

namespace {

constexpr int k_symbols = 300'000;
constexpr long long k_padding_bytes = 512LL * 1024 * 1024;
constexpr double k_target_ms = 1000.0;

double elapsed_ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool generate(const fs::path& dir) {
  std::ofstream source(dir / "huge.s");
  source << ".text\n";
  for (int i = 0; i < k_symbols; ++i) {
    source << ".globl _ZN4huge9namespace8functionEi" << i << "\n"
           << "_ZN4huge9namespace8functionEi" << i << ":\n  ret\n";
  }
  source << ".section .rodata\n.globl huge_blob\nhuge_blob:\n  .zero " << k_padding_bytes << "\n";
  source.close();
  const std::string command = "cc -shared -nostdlib -o '" + (dir / "libhuge.so").string() + "' '" +
                              (dir / "huge.s").string() + "'";
  return std::system(command.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path dir = argc > 1 ? fs::path(argv[1])
                                : fs::temp_directory_path() /
                                      ("envcontract-elf-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto start = Clock::now();
  if (!generate(dir)) {
    std::fprintf(stderr, "elf_reader_bench: cannot build the huge library\n");
    return 2;
  }
  const double build_ms = elapsed_ms(start);
  const fs::path library = dir / "libhuge.so";

  start = Clock::now();
  const std::string nm = "nm -D --defined-only '" + library.string() + "' > /dev/null";
  if (std::system(nm.c_str()) != 0) {
    std::fprintf(stderr, "elf_reader_bench: nm failed\n");
    return 2;
  }
  const double nm_ms = elapsed_ms(start);

  start = Clock::now();
  auto opened = ElfFile::open(library);
  const double open_ms = elapsed_ms(start);
  if (!opened) {
    std::fprintf(stderr, "elf_reader_bench: %s\n", opened.error().c_str());
    return 2;
  }
  const auto& elf = opened.value();
  start = Clock::now();
  (void)elf->definitions("huge_blob");
  const double index_ms = elapsed_ms(start);
  const double ready_ms = open_ms + index_ms;
  start = Clock::now();
  std::size_t found = 0;
  for (const auto& symbol : elf->symbols()) {
    found += elf->definitions(symbol.name).size();
  }
  const double lookup_ms = elapsed_ms(start);

  std::printf("ELF reader, %.0f MB library with %zu dynamic symbols (built in %.0f ms)\n",
              static_cast<double>(fs::file_size(library)) / 1e6, elf->symbols().size(), build_ms);
  std::printf("  baseline: nm -D --defined-only    %8.1f ms\n", nm_ms);
  std::printf("  ElfFile::open (read, parse)       %8.1f ms\n", open_ms);
  std::printf("  its first lookup (the index)      %8.1f ms\n", index_ms);
  std::printf("  open and index                    %8.1f ms  (%.2fx the baseline)\n", ready_ms,
              ready_ms / nm_ms);
  std::printf("  then a lookup of every symbol     %8.1f ms  (%zu found)\n", lookup_ms, found);
  std::printf("  target for open                   %8.1f ms\n", k_target_ms);
  bench_row("open a " + bench_figure(static_cast<double>(fs::file_size(library)) / 1e6, 0, " MB") +
                " library of " + std::to_string(elf->symbols().size()) + " dynamic symbols",
            bench_figure(ready_ms, 1, " ms, open and index"),
            "nm -D --defined-only: " + bench_figure(nm_ms, 1, " ms"),
            bench_figure(ready_ms / nm_ms, 2, "x"), "under 1 s", ready_ms <= k_target_ms);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (found < static_cast<std::size_t>(k_symbols)) {
    std::printf("FAILED: symbols lost\n");
    return 1;
  }
  if (open_ms > k_target_ms) {
    return bench_missed("open is over its target");
  }
  std::printf("ok\n");
  return 0;
}
