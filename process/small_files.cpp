#include "process/small_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <sstream>
#include <utility>

#include "common/json_text.hpp"
#include "process/stall_guard.hpp"
#include "process/system_root.hpp"

namespace envcontract::process {

namespace {

thread_local FileProblemLog* t_innermost_log = nullptr;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_identifier_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool is_identifier_char(char c) {
  return is_identifier_start(c) || is_digit(c);
}

std::string file_type_name(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  return "not a regular file";
}

std::string byte_count(std::size_t bytes) {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0) {
    return std::to_string(bytes / (1024 * 1024)) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) {
    return std::to_string(bytes / 1024) + " KiB";
  }
  return std::to_string(bytes) + " bytes";
}

std::size_t longest_line(std::string_view text) {
  std::size_t longest = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    const std::size_t length = (end == std::string_view::npos ? text.size() : end) - start;
    longest = std::max(longest, length);
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return longest;
}

// The tree this thread reads below (ReadingInsideTree), "" for none.
thread_local std::string t_tree_root;

// The length of the root that `text` lies below, or 0: a process's root
// ("/proc/PID/root", how the agent reads a running container's files) or
// the tree this thread reads (an image's rootfs, a --root tree).
std::size_t root_length(const std::string& text) {
  constexpr std::string_view k_proc = "/proc/";
  const auto pid_end = text.starts_with(k_proc) ? text.find('/', k_proc.size()) : std::string::npos;
  if (pid_end != std::string::npos && text.compare(pid_end, 6, "/root/") == 0 &&
      is_process_root(text.substr(0, pid_end + 5))) {
    return pid_end + 5;
  }
  const std::string& tree = t_tree_root;
  return !tree.empty() && text.size() > tree.size() + 1 && text.starts_with(tree) &&
                 text[tree.size()] == '/'
             ? tree.size()
             : 0;
}

bool under_a_root(const std::string& text) {
  return root_length(text) > 0;
}

// An O_PATH handle of `path`. Below a root (root_length) the rest is
// resolved as the root's own processes would resolve it (openat2's
// RESOLVE_IN_ROOT): an absolute link in a container or an image leads to
// its own file, never to the host's file of that name, which the kernel
// would follow from the agent's own root.
int open_path_as_seen(const std::filesystem::path& path) {
  const std::string text = path.string();
  if (const std::size_t root = root_length(text); root > 0) {
    const SystemRoot tree(text.substr(0, root));
    return tree.open_inside(text.substr(root), O_PATH, true);
  }
  return ::open(path.c_str(), O_PATH | O_CLOEXEC);
}

}  // namespace

ReadingInsideTree::ReadingInsideTree(const std::filesystem::path& root)
    : m_previous(std::exchange(t_tree_root, std::string())) {
  const std::string normal = root.lexically_normal().string();
  const std::string trimmed =
      normal.size() > 1 && normal.ends_with('/') ? normal.substr(0, normal.size() - 1) : normal;
  // The host's "/" is no tree, and a process's root is known by its name.
  if (root.is_absolute() && trimmed != "/" && !is_process_root(trimmed)) {
    t_tree_root = trimmed;
  }
}

ReadingInsideTree::~ReadingInsideTree() {
  t_tree_root = std::move(m_previous);
}

int open_regular_file(const std::filesystem::path& path, struct stat& info, std::string& refusal) {
  // Looked at before it is opened: opening a device has effects of its own
  // (a watchdog arms, a tape rewinds), and opening a FIFO with no writer
  // waits forever. O_PATH opens nothing; the file is reopened through
  // /proc/self/fd only once it is known to be a regular file, so a rename in
  // between cannot swap in something else.
  note_reading(path);
  const int handle = open_path_as_seen(path);
  if (handle < 0) {
    return -1;
  }
  if (::fstat(handle, &info) != 0) {
    ::close(handle);
    return -1;
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(handle);
    refusal = "is " + file_type_name(info.st_mode) + ", not a regular file";
    return -1;
  }
  const std::string reopen = "/proc/self/fd/" + std::to_string(handle);
  const int fd = ::open(reopen.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  ::close(handle);
  return fd;
}

FileRead read_file_bounded(const std::filesystem::path& path, const FileLimits& limits) {
  FileRead result;
  struct stat info {};
  const int fd = open_regular_file(path, info, result.refusal);
  if (fd < 0) {
    return result;
  }
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size > limits.max_bytes && !limits.prefix_is_enough) {
    ::close(fd);
    result.refusal = "is " + std::to_string(size) + " bytes, over the " +
                     byte_count(limits.max_bytes) + " limit for a " + limits.kind;
    return result;
  }
  // Grow with what is there: the limit bounds hostile files, it is not a
  // size hint. One byte more than the limit tells a file that grew.
  std::string text;
  const std::size_t wanted = limits.prefix_is_enough ? limits.max_bytes : limits.max_bytes + 1;
  char chunk[65536];
  while (text.size() < wanted) {
    const ssize_t got = ::read(fd, chunk, std::min(sizeof chunk, wanted - text.size()));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      ::close(fd);
      return {};
    }
    if (got == 0) {
      break;
    }
    text.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(fd);
  if (text.size() > limits.max_bytes) {
    result.refusal = "grew past the " + byte_count(limits.max_bytes) + " limit for a " +
                     std::string(limits.kind) + " while it was read";
    return result;
  }
  if (limits.max_line != 0) {
    if (const std::size_t longest = longest_line(text); longest > limits.max_line) {
      result.refusal = "has a line of " + std::to_string(longest) + " bytes, over the " +
                       byte_count(limits.max_line) + " limit for a " + limits.kind;
      return result;
    }
  }
  result.text = std::move(text);
  return result;
}

