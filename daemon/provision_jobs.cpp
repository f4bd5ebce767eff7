#include "daemon/provision_jobs.hpp"

#include "common/time_text.hpp"

namespace envcontract::daemon {

report::Json to_json(const ProvisionJob& job) {
  return {{"id", job.id},
          {"action", job.action},
          {"name", job.name},
          {"env", job.env},
          {"requested_by", job.requested_by},
          {"state", job.state},
          {"exit_code", job.state == "done" ? report::Json(job.exit_code) : report::Json(nullptr)},
          {"lines", job.lines},
          {"queued_at", job.queued_at},
          {"finished_at",
           job.finished_at.empty() ? report::Json(nullptr) : report::Json(job.finished_at)}};
}

LineStream::LineStream(std::function<void(const std::string&)> print)
    : std::ostream(nullptr), m_buffer(std::move(print)) {
  rdbuf(&m_buffer);
}

LineStream::~LineStream() {
  m_buffer.flush_line();
}

void LineStream::Buffer::flush_line() {
  if (!m_line.empty()) {
    m_print(m_line);
    m_line.clear();
  }
}

LineStream::Buffer::int_type LineStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) {
    return traits_type::not_eof(c);
  }
  const char ch = traits_type::to_char_type(c);
  if (ch == '\n') {
    m_print(m_line);
    m_line.clear();
  } else if (ch != '\r' && m_line.size() < 64 * 1024) {
    m_line += ch;
  }
  return c;
}

ProvisionJobs::ProvisionJobs(Runner runner) : m_runner(std::move(runner)) {
  m_thread = std::thread([this] { run(); });
}

ProvisionJobs::~ProvisionJobs() {
  stop();
}

void ProvisionJobs::stop() {
  {
    std::lock_guard lock(m_mutex);
    if (m_stopping && !m_thread.joinable()) {
      return;
    }
    m_stopping = true;
  }
  m_cancel.cancel("the agent is stopping");
  m_wake.notify_all();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

common::Result<std::int64_t> ProvisionJobs::submit(ProvisionJob job) {
  std::lock_guard lock(m_mutex);
  if (m_stopping) {
    return common::Error{"the agent is stopping"};
  }
  std::size_t waiting = 0;
  for (const auto& queued : m_jobs) {
    waiting += queued.state == "queued" ? 1 : 0;
  }
  if (waiting >= max_queued) {
    return common::Error{std::to_string(waiting) +
                         " provisions are already waiting; try again when they have run"};
  }
  job.id = m_next_id++;
  job.state = "queued";
  job.queued_at = common::now_rfc3339();
  m_jobs.push_back(std::move(job));
  // Finished jobs beyond what GET keeps go, oldest first.
  std::size_t finished = 0;
  for (const auto& kept : m_jobs) {
    finished += kept.state == "done" ? 1 : 0;
  }
  while (finished > max_kept && !m_jobs.empty() && m_jobs.front().state == "done") {
    m_jobs.pop_front();
    --finished;
  }
  m_wake.notify_all();
  return m_jobs.back().id;
}

std::optional<ProvisionJob> ProvisionJobs::get(std::int64_t id) const {
  std::lock_guard lock(m_mutex);
  for (const auto& job : m_jobs) {
    if (job.id == id) {
      return job;
    }
  }
  return std::nullopt;
}

ProvisionJob* ProvisionJobs::find(std::int64_t id) {
  for (auto& job : m_jobs) {
    if (job.id == id) {
      return &job;
    }
  }
  return nullptr;
}

void ProvisionJobs::run() {
  for (;;) {
    ProvisionJob job;
    {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, [this] {
        if (m_stopping) {
          return true;
        }
        for (const auto& queued : m_jobs) {
          if (queued.state == "queued") {
            return true;
          }
        }
        return false;
      });
      if (m_stopping) {
        return;
      }
      for (auto& queued : m_jobs) {
        if (queued.state == "queued") {
          queued.state = "running";
          job = queued;
          break;
        }
      }
    }
    const auto print = [this, id = job.id](const std::string& line) {
      std::lock_guard lock(m_mutex);
      if (auto* running = find(id)) {
        running->lines.push_back(line);
        if (running->lines.size() > max_lines) {
          running->lines.erase(running->lines.begin());
        }
      }
    };
    int exit_code = 2;
    try {
      exit_code = m_runner(job, m_cancel, print);
    } catch (const std::exception& e) {
      print(std::string("the agent failed: ") + e.what());
    }
    std::lock_guard lock(m_mutex);
    if (auto* finished = find(job.id)) {
      finished->state = "done";
      finished->exit_code = exit_code;
      finished->finished_at = common::now_rfc3339();
    }
  }
}

}  // namespace envcontract::daemon
