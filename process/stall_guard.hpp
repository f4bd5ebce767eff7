#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "facts/host.hpp"
#include "process/cancellation.hpp"

// Reading an env's files can block for good: a FUSE server that stops
// answering, a dead network mount, a disk gone bad. Such a read sleeps in the
// kernel where nothing short of killing the process wakes it, so a deadline
// cannot interrupt it; what it can do is stop waiting. Each unit of reading
// (discovery, one env's facts) runs on a thread of its own: past its deadline
// the thread is left behind, still blocked, and the scan goes on with the
// others, reporting what the blocked reader was reading and where it sleeps.
// A unit whose earlier reader is still blocked is not started again until
// that reader returns, so a stuck filesystem costs one thread, not one per scan.
namespace envcontract::process {

using facts::Stall;

// Runs `work` (given a cancellation it should honour) and waits at most
// `deadline` for it; nullopt when it finished (its exception, if any, is
// rethrown here). `key` names the unit: no two readers of one key are
// blocked at once. `outside` is forwarded to the work while it is waited for.
// Whatever `work` touches must be owned by it (captured shared_ptrs): once
// abandoned it may wake, and run on, long after this call has returned.
// A zero deadline runs `work` on the calling thread. Once `outside` is
// cancelled, the work is waited for at most `cancel_grace` more.
std::optional<Stall> run_bounded(
    const std::string& key, const std::string& what, std::chrono::milliseconds deadline,
    const Cancellation* outside, std::function<void(const Cancellation&)> work,
    std::chrono::milliseconds cancel_grace = std::chrono::milliseconds(500));

// Records that the calling thread starts reading `path`: the evidence a
// stall names. Costs a string copy; a no-op outside run_bounded's work.
void note_reading(const std::filesystem::path& path);

// Readers abandoned and still blocked.
std::size_t blocked_readers();

// Waits until no abandoned reader is blocked (for tests, after they unblock
// the filesystem); false when some still are after `timeout`.
bool wait_for_blocked_readers(std::chrono::milliseconds timeout);

}  // namespace envcontract::process
