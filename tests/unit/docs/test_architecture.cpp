// docs/ARCHITECTURE.md's dependency table is what the build does: every
// library a folder's CMakeLists.txt links is named in that folder's "may
// depend on" cell, so the table cannot drift from the build.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace envcontract {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// How the table names what CMake links; "" for what it does not list (the
// build's own options target, threads).
std::string documented_name(const std::string& target) {
  static const std::map<std::string, std::string> names = {
      {"nlohmann_json::nlohmann_json", "nlohmann-json"},
      {"yaml-cpp", "yaml-cpp"},
      {"PkgConfig::nettle", "Nettle"},
      {"Boost::headers", "Boost.Asio"},
      {"PkgConfig::libelf", "libelf"},
      {"PkgConfig::re2", "RE2"},
      {"CLI11::CLI11", "CLI11"},
      {"PkgConfig::sqlite3", "SQLite"},
      {"PkgConfig::httplib", "cpp-httplib"},
      {"PkgConfig::zlib", "zlib"},
      {"PkgConfig::libsystemd", "libsystemd"},
      {"spdlog::spdlog", "spdlog"},
      {"envcontract_options", ""},
      {"Threads::Threads", ""},
      {"PUBLIC", ""},
      {"PRIVATE", ""},
  };
  const auto found = names.find(target);
  return found != names.end() ? found->second : "`" + target + "`";
}

TEST(ArchitectureDoc, TheDependencyTableNamesWhatEachFolderLinks) {
  const std::string doc = read(ENVCONTRACT_SOURCE_DIR "/docs/ARCHITECTURE.md");
  int rows = 0;
  for (const char* folder : {"facts", "contracts", "common", "command_line", "process", "loader",
                             "discovery", "freshness", "probes", "report", "provisioning", "fleet",
                             "daemon", "web", "cli", "bench"}) {
    // The row: "| `folder/` | library | job | may depend on |".
    const std::string start = "| `" + std::string(folder) + "/` |";
    const auto at = doc.find(start);
    ASSERT_NE(at, std::string::npos) << folder << " has no row in docs/ARCHITECTURE.md";
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    const std::string depends = row.substr(row.rfind('|', row.size() - 2));
    ++rows;
    std::string cmake = read(ENVCONTRACT_SOURCE_DIR "/" + std::string(folder) + "/CMakeLists.txt");
    static const std::regex link(R"re(target_link_libraries\(\s*(\S+)([^)]*)\))re");
    for (std::sregex_iterator match(cmake.begin(), cmake.end(), link), end; match != end; ++match) {
      const std::string target = (*match)[1];
      std::istringstream items((*match)[2].str());
      for (std::string item; items >> item;) {
        const std::string name = documented_name(item);
        if (name.empty() || name == "`" + std::string(folder) + "`" || name == "`" + target + "`") {
          continue;  // the folder's own libraries linking each other
        }
        // A folder's executables link the folder's library: not a dependency.
        if (item == std::string(folder)) {
          continue;
        }
        EXPECT_NE(depends.find(name), std::string::npos)
            << folder << "/CMakeLists.txt links " << item << " (" << name
            << ") but docs/ARCHITECTURE.md's row says it may depend on: " << depends;
      }
    }
  }
  EXPECT_EQ(rows, 16);
}

}  // namespace
}  // namespace envcontract
