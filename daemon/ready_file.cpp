#include "daemon/ready_file.hpp"

#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace envcontract::daemon {

std::string served_url(const ListenAddress& address, int port) {
  const std::string host =
      address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host;
  return "http://" + host + ":" + std::to_string(port) + "/";
}

namespace {

common::Error cannot_write(const std::filesystem::path& file, const std::string& why) {
  return common::Error{"cannot write the ready file " + file.string() + ": " + why +
                       " (give --ready-file a path in a directory that exists and that the "
                       "agent's user may write)"};
}

}  // namespace

common::Result<std::filesystem::path> write_ready_file(const std::filesystem::path& file,
                                                       const std::string& url) {
  if (file.empty()) {
    return file;
  }
  const std::filesystem::path temporary = file.string() + ".tmp";
  std::FILE* out = std::fopen(temporary.c_str(), "we");
  if (out == nullptr) {
    return cannot_write(file, std::strerror(errno));
  }
  const std::string line = url + "\n";
  const bool written = std::fwrite(line.data(), 1, line.size(), out) == line.size();
  const int write_error = errno;
  const bool closed = std::fclose(out) == 0;
  const int close_error = errno;
  std::error_code error;
  if (written && closed) {
    std::filesystem::rename(temporary, file, error);
    if (!error) {
      return file;
    }
  }
  std::error_code ignored;
  std::filesystem::remove(temporary, ignored);
  return cannot_write(file, error      ? error.message()
                            : !written ? std::strerror(write_error)
                                       : std::strerror(close_error));
}

common::Result<std::filesystem::path> announce_ready(const std::filesystem::path& file,
                                                     const std::string& url) {
  auto written = write_ready_file(file, url);
  if (written) {
    sd_notify(0, "READY=1");  // not under systemd: nothing to tell
  }
  return written;
}

}  // namespace envcontract::daemon
