#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "process/mount_table.hpp"
#include "process/read_dependencies.hpp"

// Tells whether anything an env's facts were read from has changed since
// they were read, from the kernel's own record of changes (fanotify marks
// on whole filesystems), so that a rescan of an unchanged env reads nothing.
//
// Only what the kernel reports is trusted: local disk filesystems (ext4,
// xfs, tmpfs...; btrfs when its root is mounted) that take a filesystem mark. A network filesystem
// changed by another machine, FUSE, overlayfs and container trees report
// nothing of what happens elsewhere, so a read that depended on one is never
// kept. When the kernel's queue of changes overflows, or more change at
// once than are followed, every read counts as changed. Changes are matched
// by path: each event's directory is found again from its handle, and what
// was renamed or removed on the way to a path (an ancestor) counts as a
// change of the path too; and a file read is matched by identity as well
// (its handle), since a change through another of its names (a hard link:
// conda links its package cache into envs) names no path of the env.
namespace envcontract::freshness {

// What made a read count as changed: its kind, the path when one is named,
// and the words people read (the first change seen).
struct Change {
  enum class Kind {
    path_changed,        // `path` changed; no path: a file read, through another of its names
    changed_while_read,  // the same, while the read ran: it may have seen the old contents
    not_watched,         // what it depends on cannot be watched (`text` says why)
    first_watch,         // its filesystem was first watched during the read
    lost,                // changes came faster, or in a form, the agent does not follow
    remounted,           // a filesystem it depends on was unmounted or replaced
    unfinished,          // the read did not finish
  };
  Kind kind = Kind::lost;
  // As its filesystem's own root names it, the mount point left out
  // (/tmp/x on a tmpfs mounted at /tmp is /x): changes are matched so, on
  // whichever mount they were made through.
  std::filesystem::path path;
  std::string text;
};

class ChangeWatch {
 public:
  // A watch, or nullptr and why not: filesystem marks need CAP_SYS_ADMIN
  // and Linux 5.9 (names with events). `max_logged`: the changes kept while
  // a read runs (matched once it names its paths); a read during which more
  // happened counts as changed.
  static std::shared_ptr<ChangeWatch> start(std::string& why_not,
                                            std::size_t max_logged = k_default_max_logged);
  static constexpr std::size_t k_default_max_logged = 16384;
  ~ChangeWatch();
  ChangeWatch(const ChangeWatch&) = delete;
  ChangeWatch& operator=(const ChangeWatch&) = delete;

  // One read's dependencies. Forgotten by the watch when released.
  class Interest;

  // Opened just before a read begins: every change from then on counts.
  std::shared_ptr<Interest> open();
  // Names what the read depended on, resolved through `mounts`; returns
  // "" or why they cannot be watched (the interest then counts as changed
  // for good). A filesystem first marked here counts as changed once: what
  // happened on it during the read was not seen.
  std::string settle(Interest& interest, const process::ReadDependencies& dependencies,
                     const process::MountTable& mounts);
  // What changed since the interest was opened (the first change seen), or
  // nullopt when nothing did. Reads every change the kernel has queued
  // until now first, so a change made just before this call counts.
  std::optional<Change> changed(Interest& interest);
  // A read that will not settle (it blocked, and its reader was left
  // behind): counts as changed, and no longer holds the changes' log open.
  void abandon(Interest& interest);

 private:
  struct Core;
  explicit ChangeWatch(std::shared_ptr<Core> core);
  std::shared_ptr<Core> m_core;
};

}  // namespace envcontract::freshness
