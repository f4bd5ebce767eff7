// libFuzzer target: any bytes as the agent's config file (agent.yaml). The
// reader must answer with settings or errors, never crash, hang or leak.
// It reads a path, so each input is written to one file first.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/agent_config.hpp"

namespace {

// The file each input is written to, removed when the fuzzer exits.
class ConfigFile {
 public:
  ConfigFile()
      : m_path(std::filesystem::temp_directory_path() /
               ("fuzz_agent_config." + std::to_string(::getpid()) + ".yaml")) {}
  ~ConfigFile() {
    std::error_code ignored;
    std::filesystem::remove(m_path, ignored);
  }
  ConfigFile(const ConfigFile&) = delete;
  ConfigFile& operator=(const ConfigFile&) = delete;

  const std::filesystem::path& holding(const std::uint8_t* data, std::size_t size) const {
    std::ofstream out(m_path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return m_path;
  }

 private:
  std::filesystem::path m_path;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ConfigFile file;
  envcontract::daemon::AgentConfig config;
  (void)envcontract::daemon::read_agent_config(file.holding(data, size), config);
  return 0;
}
