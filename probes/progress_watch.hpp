#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "process/scratch_directory.hpp"

namespace envcontract::probes {

// Follows a file a running child writes (a chain's progress) from a thread
// of its own. The process runner asks for the child's deadline at every
// poll; had it read the file itself, a read that blocks for good (the
// child's /tmp on a FUSE server that stopped answering) would leave the
// child running past its time-out, unkilled. Here such a read stalls only
// this thread, and the text stays what it last was.
class ProgressWatch {
 public:
  // Reads `name` through `reader` now and then every `interval`, at most
  // `max_bytes` of it.
  ProgressWatch(std::shared_ptr<const process::ScratchReader> reader, const char* name,
                std::size_t max_bytes,
                std::chrono::milliseconds interval = std::chrono::milliseconds(20));
  // Stops the thread; one blocked in a read is left behind (it owns what it uses).
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  // The file's text as last read ("" before the first read).
  std::string text() const;

 private:
  struct State;
  std::shared_ptr<State> m_state;
};

}  // namespace envcontract::probes
