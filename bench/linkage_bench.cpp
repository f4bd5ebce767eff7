// Checking the largest shared libraries on this machine as the agent does
// (issue #17, target 3: at least 10x faster than `nm -D | c++filt` doing
// the same job). The job, for one library: find everything it loads, as
// ld.so would, and every undefined symbol of the library (and of the
// non-system objects it loads) that nothing in that closure defines, with
// its demangled name. The agent: resolve_closure and resolve_symbols with a
// cold ElfCache. The baseline, in the same run, is what people did by hand
// in the incident, on the same files: `nm -D --with-symbol-versions | c++filt`
// of every object of the closure, then the undefined names that no object
// defines (awk). Both answers are printed; they must agree.
//
// Usage: linkage_bench [COUNT=3] [LIBRARY...]
//   without libraries, the COUNT largest shared objects of each of /usr/lib,
//   /usr/local and /opt.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "bench/report_only.hpp"
#include "loader/elf_file.hpp"
#include "loader/library_resolver.hpp"
#include "loader/symbol_resolution.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
namespace loader = envcontract::loader;

namespace {

constexpr double k_target_ratio = 10.0;
constexpr int k_runs = 3;

double elapsed_ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool is_elf(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  file.read(magic, sizeof magic);
  return file && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// The `count` largest shared objects (by file size) of each of the usual
// trees: the system's own (C++-heavy: LLVM, ICU) and what vendors install
// under /usr/local and /opt (CUDA's libraries: huge, fewer symbols).
std::vector<fs::path> largest_libraries(std::size_t count) {
  std::vector<fs::path> libraries;
  for (const char* top : {"/usr/lib", "/usr/local", "/opt"}) {
    std::vector<std::pair<std::uintmax_t, fs::path>> found;
    std::error_code error;
    fs::recursive_directory_iterator it(top, fs::directory_options::skip_permission_denied, error);
    for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      const auto name = it->path().filename().string();
      if (it->is_symlink(error) || !it->is_regular_file(error) ||
          name.find(".so") == std::string::npos ||
          it->path().string().find("/debug/") != std::string::npos) {
        continue;
      }
      found.emplace_back(it->file_size(error), it->path());
    }
    std::sort(found.begin(), found.end(), std::greater<>());
    std::size_t taken = 0;
    for (const auto& [size, path] : found) {
      if (taken == count) {
        break;
      }
      if (is_elf(path)) {
        libraries.push_back(path);
        ++taken;
      }
    }
  }
  return libraries;
}

std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

struct Answer {
  double ms = 0;
  std::set<std::string> unresolved;  // demangled, with the version wanted
  std::size_t objects = 0;
  std::size_t symbols = 0;
};

Answer agent_job(const fs::path& library, const loader::SearchEnvironment& search) {
  Answer answer;
  const auto start = Clock::now();
  loader::ElfCache cache;  // cold: every object parsed in this run
  const auto closure = loader::resolve_closure(library, {}, search, cache);
  const auto report = loader::resolve_symbols(closure);
  answer.ms = elapsed_ms(start);
  for (const auto& symbol : report.unresolved) {
    answer.unresolved.insert(symbol.demangled +
                             (symbol.version.empty() ? "" : "@" + symbol.version));
  }
  answer.objects = closure.objects.size();
  for (const auto& object : closure.objects) {
    answer.symbols += object.elf->symbols().size();
  }
  return answer;
}

// The hand-made job on the same objects: nm -D | c++filt of each, then awk.
// `unchecked`: objects whose own undefined symbols the agent does not check
// (a library they need is missing: that is their problem, reported as such).
Answer hand_job(const std::vector<loader::LoadedObject>& objects,
                const std::set<fs::path>& unchecked, const fs::path& work) {
  std::string script =
      "set -eo pipefail; cd " + shell_quoted(work.string()) + "; : > defined; : > undefined\n";
  for (const auto& object : objects) {
    // An object found through ld.so.cache or a system dir only defines:
    // the agent does not check a system library's own undefined symbols.
    // A default version (name@@VER) also satisfies an unversioned reference,
    // as the loader binds it. Each awk appends: `>` would empty the file
    // the first time each awk writes to it.
    const bool check = !object.system && !unchecked.contains(object.path);
    script += "nm -D --with-symbol-versions " + shell_quoted(object.path.string()) +
              " | c++filt | awk -v check=" + (check ? "1" : "0") +
              " '/^ +[Uw] /{ if (check && $1 == \"U\") { sub(/^ +U /, \"\"); "
              "print >> \"undefined\" } next } "
              "{ sub(/^[0-9a-f]+ . /, \"\"); if (index($0, \"@@\")) { bare = $0; "
              "sub(/@@.*/, \"\", bare); print bare >> \"defined\"; sub(/@@/, \"@\") } "
              "print >> \"defined\" }'\n";
  }
  script +=
      "sort -u defined > defined.sorted; sort -u undefined > undefined.sorted; "
      "comm -23 undefined.sorted defined.sorted > unresolved\n";
  Answer answer;
  const auto start = Clock::now();
  const int status = std::system(("bash -c " + shell_quoted(script)).c_str());
  answer.ms = elapsed_ms(start);
  if (status != 0) {
    std::fprintf(stderr, "linkage_bench: the nm | c++filt job failed\n");
    std::exit(2);
  }
  std::ifstream unresolved(work / "unresolved");
  for (std::string line; std::getline(unresolved, line);) {
    answer.unresolved.insert(line);
  }
  answer.objects = objects.size();
  return answer;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t count =
      argc > 1 ? static_cast<std::size_t>(std::max(1, std::atoi(argv[1]))) : 3;
  std::vector<fs::path> libraries;
  for (int i = 2; i < argc; ++i) {
    libraries.emplace_back(argv[i]);
  }
  if (libraries.empty()) {
    libraries = largest_libraries(count);
  }
  const fs::path work =
      fs::temp_directory_path() / ("envcontract-linkage-bench-" + std::to_string(::getpid()));
  fs::create_directories(work);
  // A plugin with a known answer, so that agreement means something: it
  // needs the `int` variant of the incident's symbol, which torch no longer
  // has, and loads a helper of its own (found through its RPATH, so checked
  // too) that needs a library call nothing defines, beside strlen from libc.
  {
    std::ofstream(work / "helper.c")
        << "#include <string.h>\nextern int bkcl_init(void);\n"
           "int helper_entry(const char* s) { return (int)strlen(s) + bkcl_init(); }\n";
    std::ofstream(work / "plugin.c")
        << "extern void _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib(void);\n"
           "extern int helper_entry(const char*);\n"
           "void plugin_entry(void) {\n"
           "  _ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib();\n"
           "  helper_entry(\"x\");\n}\n";
    const std::string dir = shell_quoted(work.string());
    const std::string build = "cd " + dir +
                              " && cc -shared -fPIC -o libhelper.so helper.c"
                              " && cc -shared -fPIC -o libplugin.so plugin.c -L. -lhelper"
                              " '-Wl,-rpath,$ORIGIN'";
    if (std::system(build.c_str()) != 0) {
      std::fprintf(stderr, "linkage_bench: cannot build the plugin library\n");
      return 2;
    }
    libraries.push_back(work / "libplugin.so");
  }
  loader::SearchEnvironment search;
  search.cache = std::make_shared<const loader::LdCache>(loader::LdCache::load());

  std::printf("Linkage check of %zu of the largest shared libraries here, median of %d runs\n",
              libraries.size(), k_runs);
  double worst_ratio = 1e9;
  bool agree = true;
  std::size_t unresolved_found = 0;
  for (const auto& library : libraries) {
    std::vector<double> agent_runs;
    std::vector<double> hand_runs;
    Answer agent;
    Answer hand;
    loader::ElfCache listing;
    const auto closure = loader::resolve_closure(library, {}, search, listing);
    const auto unchecked_list = loader::resolve_symbols(closure).unchecked;
    const std::set<fs::path> unchecked(unchecked_list.begin(), unchecked_list.end());
    for (int run = 0; run < k_runs; ++run) {
      agent = agent_job(library, search);
      agent_runs.push_back(agent.ms);
      hand = hand_job(closure.objects, unchecked, work);
      hand_runs.push_back(hand.ms);
    }
    std::sort(agent_runs.begin(), agent_runs.end());
    std::sort(hand_runs.begin(), hand_runs.end());
    const double agent_ms = agent_runs[k_runs / 2];
    const double hand_ms = hand_runs[k_runs / 2];
    const double ratio = hand_ms / agent_ms;
    if (library.parent_path() != work) {  // the plugin is for agreement, not the target
      worst_ratio = std::min(worst_ratio, ratio);
    }
    std::printf("  %s (%.0f MB; %zu objects loaded, %zu dynamic symbols)\n", library.c_str(),
                static_cast<double>(fs::file_size(library)) / 1e6, agent.objects, agent.symbols);
    std::printf("    baseline: nm -D | c++filt, awk    %9.1f ms, %zu unresolved\n", hand_ms,
                hand.unresolved.size());
    std::printf("    resolve_closure + resolve_symbols %9.1f ms, %zu unresolved (%.1fx faster)\n",
                agent_ms, agent.unresolved.size(), ratio);
    if (library.parent_path() != work) {
      bench_row("linkage of " + library.filename().string(), bench_figure(agent_ms, 1, " ms"),
                "nm -D and c++filt: " + bench_figure(hand_ms, 1, " ms"),
                bench_figure(ratio, 1, "x faster"), "at least 10x faster", ratio >= k_target_ratio);
    }
    unresolved_found += agent.unresolved.size();
    for (const auto& name : agent.unresolved) {
      std::printf("      unresolved: %s\n", name.c_str());
    }
    if (agent.unresolved != hand.unresolved) {
      agree = false;
      std::printf("    the answers differ:\n");
      for (const auto& name : agent.unresolved) {
        if (!hand.unresolved.contains(name)) {
          std::printf("      only the agent: %s\n", name.c_str());
        }
      }
      for (const auto& name : hand.unresolved) {
        if (!agent.unresolved.contains(name)) {
          std::printf("      only nm: %s\n", name.c_str());
        }
      }
    }
  }
  std::error_code ignored;
  fs::remove_all(work, ignored);
  std::printf("  target: at least %.0fx faster than the baseline\n", k_target_ratio);
  if (!agree) {
    std::printf("FAILED: the agent and nm disagree\n");
    return 1;
  }
  if (unresolved_found < 2) {
    std::printf("FAILED: the plugin's two unresolved symbols were not both found\n");
    return 1;
  }
  if (worst_ratio < k_target_ratio) {
    const std::string what =
        "only " + std::to_string(worst_ratio).substr(0, 4) + "x faster on the slowest library";
    return bench_missed(what.c_str());
  }
  std::printf("ok\n");
  return 0;
}
