#include "daemon/ready_file.hpp"

#include <fstream>

namespace envcontract::daemon {

std::string served_url(const ListenAddress& address, int port) {
  const std::string host =
      address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host;
  return "http://" + host + ":" + std::to_string(port) + "/";
}

void write_ready_file(const std::filesystem::path& file, const std::string& url) {
  if (file.empty()) {
    return;
  }
  const auto temporary = file.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << url << "\n";
  }
  std::filesystem::rename(temporary, file);
}

}  // namespace envcontract::daemon
