#include "daemon/secret_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/shown_path.hpp"

namespace envcontract::daemon {

common::Result<std::string> read_secret_file(const std::filesystem::path& path,
                                             const std::string& what) {
  const std::string shown = common::shown_path(path);
  // Opened once and judged by what was opened (a link is followed: config
  // management and secret volumes link their files; the file reached must
  // pass), so nothing can change between the check and the read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return common::Error{"cannot read the " + what + " " + shown + ": " + std::strerror(errno)};
  }
  struct stat info {};
  std::string problem;
  if (::fstat(fd, &info) != 0) {
    problem = "cannot read the " + what + " " + shown + ": " + std::strerror(errno);
  } else if (!S_ISREG(info.st_mode)) {
    problem = "the " + what + " " + shown + " is not a regular file";
  } else if (info.st_uid != ::geteuid()) {
    problem = "the " + what + " " + shown + " belongs to uid " + std::to_string(info.st_uid) +
              ", not to the agent's user (uid " + std::to_string(::geteuid()) +
              "): its owner knows the secret; run: chown " + std::to_string(::geteuid()) + " " +
              shown;
  } else if ((info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    problem = "the " + what + " " + shown + " is readable by others (mode " + mode +
              "); run: chmod 600 " + shown;
  }
  // A secret is a line, not a document: a longer file is refused whole,
  // never cut (a key cut short is not the file's; lines past the cut would
  // go unseen).
  constexpr std::size_t k_max_secret_bytes = 64 * 1024;
  std::string secret;
  if (problem.empty()) {
    char buffer[4096];
    ssize_t got = 0;
    while (secret.size() <= k_max_secret_bytes && (got = ::read(fd, buffer, sizeof buffer)) > 0) {
      secret.append(buffer, static_cast<std::size_t>(got));
    }
    if (got < 0) {
      problem = "cannot read the " + what + " " + shown + ": " + std::strerror(errno);
    } else if (secret.size() > k_max_secret_bytes) {
      problem = "the " + what + " " + shown + " holds more than " +
                std::to_string(k_max_secret_bytes / 1024) +
                " KiB: it must hold one value on one line (e.g. from: openssl rand -hex 32)";
    }
  }
  ::close(fd);
  if (!problem.empty()) {
    return common::Error{problem};
  }
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
