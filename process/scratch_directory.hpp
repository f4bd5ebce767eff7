#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "process/proc_stat.hpp"
#include "process/process_runner.hpp"
#include "process/unique_fd.hpp"

namespace envcontract::process {

// A process as its PID and its start time since boot (/proc/PID/stat's
// starttime, process_start_time()): together they name one process, even
// after the PID is reused.
struct ProcessIdentity {
  pid_t pid = 0;
  std::uint64_t start_time = 0;
};

// Reads the files a child wrote in its ScratchDirectory, through a
// descriptor of its own, so that it may outlive the directory: a reader left
// blocked on a stalled filesystem (a container's /tmp on a FUSE server that
// stopped answering) wakes, maybe long after, to a descriptor that is still
// its own. Every open stays below the directory and on its filesystem: a
// name there that a user turned into a mount point (fusermount needs no
// privilege on a directory one owns) fails instead of asking that mount.
class ScratchReader {
 public:
  ScratchReader(int dir_fd, uid_t owner);  // duplicates dir_fd
  ~ScratchReader();
  ScratchReader(const ScratchReader&) = delete;
  ScratchReader& operator=(const ScratchReader&) = delete;

  // A regular file (no symlink followed, no mount crossed) that belongs to
  // `owner`, at most `max_bytes`; nullopt otherwise.
  std::optional<std::string> read(const char* name, std::size_t max_bytes) const;

 private:
  int m_fd = -1;
  uid_t m_owner;
};

// A private directory for one child process: the files we hand it and the
// files it writes back. When the child runs as another user, the directory
// is given to that user (mode 0700), so what it writes there is that user's
// and nobody else's. Everything we do inside it afterwards goes through a
// descriptor of the directory, so renaming it or planting symlinks in it
// cannot make the agent (root) read or delete anything else.
class ScratchDirectory {
 public:
  // `owner`: the credentials the child will run with; unset for our own.
  // `prefix`: the name's start, e.g. "envcontract-probe".
  // `root`: the tree whose /tmp holds it, as the agent names the tree (a
  // container target's root; "/" the agent's own temporary directory).
  // Inside another tree, /tmp is opened below the root (openat2's
  // RESOLVE_IN_ROOT), so a symlink there cannot lead the agent out, and
  // file() names the directory as the container's processes see it.
  // `root_process`: when `root` is /proc/PID/root, that process as it was
  // when the tree was chosen; the directory is made only if the PID is still
  // that process once the tree is open (a PID reused by another process
  // would lead into another tree).
  ScratchDirectory(const char* prefix, const std::optional<Credentials>& owner,
                   const std::filesystem::path& root = "/",
                   const ProcessIdentity& root_process = {});
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  bool ok() const { return m_fd >= 0; }
  // Why it could not be made or handed over ("" while all went well).
  const std::string& error() const { return m_error; }
  // The path to give the child.
  std::filesystem::path file(const char* name) const { return m_path / name; }
  // Writes a file for the child to read (ours, mode 0644). Call before
  // hand_over().
  bool write(const char* name, std::string_view text);
  // Gives the directory to the child's user. Call after writing inputs.
  bool hand_over();
  // A file the child wrote: a regular file (no symlink is followed) that
  // belongs to the child's user, at most `max_bytes`. nullopt otherwise.
  std::optional<std::string> read(const char* name, std::size_t max_bytes) const;
  // A new FIFO `name` for the child's user to write into, opened by us for
  // reading (without blocking) and for writing: a reader sees the end of
  // its stream only once every writer, ours too, has closed it, so the
  // child may open its end later. Both ends are the FIFO made here (the
  // write end reopens the read end's own), whatever the user does to the
  // name meanwhile. Call after hand_over(). Empty ends, and error(), when
  // it cannot be made.
  struct FifoEnds {
    UniqueFd read;
    UniqueFd write;
  };
  FifoEnds make_fifo(const char* name);
  // Removes a file of the directory (no symlink followed).
  void remove(const char* name);
  // A reader of the same files that may outlive this object; null when the
  // directory was not made.
  std::shared_ptr<const ScratchReader> reader() const;

 private:
  void make_inside(const char* prefix, const std::filesystem::path& root,
                   const ProcessIdentity& root_process);
  std::filesystem::path m_path;  // as the child names it
  int m_fd = -1;
  int m_parent_fd = -1;  // inside another tree: its /tmp, which holds m_name
  std::string m_name;
  std::optional<Credentials> m_owner;
  std::string m_error;
};

// Removes what is below the directory `dir_fd` without following symlinks
// or entering mounts, bounded in depth and entries; true when it is empty
// afterwards.
bool remove_contents_at(int dir_fd, int depth = 0);

}  // namespace envcontract::process
