#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include "facts/env.hpp"

// Reading the small text files that describe envs (pyvenv.cfg, METADATA,
// version.py, conda-meta records, .condarc) without trusting them: any user
// of the host may have written them, so a file that is not a regular file (a
// FIFO would block the scan for good), too big, or made of absurdly long
// lines is refused with a reason, never read, and never parsed with a
// backtracking regex.
namespace envcontract::process {

// How much of a file of one kind the agent reads.
struct FileLimits {
  const char* kind;               // what the file is, for messages: "package metadata"
  std::size_t max_bytes;          // larger files are refused ...
  bool prefix_is_enough = false;  // ... unless their top is all we need (METADATA headers)
  std::size_t max_line = 0;       // a longer line refuses the file; 0: lines are not bounded
  // What files of this kind may add up to in one env (read_env_file, under
  // a FileProblemLog); 0: no bound. A thousand RECORDs linked to one large
  // file must not cost a thousand times that file.
  std::size_t max_bytes_per_env = 0;
};

namespace file_limits {
inline constexpr FileLimits metadata{"package metadata", 64 * 1024, true, 0};
inline constexpr FileLimits small_text{"small text file", 64 * 1024, false, 4096};
inline constexpr FileLimits python_source{"Python source", 256 * 1024, false, 4096};
// setuptools writes an editable install's MAPPING on one line, as long as
// the modules it maps make it.
inline constexpr FileLimits editable_finder{"editable install's import hook", 1024 * 1024, false,
                                            0};
// A real env's RECORDs add up to a few MB, tens with the largest SDKs
// (torch's is about 2 MB; each is summarised, then dropped); its conda-meta records to tens of
// MB (parsed, then dropped).
inline constexpr FileLimits record{"RECORD file list", 16 * 1024 * 1024, false, 64 * 1024,
                                   128 * 1024 * 1024};
inline constexpr FileLimits conda_record{"conda-meta record", 32 * 1024 * 1024, false, 0,
                                         512 * 1024 * 1024};
inline constexpr FileLimits conda_config{"conda configuration", 1024 * 1024, false, 64 * 1024};
inline constexpr FileLimits env_list{"list of envs", 1024 * 1024, false, 4096};
}  // namespace file_limits

// The outcome of reading one file: its text, or why it was refused. A file
// that does not exist or that the reading user may not read is neither: the
// interpreter would not see it either.
struct FileRead {
  std::optional<std::string> text;
  std::string refusal;  // "is a FIFO, not a regular file"; "" unless refused
};

FileRead read_file_bounded(const std::filesystem::path& path, const FileLimits& limits);

// Opens `path` for reading only if it is a regular file, without ever
// opening anything else (devices, FIFOs): -1 with `refusal` set when it is
// not one, -1 with `refusal` empty when it cannot be opened. `info` is its
// fstat. Used for every file taken from envs, shared libraries included.
int open_regular_file(const std::filesystem::path& path, struct stat& info, std::string& refusal);

using facts::FileProblem;

// Collects the refusals of read_env_file on this thread while it lives (the
// innermost log wins), so that gathering one env's facts can report every
// hostile file it met without threading a list through every reader.
class FileProblemLog {
 public:
  FileProblemLog();
  ~FileProblemLog();
  FileProblemLog(const FileProblemLog&) = delete;
  FileProblemLog& operator=(const FileProblemLog&) = delete;

  static void record(const std::filesystem::path& path, std::string problem);
  std::vector<FileProblem> take() { return std::move(m_problems); }
  // Bytes of files of `limits`' kind read under this log so far.
  std::size_t& read_so_far(const FileLimits& limits) { return m_read_per_kind[limits.kind]; }
  static FileProblemLog* innermost();

