#include "provisioning/promotion.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/shown_path.hpp"

namespace envcontract::provisioning {
namespace fs = std::filesystem;
namespace {

struct Directory {
  int fd = -1;
  ~Directory() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

std::optional<std::string> read_link_at(int dir, const std::string& name) {
  std::string buffer(4096, '\0');
  const auto length = ::readlinkat(dir, name.c_str(), buffer.data(), buffer.size());
  if (length < 0 || static_cast<std::size_t>(length) >= buffer.size()) {
    return std::nullopt;
  }
  buffer.resize(static_cast<std::size_t>(length));
  return buffer;
}

// Makes `name` in `dir` a link to `target` in one rename: a link of a
// temporary name first, then renamed over it.
std::string replace_link_at(int dir, const std::string& name, const std::string& target) {
  const std::string temporary = "." + name + ".switch-" + std::to_string(::getpid());
  ::unlinkat(dir, temporary.c_str(), 0);
  if (::symlinkat(target.c_str(), dir, temporary.c_str()) != 0) {
    return std::string("cannot make a link there: ") + std::strerror(errno);
  }
  if (::renameat(dir, temporary.c_str(), dir, name.c_str()) != 0) {
    const int saved = errno;
    ::unlinkat(dir, temporary.c_str(), 0);
    return std::string("cannot switch the link: ") + std::strerror(saved);
  }
  return "";
}

common::Result<LinkSwitch> switch_at(const fs::path& link, const fs::path& target,
                                     const facts::RunAs* as, bool keep_previous) {
  std::optional<process::ReadingAs> reading;
  if (as != nullptr) {
    reading.emplace(*as);
    if (!reading->ok()) {
      return common::Error{"cannot take the credentials of " + as->user + " to switch " +
                           common::shown_path(link)};
    }
  }
  const auto parent = link.parent_path();
  const std::string name = link.filename().string();
  if (name.empty() || name == "." || name == "..") {
    return common::Error{common::shown_path(link) + " does not name a link"};
  }
  Directory dir;
  dir.fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd < 0) {
    return common::Error{"cannot open " + common::shown_path(parent) + ": " + std::strerror(errno)};
  }
  LinkSwitch result{link, target, std::nullopt};
  struct stat info {};
  if (::fstatat(dir.fd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISLNK(info.st_mode)) {
      return common::Error{common::shown_path(link) +
                           " is a real env or file, not a link: it is never replaced; move it "
                           "away first, or promote under another name"};
    }
    if (const auto old = read_link_at(dir.fd, name)) {
      result.previous = *old;
    }
  }
  if (const auto problem = replace_link_at(dir.fd, name, target.string()); !problem.empty()) {
    return common::Error{common::shown_path(link) + ": " + problem};
  }
  if (keep_previous && result.previous && *result.previous != target) {
    const auto kept = previous_link_of(link).filename().string();
    if (const auto problem = replace_link_at(dir.fd, kept, result.previous->string());
        !problem.empty()) {
      return common::Error{common::shown_path(link) + " was switched, but its previous target " +
                           "could not be kept for rollback: " + problem};
    }
  }
  return result;
}

}  // namespace

fs::path previous_link_of(const fs::path& link) {
  return link.parent_path() / ("." + link.filename().string() + ".previous");
}

std::optional<fs::path> link_target(const fs::path& link) {
  std::error_code error;
  if (!fs::is_symlink(fs::symlink_status(link, error))) {
    return std::nullopt;
  }
  const auto target = fs::read_symlink(link, error);
  return error ? std::nullopt : std::optional(target);
}

common::Result<LinkSwitch> switch_link(const fs::path& link, const fs::path& target,
                                       const facts::RunAs* as) {
  return switch_at(link, target, as, true);
}

common::Result<LinkSwitch> rollback_link(const fs::path& link, const facts::RunAs* as) {
  const auto previous = link_target(previous_link_of(link));
  if (!previous) {
    return common::Error{common::shown_path(link) +
                         " has no previous target to go back to (it was never switched by "
                         "promote)"};
  }
  return switch_at(link, *previous, as, true);
}

}  // namespace envcontract::provisioning
