#include "daemon/secret_file.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/shown_path.hpp"

namespace envcontract::daemon {

common::Result<std::string> read_secret_file(const std::filesystem::path& path,
                                             const std::string& what) {
  const std::string shown = common::shown_path(path);
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return common::Error{"cannot read the " + what + " " + shown + ": " + std::strerror(errno)};
  }
  if ((info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return common::Error{"the " + what + " " + shown + " is readable by others (mode " + mode +
                         "); run: chmod 600 " + shown};
  }
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) {
    secret.pop_back();
  }
  if (secret.empty() || secret.find_first_of(" \t\r\n") != std::string::npos) {
    return common::Error{"the " + what + " " + shown +
                         " must hold one value on one line (e.g. from: openssl rand -hex 32)"};
  }
  return secret;
}

}  // namespace envcontract::daemon