 private:
  FileProblemLog* m_outer;
  std::vector<FileProblem> m_problems;
  std::set<std::filesystem::path> m_paths;  // of m_problems
  std::map<std::string, std::size_t> m_read_per_kind;
};

// read_file_bounded for files taken from envs: a refusal goes to the
// thread's FileProblemLog and the file counts as unreadable.
std::optional<std::string> read_env_file(const std::filesystem::path& path,
                                         const FileLimits& limits);

// "key = value" lines (pyvenv.cfg); keys lower-cased, values trimmed; the
// last occurrence of a key wins, as when site.py reads pyvenv.cfg.
std::map<std::string, std::string> parse_key_values(const std::string& text);

// RFC 822-style headers up to the first blank line (METADATA, PKG-INFO).
// The first occurrence of a header wins.
std::map<std::string, std::string> parse_headers(const std::string& text);

// Module-level assignments of string literals or None, such as
// `__version__ = '2.10.0+cu129'` or `cuda = None`, read without running the
// code. Values are the literal's contents; None becomes nullopt.
std::map<std::string, std::optional<std::string>> parse_python_assignments(
    const std::string& source);

std::string trim(const std::string& text);

// [A-Za-z_][A-Za-z0-9_]*
bool is_python_identifier(std::string_view name);

// The first "N.N" or "N.N.N" in `text` (a run of digits and dots), or "".
std::string first_release_number(std::string_view text);

// A field of an untrusted JSON object as text: the string itself, "" when
// absent or null, the JSON text of anything else. Never throws on a type
// surprise, as nlohmann's value() would.
std::string text_field(const nlohmann::ordered_json& object, const char* key);

// While one lives, its thread's reads of paths below `root`, a tree on the
// host's disk (an image's rootfs, a --root tree), resolve inside it as
// reads below a running container's /proc/PID/root always do: an absolute
// link in the tree leads to the tree's own file (small_files' reads,
// listings and existence tests). "/" changes nothing. Scopes nest; the
// innermost tree counts.
class ReadingInsideTree {
 public:
  explicit ReadingInsideTree(const std::filesystem::path& root);
  ~ReadingInsideTree();
  ReadingInsideTree(const ReadingInsideTree&) = delete;
  ReadingInsideTree& operator=(const ReadingInsideTree&) = delete;

 private:
  std::string m_previous;
};

// Existence tests that never throw: an unreadable path simply does not count.
bool path_exists(const std::filesystem::path& path);
bool dir_exists(const std::filesystem::path& path);

// One entry of a listed directory.
struct ListedEntry {
  std::filesystem::path path;  // the directory's path / the entry's name
  bool is_link = false;
  bool is_directory = false;  // a link counts as what it leads to ...
  bool is_regular = false;    // ... resolved as the env would resolve it
};

// The entries of `dir` ("." and ".." left out), at most `max_entries` of
// them (0: no bound), in readdir's order; `error` says why it could not be
// listed. Under a process's root (/proc/PID/root/..., a running
// container's files) the directory and each link among its entries are
// resolved inside that root: an absolute link in the container leads to the
// container's directory, never to the host's directory of that name.
std::vector<ListedEntry> list_directory(const std::filesystem::path& dir, std::error_code& error,
                                        std::size_t max_entries = 0);
// Walks the tree below `dir` (resolved as list_directory resolves it),
// entering each subdirectory by a handle opened from its parent's with
// O_NOFOLLOW: a link is never entered, not even one an env's owner swaps in
// for a directory between two listings. `visit` gets each entry (its type
// as readdir says, a link not followed) and says whether to enter it when
// it is a directory. At most `max_dirs` directories are listed, none deeper
// than `max_depth` below `dir`; false when either bound cut the walk short.
bool walk_tree(const std::filesystem::path& dir, std::size_t max_dirs, std::size_t max_depth,
               const std::function<bool(const ListedEntry&)>& visit);

// The names alone, with no stat of a link (a library directory holds
// hundreds of them), resolved the same way.
std::vector<std::string> list_names(const std::filesystem::path& dir, std::error_code& error,
                                    std::size_t max_entries = 0);

}  // namespace envcontract::process