FileProblemLog::FileProblemLog() : m_outer(t_innermost_log) {
  t_innermost_log = this;
}

FileProblemLog::~FileProblemLog() {
  t_innermost_log = m_outer;
}

void FileProblemLog::record(const std::filesystem::path& path, std::string problem) {
  // Once per path, and a bounded number in all: a crafted library met at
  // every step of a resolution must not fill the log.
  constexpr std::size_t k_max_problems = 4096;
  FileProblemLog* log = t_innermost_log;
  if (log != nullptr && log->m_problems.size() < k_max_problems &&
      log->m_paths.insert(path).second) {
    log->m_problems.push_back({path, std::move(problem)});
  }
}

FileProblemLog* FileProblemLog::innermost() {
  return t_innermost_log;
}

std::optional<std::string> read_env_file(const std::filesystem::path& path,
                                         const FileLimits& limits) {
  FileProblemLog* log = FileProblemLog::innermost();
  std::size_t* read_so_far =
      limits.max_bytes_per_env != 0 && log != nullptr ? &log->read_so_far(limits) : nullptr;
  const auto over_budget = [&] {
    FileProblemLog::record(path, std::string("is not read: the env's ") + limits.kind +
                                     "s add up to more than " +
                                     std::to_string(limits.max_bytes_per_env >> 20) +
                                     " MiB (links to one large file?)");
    *read_so_far = limits.max_bytes_per_env;
    return std::nullopt;
  };
  if (read_so_far != nullptr && *read_so_far >= limits.max_bytes_per_env) {
    return over_budget();
  }
  auto read = read_file_bounded(path, limits);
  if (!read.refusal.empty()) {
    FileProblemLog::record(path, std::move(read.refusal));
  }
  if (read_so_far != nullptr && read.text) {
    if (read.text->size() > limits.max_bytes_per_env - *read_so_far) {
      return over_budget();
    }
    *read_so_far += read.text->size();
  }
  return std::move(read.text);
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

bool is_python_identifier(std::string_view name) {
  return !name.empty() && is_identifier_start(name.front()) &&
         std::all_of(name.begin(), name.end(), is_identifier_char);
}

std::string first_release_number(std::string_view text) {
  // Leftmost N.N(.N)?; a run of digits that does not start one cannot have
  // a later start inside it either, so each run is tried once: linear time.
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_digit(text[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    auto digits = [&](std::size_t from) {
      std::size_t end = from;
      while (end < text.size() && is_digit(text[end])) {
        ++end;
      }
      return end;
    };
    const std::size_t major_end = digits(start);
    if (major_end < text.size() && text[major_end] == '.') {
      const std::size_t minor_end = digits(major_end + 1);
      if (minor_end > major_end + 1) {
        std::size_t end = minor_end;
        if (end < text.size() && text[end] == '.') {
          const std::size_t micro_end = digits(end + 1);
          if (micro_end > end + 1) {
            end = micro_end;
          }
        }
        return std::string(text.substr(start, end - start));
      }
    }
    i = major_end;
  }
  return {};
}

std::string text_field(const nlohmann::ordered_json& object, const char* key) {
  if (!object.is_object()) {
    return {};
  }
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return {};
  }
  return it->is_string() ? it->get<std::string>() : common::json_text(*it);
}

namespace {

// stat(2) of `path`, under a process's root resolved as open_path_as_seen
// resolves it (a link to "/opt/..." in a container is the container's).
bool stat_as_seen(const std::filesystem::path& path, struct stat& info) {
  note_reading(path);
  if (!under_a_root(path.string())) {
    return ::stat(path.c_str(), &info) == 0;
  }
  const int fd = open_path_as_seen(path);
  if (fd < 0) {
    return false;
  }
  const bool found = ::fstat(fd, &info) == 0;
  ::close(fd);
  return found;
}

}  // namespace

bool path_exists(const std::filesystem::path& path) {
  struct stat info {};
  return stat_as_seen(path, info);
}

bool dir_exists(const std::filesystem::path& path) {
  struct stat info {};
  return stat_as_seen(path, info) && S_ISDIR(info.st_mode);
}

namespace {

using Listing = std::unique_ptr<DIR, int (*)(DIR*)>;

// `dir` opened for readdir, resolved as open_path_as_seen resolves it.
Listing open_listing(const std::filesystem::path& dir, std::error_code& error) {
  error.clear();
  note_reading(dir);
  Listing none(nullptr, ::closedir);
  const int handle = open_path_as_seen(dir);
  if (handle < 0) {
    error = std::error_code(errno, std::generic_category());
    return none;
  }
  // O_PATH lists nothing: the directory is reopened by its handle, so what
  // is listed is what was resolved.
  const std::string reopen = "/proc/self/fd/" + std::to_string(handle);
  const int fd = ::open(reopen.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int open_errno = errno;
  ::close(handle);
  if (fd < 0) {
    error = std::error_code(open_errno, std::generic_category());
    return none;
  }
  Listing listing(::fdopendir(fd), ::closedir);
  if (!listing) {
    error = std::error_code(errno, std::generic_category());
    ::close(fd);
  }
  return listing;
}

// Calls `visit(entry)` for each entry but "." and ".." until it returns
// false; `error` says why reading stopped early.
template <typename Visit>
void for_each_entry(const Listing& listing, std::error_code& error, Visit visit) {
  errno = 0;
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != ".." && !visit(*entry)) {
      return;
    }
    errno = 0;
  }
  if (errno != 0) {
    error = std::error_code(errno, std::generic_category());
  }
}

// The entry's type as readdir gave it; where the file system does not say,
// lstat(2) of it relative to the listed directory (`dir_fd`), so it is
// that directory's entry that is asked about.
unsigned char entry_type(int dir_fd, const dirent& entry) {
  if (entry.d_type != DT_UNKNOWN) {
    return entry.d_type;
  }
  struct stat info {};
  if (::fstatat(dir_fd, entry.d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) {
    return DT_UNKNOWN;
  }
  return S_ISLNK(info.st_mode)   ? DT_LNK
         : S_ISDIR(info.st_mode) ? DT_DIR
         : S_ISREG(info.st_mode) ? DT_REG
                                 : DT_UNKNOWN;
}

}  // namespace

std::vector<ListedEntry> list_directory(const std::filesystem::path& dir, std::error_code& error,
                                        std::size_t max_entries) {
  std::vector<ListedEntry> entries;
  const Listing listing = open_listing(dir, error);
  if (!listing) {
    return entries;
  }
  for_each_entry(listing, error, [&](const dirent& entry) {
    if (max_entries != 0 && entries.size() >= max_entries) {
      return false;
    }
    ListedEntry listed{dir / entry.d_name};
    const unsigned char type = entry_type(::dirfd(listing.get()), entry);
    if (type == DT_LNK) {
      listed.is_link = true;
      struct stat info {};
      if (stat_as_seen(listed.path, info)) {
        listed.is_directory = S_ISDIR(info.st_mode);
        listed.is_regular = S_ISREG(info.st_mode);
      }
    } else {
      listed.is_directory = type == DT_DIR;
      listed.is_regular = type == DT_REG;
    }
    entries.push_back(std::move(listed));
    return true;
  });
  return entries;
}

bool walk_tree(const std::filesystem::path& dir, std::size_t max_dirs, std::size_t max_depth,
               const std::function<bool(const ListedEntry&)>& visit) {
  struct Level {
    Listing listing;
    std::filesystem::path path;
  };
  std::vector<Level> levels;
  std::error_code error;
  if (Listing top = open_listing(dir, error)) {
    levels.push_back({std::move(top), dir});
  }
  std::size_t listed = levels.size();
  bool whole = true;
  while (!levels.empty()) {
    Level& level = levels.back();
    errno = 0;
    const dirent* entry = ::readdir(level.listing.get());
    if (entry == nullptr) {
      levels.pop_back();
      continue;
    }
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") {
      continue;
    }
    const int parent = ::dirfd(level.listing.get());
    const unsigned char type = entry_type(parent, *entry);
    const ListedEntry listed_entry{level.path / name, type == DT_LNK, type == DT_DIR,
                                   type == DT_REG};
    if (!visit(listed_entry) || !listed_entry.is_directory) {
      continue;
    }
    if (levels.size() > max_depth || listed >= max_dirs) {
      whole = false;
      continue;
    }
    const int child =
        ::openat(parent, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child < 0) {
      continue;  // gone, swapped for a link, or not ours to read: not entered
    }
    Listing child_listing(::fdopendir(child), ::closedir);
    if (!child_listing) {
      ::close(child);
      continue;
    }
    ++listed;
    levels.push_back({std::move(child_listing), listed_entry.path});
  }
  return whole;
}

