#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "probes/cancellation.hpp"

// Reading an env's files can block for good: a FUSE server that stops
// answering, a dead network mount, a disk gone bad. Such a read sleeps in the
// kernel where nothing short of killing the process wakes it, so a deadline
// cannot interrupt it; what it can do is stop waiting. Each unit of reading
// (discovery, one env's facts) runs on a thread of its own: past its deadline
// the thread is left behind, still blocked, and the scan goes on with the
// others, reporting what the blocked reader was reading and where it sleeps.
// A unit whose earlier reader is still blocked is not started again until
// that reader returns, so a stuck filesystem costs one thread, not one per scan.
namespace envcontract::probes {

// What a reader that did not finish in time was doing.
struct Stall {
  std::string what;         // "the facts of env x"
  std::string last_path;    // the last file or directory it began to read, "" unknown
  std::string system_call;  // the call it is blocked in ("openat"), "" unknown
  std::string kernel_wait;  // the kernel function it sleeps in (wchan), "" unknown
  std::chrono::milliseconds deadline{0};
  std::string since;            // RFC 3339: when the blocked reader started
  bool from_earlier = false;    // still blocked since an earlier scan: not started again
  bool too_many = false;        // not started: too many readers are blocked already
  std::string cut_short;        // why it was no longer waited for (the scan was cancelled)
  bool running = false;         // the thread was running, not asleep: slow rather than stuck
  std::string same_filesystem;  // not started: on this filesystem, where another reader blocked

  // One sentence for reports and logs.
  std::string message() const;
};

// Runs `work` (given a cancellation it should honour) and waits at most
// `deadline` for it; nullopt when it finished (its exception, if any, is
// rethrown here). `key` names the unit: no two readers of one key are
// blocked at once. `outside` is forwarded to the work while it is waited for.
// Whatever `work` touches must be owned by it (captured shared_ptrs): once
// abandoned it may wake, and run on, long after this call has returned.
// A zero deadline runs `work` on the calling thread.
std::optional<Stall> run_bounded(const std::string& key, const std::string& what,
                                 std::chrono::milliseconds deadline, const Cancellation* outside,
                                 std::function<void(const Cancellation&)> work);

// Records that the calling thread starts reading `path`: the evidence a
// stall names. Costs a string copy; a no-op outside run_bounded's work.
void note_reading(const std::filesystem::path& path);

// Readers abandoned and still blocked.
std::size_t blocked_readers();

// Waits until no abandoned reader is blocked (for tests, after they unblock
// the filesystem); false when some still are after `timeout`.
bool wait_for_blocked_readers(std::chrono::milliseconds timeout);

}  // namespace envcontract::probes
