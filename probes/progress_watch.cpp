#include "probes/progress_watch.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace envcontract::probes {

struct ProgressWatch::State {
  std::shared_ptr<const process::ScratchReader> reader;
  std::string name;
  std::size_t max_bytes = 0;
  std::chrono::milliseconds interval{};
  mutable std::mutex mutex;
  std::condition_variable wake;  // stop asked
  std::condition_variable ended;
  std::string text;
  bool stop = false;
  bool done = false;
};

ProgressWatch::ProgressWatch(std::shared_ptr<const process::ScratchReader> reader, const char* name,
                             std::size_t max_bytes, std::chrono::milliseconds interval)
    : m_state(std::make_shared<State>()) {
  m_state->reader = std::move(reader);
  m_state->name = name;
  m_state->max_bytes = max_bytes;
  m_state->interval = interval;
  if (!m_state->reader) {
    m_state->done = true;
    return;
  }
  std::thread([state = m_state] {
    std::unique_lock lock(state->mutex);
    while (!state->stop) {
      lock.unlock();
      auto text = state->reader->read(state->name.c_str(), state->max_bytes);
      lock.lock();
      if (text) {
        state->text = std::move(*text);
      }
      state->wake.wait_for(lock, state->interval, [&] { return state->stop; });
    }
    state->done = true;
    state->ended.notify_all();
  }).detach();
}

ProgressWatch::~ProgressWatch() {
  std::unique_lock lock(m_state->mutex);
  m_state->stop = true;
  m_state->wake.notify_all();
  // A thread between reads ends at once; one blocked in a read is not
  // waited for past this.
  m_state->ended.wait_for(lock, std::chrono::milliseconds(200), [&] { return m_state->done; });
}

std::string ProgressWatch::text() const {
  std::lock_guard lock(m_state->mutex);
  return m_state->text;
}

}  // namespace envcontract::probes