std::vector<std::string> list_names(const std::filesystem::path& dir, std::error_code& error,
                                    std::size_t max_entries) {
  std::vector<std::string> names;
  const Listing listing = open_listing(dir, error);
  if (!listing) {
    return names;
  }
  for_each_entry(listing, error, [&](const dirent& entry) {
    if (max_entries != 0 && names.size() >= max_entries) {
      return false;
    }
    names.emplace_back(entry.d_name);
    return true;
  });
  return names;
}

std::map<std::string, std::string> parse_key_values(const std::string& text) {
  std::map<std::string, std::string> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto equals = line.find('=');
    if (equals == std::string::npos || trim(line).starts_with("#")) {
      continue;
    }
    std::string key = trim(line.substr(0, equals));
    for (auto& c : key) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    values.insert_or_assign(key, trim(line.substr(equals + 1)));
  }
  return values;
}

std::map<std::string, std::string> parse_headers(const std::string& text) {
  std::map<std::string, std::string> headers;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (trim(line).empty()) {
      break;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos || line.starts_with(" ") || line.starts_with("\t")) {
      continue;
    }
    headers.emplace(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  return headers;
}

namespace {

// One line of `name [: annotation] = 'text' | "text" | None [# comment]`,
// scanned left to right once: no backtracking, whatever the line holds.
struct Assignment {
  std::string name;
  std::optional<std::string> value;
};

std::optional<Assignment> scan_assignment(std::string_view line) {
  std::size_t at = 0;
  const auto skip_blanks = [&] {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t' || line[at] == '\f')) {
      ++at;
    }
  };
  if (line.empty() || !is_identifier_start(line[0])) {
    return std::nullopt;
  }
  while (at < line.size() && is_identifier_char(line[at])) {
    ++at;
  }
  Assignment assignment{std::string(line.substr(0, at)), std::nullopt};
  skip_blanks();
  if (at < line.size() && line[at] == ':') {  // an annotation: Optional[str]
    ++at;
    skip_blanks();
    const std::size_t start = at;
    constexpr std::string_view annotation_chars = "._[], ";
    while (at < line.size() && (is_identifier_char(line[at]) ||
                                annotation_chars.find(line[at]) != std::string_view::npos)) {
      ++at;
    }
    if (at == start) {
      return std::nullopt;
    }
  }
  if (at >= line.size() || line[at] != '=') {
    return std::nullopt;
  }
  ++at;
  skip_blanks();
  if (at < line.size() && (line[at] == '\'' || line[at] == '"')) {
    const char quote = line[at++];
    const std::size_t start = at;
    while (at < line.size() && line[at] != quote) {
      if (line[at] == '\\') {
        return std::nullopt;  // escapes: not a plain literal
      }
      ++at;
    }
    if (at >= line.size()) {
      return std::nullopt;
    }
    assignment.value = std::string(line.substr(start, at - start));
    ++at;
  } else if (line.substr(at, 4) == "None" &&
             (at + 4 == line.size() || !is_identifier_char(line[at + 4]))) {
    at += 4;
  } else {
    return std::nullopt;
  }
  skip_blanks();
  if (at < line.size() && line[at] != '#') {
    return std::nullopt;
  }
  return assignment;
}

}  // namespace

std::map<std::string, std::optional<std::string>> parse_python_assignments(
    const std::string& source) {
  std::map<std::string, std::optional<std::string>> values;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (auto assignment = scan_assignment(line)) {
      // Later assignments win, as when Python runs the module.
      values[assignment->name] = std::move(assignment->value);
    }
  }
  return values;
}

}  // namespace envcontract::process
