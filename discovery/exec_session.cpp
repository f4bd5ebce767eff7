#include "discovery/exec_session.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "discovery/exec_prefix.hpp"
#include "process/containment.hpp"
#include "process/output_capture.hpp"
#include "process/scratch_directory.hpp"

namespace envcontract::discovery {
namespace {

using Clock = std::chrono::steady_clock;

// Runs inside the container as the env's user, started by the exec
// bootstrap (which set the limits, emptied the environment but for the
// session's marker, and left the rest of stdin to it). Fixed text; $1 is
// the FIFO for its answers, opened once as fd 3. Reads requests on stdin,
// each a run of NUL-terminated fields: an id, the working directory, the
// FIFOs for stdout and stderr, the process's marker, the number of argv
// words, the words, NAME=value entries, an empty one, and "." (a request cut
// short is never run). Each process starts in a subshell that enters the
// directory as the user, exports the entries, its marker and the session's,
// and execs the command, in a process group of its own (`set -m`: its
// `kill 0` reaches nothing else; a bash without job control is refused).
// The script's own names are prefixed so that no entry of the env's is
// lost or changes what runs. A subshell around each waits for it and
// answers "ended ID STATUS"; the server says "ready" once it is up and
// answers "started ID" once it has started a process. Answers are one short write each (atomic on a
// FIFO), after a newline, so processes run side by side and a stray write of the user's cannot glue
// onto one. Nothing but the server holds the client's stdio: when the server ends, however, the
// client ends with it.
constexpr const char* k_server = R"sh(
exec 3>"$1" || exit 126
(set -m) 2>/dev/null || exit 125
printf '\nready\n' >&3
__envcontract_session=$ENVCONTRACT_PROBE
for __envcontract_name in $(compgen -e); do
  export -n "$__envcontract_name"
done
while IFS= read -r -d '' __envcontract_id && IFS= read -r -d '' __envcontract_dir &&
    IFS= read -r -d '' __envcontract_out && IFS= read -r -d '' __envcontract_err &&
    IFS= read -r -d '' __envcontract_marker && IFS= read -r -d '' __envcontract_count; do
  __envcontract_argv=()
  while [ "${#__envcontract_argv[@]}" -lt "$__envcontract_count" ] &&
      IFS= read -r -d '' __envcontract_word; do
    __envcontract_argv+=("$__envcontract_word")
  done
  __envcontract_vars=()
  while IFS= read -r -d '' __envcontract_entry && [ -n "$__envcontract_entry" ]; do
    __envcontract_vars+=("$__envcontract_entry")
  done
  IFS= read -r -d '' __envcontract_end && [ "$__envcontract_end" = . ] || break
  {
    set -m
    if [ -p "$__envcontract_out" ] && [ -p "$__envcontract_err" ]; then
      (
        cd -- "$__envcontract_dir" || exit 126
        set -- "$__envcontract_marker" "$__envcontract_session" "${__envcontract_argv[@]}"
        for __envcontract_entry in "${__envcontract_vars[@]}"; do
          export -- "$__envcontract_entry" 2>/dev/null ||
            printf 'envcontract: %s cannot be set inside the container\n' \
              "${__envcontract_entry%%=*}" >&2
        done
        unset -v __envcontract_entry
        export ENVCONTRACT_PROBE="$1" ENVCONTRACT_SESSION="$2"
        shift 2
        exec 3>&- "$@"
      ) </dev/null >"$__envcontract_out" 2>"$__envcontract_err" &
      wait "$!"
      printf '\nended %s %d\n' "$__envcontract_id" "$?" >&3
    else
      printf '\nended %s 125\n' "$__envcontract_id" >&3
    fi
  } </dev/null >/dev/null 2>&1 &
  printf '\nstarted %s\n' "$__envcontract_id" >&3
done
)sh";

// How long a request may take to be written, and then to be taken once
// the server is up (a server that reads nothing, stopped by a process of
// its user, or that cannot fork, is not waited for longer), and how long
// the client may take to start the server (an engine on a loaded host
// takes seconds): the process is then run elsewhere.
constexpr std::chrono::seconds k_request_limit{10};
constexpr std::chrono::seconds k_take_limit{10};
constexpr std::chrono::seconds k_start_limit{60};
// After a process was killed (time-out, cancellation), how long the server
// has to say that it ended before the session is given up.
constexpr std::chrono::seconds k_end_grace{5};
constexpr std::size_t k_kept_stderr = 4096;

std::atomic<std::size_t> g_started{0};

void append_field(std::string& request, const std::string& text) {
  request += text;
  request.push_back('\0');
}

// Whether `fd` can be written to within `limit`; writes `data` whole.
bool write_within(int fd, std::string_view data, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!data.empty()) {
    const ssize_t written = ::write(fd, data.data(), data.size());
    if (written > 0) {
      data.remove_prefix(static_cast<std::size_t>(written));
      continue;
    }
    if (written < 0 && errno != EAGAIN && errno != EINTR) {
      return false;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return false;
    }
    pollfd ready{fd, POLLOUT, 0};
    ::poll(&ready, 1, static_cast<int>(left.count()));
  }
  return true;
}

// The session's server as the env's user runs it, answering into `answers`
// (as the container names it).
process::ProcessSpec server_spec(const std::optional<process::Credentials>& credentials,
                                 const std::filesystem::path& answers) {
  process::ProcessSpec server;
  server.argv = {"/bin/bash", "--noprofile",         "--norc",        "-c",
                 k_server,    "envcontract-session", answers.string()};
  server.environment["PATH"] = process::k_system_path;
  server.working_dir = "/";
  server.credentials = credentials;
  return server;
}

class ExecSession {
 public:
  // Starts the client for `env`'s container and user.
  ExecSession(const facts::PythonEnv& env, const std::optional<process::Credentials>& credentials,
              const process::ResourceLimits& resources)
      : m_directory("envcontract-session", credentials, scratch_root(env),
                    scratch_root_process(env)),
        m_uid(credentials ? credentials->uid : ::geteuid()) {
    if (!m_directory.ok() || !m_directory.hand_over()) {
      m_error = "cannot make the session's private directory: " + m_directory.error();
      return;
    }
    m_answers = m_directory.make_fifo("answers");
    if (!m_answers.read) {
      m_error = "cannot make the session's FIFO: " + m_directory.error();
      return;
    }
    m_outer = through_prefix(env.exec, server_spec(credentials, m_directory.file("answers")));
    m_client = process::start_attached(m_outer, resources);
    if (m_client.pid < 0) {
      m_error = m_client.error;
      return;
    }
    ++g_started;
    m_marker_value = m_client.marker.substr(m_client.marker.find('=') + 1);
    m_stop = process::UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    ::fcntl(m_client.in.get(), F_SETFL, ::fcntl(m_client.in.get(), F_GETFL) | O_NONBLOCK);
    // The bootstrap's part of stdin first: the server's environment.
    if (!m_stop || !write_within(m_client.in.get(), m_outer.stdin_data, k_request_limit)) {
      m_error = "the exec session took nothing on its stdin";
      process::end_attached(m_client, m_outer);
      return;
    }
    m_reader = std::thread([this] { read_answers(); });
  }

  // Ends the server's loop, and so the client, without waiting for it:
  // sessions closed together end side by side.
  void close_input() {
    std::lock_guard lock(m_write_mutex);
    m_client.in.reset();
    if (m_close_by == Clock::time_point()) {
      m_close_by =
          Clock::now() + std::chrono::seconds(1);  // sessions told together end by one time
    }
  }

  ~ExecSession() {
    if (m_client.pid < 0) {
      return;
    }
    // Its stdin closed, the server's loop ends and the client with it; what
    // is left (nothing, after a scan) is killed by end_attached. A session
    // given up may still hold a request it should not run: killed first.
    bool given_up = false;
    {
      std::lock_guard lock(m_mutex);
      given_up = m_retired && !m_ended_client;
    }
    if (given_up) {
      // (Its descriptors stay open until the reader has stopped.)
      ::kill(m_client.pid, SIGKILL);
      kill_marked(m_client.marker);
    }
    close_input();
    if (m_reader.joinable()) {
      while (!given_up && !client_ended() && Clock::now() < m_close_by) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto ignored = ::write(m_stop.get(), &one, sizeof one);
      m_reader.join();
    }
    process::end_attached(m_client, m_outer);
    // What a wrapper started as the server was killed: twice, the second
    // for what the first one's victims had started.
    for (int sweep = 0; sweep < 2; ++sweep) {
      kill_marked(std::string(process::k_session_marker) + "=" + m_marker_value);
    }
  }

  ExecSession(const ExecSession&) = delete;
  ExecSession& operator=(const ExecSession&) = delete;

  // Why it could not start ("" when it did).
  const std::string& error() const { return m_error; }

  // Whether it takes no more processes: its client ended, or it was given
  // up (a request it did not take, a process it did not answer for).
  bool retired() const {
    std::lock_guard lock(m_mutex);
    return m_retired || m_ended_client;
  }
  // Whether its server ever started a process: one that never did (its
  // answers cannot be written, its bash cannot keep processes apart) is
  // not replaced by another of the same kind.
  bool took_any() const {
    std::lock_guard lock(m_mutex);
    return m_took_any;
  }

  // The process's result; nullopt when the session ended before it took
  // the process, which never started: to be run elsewhere.
  std::optional<process::ProcessResult> run(const process::ProcessSpec& inside,
                                            const process::ProcessLimits& limits,
                                            const process::TimeoutHook& on_timeout);

 private:
  // The client's stdout (the server's answers) and stderr, on a thread of
  // their own until the client ends.
  void read_answers();
  void take_answer(std::string_view line);
  // The client ended: every process waiting is woken.
  void end_client();
  bool client_ended() const {
    std::lock_guard lock(m_mutex);
    return m_ended_client;
  }
  // No new process is given to it; those running keep waiting for theirs.
  void retire() {
    std::lock_guard lock(m_mutex);
    m_retired = true;
  }
  // Writes `request` whole by `deadline`; else retires the session, whose
  // server may have a part of it (cut short, never run).
  bool send(const std::string& request, Clock::time_point deadline);
  // The first-started process of this session's user that carries `marker`
  // (the command itself, before its children), or 0.
  pid_t first_marked(const std::string& marker) const;
  void kill_marked(const std::string& marker) const;
  std::vector<pid_t> marked_with(const std::string& marker) const;

  process::ScratchDirectory m_directory;
  uid_t m_uid;
  process::ScratchDirectory::FifoEnds m_answers;  // ours stays open for writing: no end of file
  process::ProcessSpec m_outer;
  process::AttachedProcess m_client;
  std::string m_marker_value;
  std::string m_error;
  process::UniqueFd m_stop;  // written to end the reader
  std::thread m_reader;
  std::atomic<unsigned> m_next_id{0};
  std::mutex m_write_mutex;        // one request at a time on stdin
  Clock::time_point m_close_by{};  // once its stdin is closed: when its client is ended
  mutable std::mutex m_mutex;
  bool m_ended_client = false;
  bool m_retired = false;
  bool m_took_any = false;            // the server started a process
  Clock::time_point m_ready_at{};     // when the server said it was up
  std::set<unsigned> m_started;       // ids the server said it started
  std::map<unsigned, int> m_ended;    // id -> the status the server answered
  std::map<unsigned, int> m_waiting;  // id -> an eventfd to wake its waiter
  std::string m_stderr;               // the client's, its last k_kept_stderr bytes
};

bool ExecSession::send(const std::string& request, Clock::time_point deadline) {
  std::lock_guard lock(m_write_mutex);
  if (retired() || !m_client.in) {
    return false;
  }
  const auto left =
      std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                 std::chrono::milliseconds(1), std::chrono::milliseconds(k_request_limit));
  if (write_within(m_client.in.get(), request, left)) {
    return true;
  }
  // A part may be in the pipe: nothing more is written after it (the
  // server never runs a request without its end), and what runs keeps
  // running (closing stdin would end the server, and the session with it).
  retire();
  return false;
}

void ExecSession::end_client() {
  std::lock_guard lock(m_mutex);
  m_ended_client = true;
  const std::uint64_t one = 1;
  for (const auto& [id, fd] : m_waiting) {
    [[maybe_unused]] const auto ignored = ::write(fd, &one, sizeof one);
  }
}

void ExecSession::take_answer(std::string_view line) {
  // "started ID" or "ended ID STATUS": anything else (a process of the
  // user may write here too) is dropped.
  constexpr std::string_view k_started = "started ";
  constexpr std::string_view k_ended = "ended ";
  if (line == "ready") {
    std::lock_guard lock(m_mutex);
    if (m_ready_at == Clock::time_point()) {
      m_ready_at = Clock::now();
    }
    return;
  }
  if (line.starts_with(k_started)) {
    line.remove_prefix(k_started.size());
    unsigned id = 0;
    for (const char c : line) {
      if (c < '0' || c > '9' || id > 100'000'000) {
        return;
      }
      id = id * 10 + static_cast<unsigned>(c - '0');
    }
    std::lock_guard lock(m_mutex);
    if (m_waiting.contains(id)) {
      m_started.insert(id);
      m_took_any = true;
    }
    return;
  }
  if (!line.starts_with(k_ended)) {
    return;
  }
  line.remove_prefix(k_ended.size());
  const auto space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 10 || line.size() - space > 4) {
    return;
  }
  unsigned id = 0;
  int status = 0;
  for (const char c : line.substr(0, space)) {
    if (c < '0' || c > '9') {
      return;
    }
    id = id * 10 + static_cast<unsigned>(c - '0');
  }
  for (const char c : line.substr(space + 1)) {
    if (c < '0' || c > '9') {
      return;
    }
    status = status * 10 + (c - '0');
  }
  if (status > 255) {
    return;
  }
  std::lock_guard lock(m_mutex);
  const auto waiting = m_waiting.find(id);
  if (waiting == m_waiting.end()) {
    return;  // no such process waits: not the server's answer
  }
  m_ended.insert_or_assign(id, status);
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto ignored = ::write(waiting->second, &one, sizeof one);
}

void ExecSession::read_answers() {
  std::string line;
  bool err_open = true;
  std::array<char, 4096> buffer{};
  for (;;) {
    pollfd fds[4] = {{m_client.out.get(), POLLIN, 0},
                     {err_open ? m_client.err.get() : -1, POLLIN, 0},
                     {m_answers.read.get(), POLLIN, 0},
                     {m_stop.get(), POLLIN, 0}};
    if (::poll(fds, 4, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if (fds[3].revents != 0) {
      break;
    }
    if (fds[2].revents != 0) {
      const ssize_t got = ::read(m_answers.read.get(), buffer.data(), buffer.size());
      for (ssize_t i = 0; i < got; ++i) {
        if (buffer[i] == '\n') {
          take_answer(line);
          line.clear();
        } else if (line.size() < 64) {
          line.push_back(buffer[i]);
        } else {
          line = "x";  // too long for an answer: dropped up to its end
        }
      }
    }
    if (fds[1].revents != 0) {
      const ssize_t got = ::read(m_client.err.get(), buffer.data(), buffer.size());
      if (got <= 0) {
        err_open = false;
      } else {
        std::lock_guard lock(m_mutex);
        m_stderr.append(buffer.data(), static_cast<std::size_t>(got));
        if (m_stderr.size() > k_kept_stderr) {
          m_stderr.erase(0, m_stderr.size() - k_kept_stderr);
        }
      }
    }
    // The server writes nothing there: its end is the server's (or the
    // client's) end.
    if (fds[0].revents != 0 && ::read(m_client.out.get(), buffer.data(), buffer.size()) <= 0) {
      break;
    }
  }
  end_client();
}

pid_t ExecSession::first_marked(const std::string& marker) const {
  return process::first_started_of(marked_with(marker), m_uid);
}

std::vector<pid_t> ExecSession::marked_with(const std::string& marker) const {
  // Only the container's pid namespace is looked at when its process is
  // known (as run_process does for a runtime's client).
  return m_outer.inside_process > 0
             ? process::find_marked_processes_in(marker, m_outer.inside_process)
             : process::find_marked_processes(marker);
}

void ExecSession::kill_marked(const std::string& marker) const {
  for (const pid_t marked : marked_with(marker)) {
    ::kill(marked, SIGKILL);
  }
}

// A request to the session's server: its id, where the process runs and
// writes, its marker, argv and environment, NUL-separated (the agent's
// markers are the server's to set).
std::string request_text(unsigned id, const process::ProcessSpec& inside,
                         const std::string& out_path, const std::string& err_path,
                         const std::string& marker_value) {
  std::string request;
  append_field(request, std::to_string(id));
  append_field(request, inside.working_dir.empty() ? "/" : inside.working_dir.string());
  append_field(request, out_path);
  append_field(request, err_path);
  append_field(request, marker_value);
  append_field(request, std::to_string(inside.argv.size()));
  for (const auto& word : inside.argv) {
    append_field(request, word);
  }
  for (const auto& [name, value] : inside.environment) {
    // A NUL would end the entry early: such a value cannot be passed whole.
    if (!name.empty() && name.find('\0') == std::string::npos &&
        value.find('\0') == std::string::npos && name != process::k_probe_marker &&
        name != process::k_session_marker) {
      append_field(request, name + "=" + value);
    }
  }
  request.push_back('\0');
  append_field(request, ".");
  return request;
}

// How a process run through the session ended. `cancelled`: the
// cancellation that stopped it, or null; `client_stderr`: what the
// runtime's client said, for a process whose session ended under it.
void conclude_exec(process::ProcessResult& result, const std::optional<int>& status, bool timed_out,
                   const process::Cancellation* cancelled, const std::string& client_stderr) {
  if (timed_out) {
    result.outcome = process::ProcessResult::Outcome::timed_out;
    result.signal = SIGKILL;
  } else if (cancelled != nullptr) {
    result.outcome = process::ProcessResult::Outcome::cancelled;
    result.signal = SIGKILL;
    result.cancel_reason = cancelled->reason();
  } else if (status) {
    // As the runtime's client reports a command's end: a status (128+N
    // for a signal).
    result.outcome = process::ProcessResult::Outcome::exited;
    result.exit_code = *status;
  } else {
    // The client ended under it (the container stopped, a process of its
    // user killed the server): how it ended is unknown, so it is not
    // judged as an exit of its own.
    result.outcome = process::ProcessResult::Outcome::cancelled;
    result.signal = SIGKILL;
    // The client's last words (the engine's own message), on one line: the
    // reason becomes a stage's one-line summary.
    // (npos + 1 is 0: no such character, all of it.)
    std::string last = client_stderr.substr(0, client_stderr.find_last_not_of(" \n") + 1);
    last = last.substr(last.rfind('\n') + 1);
    result.cancel_reason = "the container's exec session ended while it ran" +
                           (last.empty() ? std::string() : ": " + last.substr(0, 300));
  }
}

// One function from the request to the process's end, on purpose: the
// FIFOs, the registration with the server's reader and the marker sweep
// are scoped to the process's life, and the loop below decides, from what
// the server said, the FIFOs and the clock together, when that life ends.
std::optional<process::ProcessResult> ExecSession::run(const process::ProcessSpec& inside,
                                                       const process::ProcessLimits& limits,
                                                       const process::TimeoutHook& on_timeout) {
  process::ProcessResult result;
  const auto started = Clock::now();
  if (limits.cancellation != nullptr && limits.cancellation->cancelled()) {
    result.outcome = process::ProcessResult::Outcome::cancelled;
    result.cancel_reason = limits.cancellation->reason();
    return result;
  }
  const auto has_nul = [](const std::string& word) { return word.find('\0') != std::string::npos; };
  if (retired() || std::any_of(inside.argv.begin(), inside.argv.end(), has_nul) ||
      has_nul(inside.working_dir.string())) {
    return std::nullopt;  // (a NUL would shift the request's fields: run elsewhere)
  }
  const unsigned id = ++m_next_id;
  const std::string out_name = "o" + std::to_string(id);
  const std::string err_name = "e" + std::to_string(id);
  auto out = m_directory.make_fifo(out_name.c_str());
  auto err = m_directory.make_fifo(err_name.c_str());
  struct Removal {
    process::ScratchDirectory& directory;
    const std::string& out;
    const std::string& err;
    ~Removal() {
      directory.remove(out.c_str());
      directory.remove(err.c_str());
    }
  } removal{m_directory, out_name, err_name};
  if (!out.read || !err.read) {
    // Its directory is the user's: not to be trusted with another process.
    retire();
    return std::nullopt;
  }
  process::UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) {
    result.error = std::string("eventfd: ") + std::strerror(errno);
    return result;
  }
  {
    std::lock_guard lock(m_mutex);
    m_waiting.emplace(id, wake.get());
  }
  struct Unregistration {
    ExecSession& session;
    unsigned id;
    ~Unregistration() {
      std::lock_guard lock(session.m_mutex);
      session.m_waiting.erase(id);
      session.m_started.erase(id);
      session.m_ended.erase(id);
    }
  } unregistration{*this, id};

  const std::string marker_value = m_marker_value + "." + std::to_string(id);
  const std::string marker = std::string(process::k_probe_marker) + "=" + marker_value;
  const std::string request =
      request_text(id, inside, m_directory.file(out_name.c_str()).string(),
                   m_directory.file(err_name.c_str()).string(), marker_value);
  // Whatever way this ends, nothing of the process is left running: its
  // marker is swept (after its end, its descendants; on an exception from
  // the time-out hook, the process itself).
  struct Sweep {
    const ExecSession& session;
    const std::string& marker;
    ~Sweep() { session.kill_marked(marker); }
  } sweep{*this, marker};
  const auto fixed_deadline = started + limits.timeout;
  if (!send(request, limits.deadline ? limits.deadline() : fixed_deadline)) {
    return std::nullopt;
  }
  const auto sent_at = Clock::now();

  process::OutputCapture out_capture(limits.max_output_bytes);
  process::OutputCapture err_capture(limits.max_output_bytes);
  bool out_open = true;
  bool err_open = true;
  std::optional<int> status;
  bool session_ended = false;
  bool taken = false;  // the server said it started it
  Clock::time_point ready_at{};
  bool timed_out = false;
  bool cancelled = false;
  Clock::time_point stopped_at = Clock::time_point::max();
  Clock::time_point drain_deadline = Clock::time_point::max();
  std::array<char, 65536> buffer{};
  const auto drain = [&](process::UniqueFd& fd, process::OutputCapture& capture, bool& open) {
    for (;;) {
      const ssize_t got = ::read(fd.get(), buffer.data(), buffer.size());
      if (got > 0) {
        capture.append(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
        continue;
      }
      if (got == 0) {
        open = false;  // every writer has closed it (ours is closed once it ended)
      }
      return;
    }
  };
  for (;;) {
    const auto now = Clock::now();
    auto wait = std::chrono::milliseconds(20);
    if (!status && !timed_out && !cancelled) {
      const auto deadline = limits.deadline ? limits.deadline() : fixed_deadline;
      wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now),
                        std::chrono::milliseconds(0), wait);
    }
    pollfd fds[3] = {{out_open ? out.read.get() : -1, POLLIN, 0},
                     {err_open ? err.read.get() : -1, POLLIN, 0},
                     {wake.get(), POLLIN, 0}};
    ::poll(fds, 3, static_cast<int>(wait.count()));
    if (out_open && fds[0].revents != 0) {
      drain(out.read, out_capture, out_open);
    }
    if (err_open && fds[1].revents != 0) {
      drain(err.read, err_capture, err_open);
    }
    std::uint64_t count = 0;
    [[maybe_unused]] const auto ignored = ::read(wake.get(), &count, sizeof count);
    if (!status) {
      std::lock_guard lock(m_mutex);
      if (const auto found = m_ended.find(id); found != m_ended.end()) {
        status = found->second;
      }
      taken = taken || m_started.contains(id);
      session_ended = m_ended_client;
      ready_at = m_ready_at;
    }
    if (status) {
      if (drain_deadline == Clock::time_point::max()) {
        // Ended: once its descendants close them too, the FIFOs end.
        out.write.reset();
        err.write.reset();
        drain_deadline = Clock::now() + limits.drain_grace;
        continue;
      }
      if ((!out_open && !err_open) || Clock::now() >= drain_deadline) {
        break;
      }
      continue;
    }
    if (session_ended) {
      break;
    }
    const bool ready = ready_at != Clock::time_point();
    if (!taken && (ready ? Clock::now() >= std::max(sent_at, ready_at) + k_take_limit
                         : Clock::now() >= sent_at + k_start_limit)) {
      // The server does not take it (stopped, unable to fork): given up,
      // and the process runs elsewhere; should the server take it later,
      // the session's end ends it.
      retire();
      break;
    }
    if (timed_out || cancelled) {
      if (Clock::now() >= stopped_at + k_end_grace) {
        // Killed, and the server still does not say so: given no more
        // processes (those it runs keep waiting for theirs).
        retire();
        break;
      }
      continue;
    }
    const auto deadline = limits.deadline ? limits.deadline() : fixed_deadline;
    if (Clock::now() >= deadline) {
      timed_out = true;
    } else if (limits.cancellation != nullptr && limits.cancellation->cancelled()) {
      cancelled = true;
    } else {
      continue;
    }
    stopped_at = Clock::now();
    if (timed_out && on_timeout) {
      if (const pid_t command = first_marked(marker); command > 0) {
        on_timeout(command);
      }
    }
    kill_marked(marker);
  }
  if (!status && !taken && !timed_out && !cancelled) {
    return std::nullopt;  // never started: the server ended or did not take it
  }

  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      (stopped_at != Clock::time_point::max() ? stopped_at : Clock::now()) - started);
  result.take_output(out_capture, err_capture);
  std::string last_words;
  if (!timed_out && !cancelled && !status) {
    std::lock_guard lock(m_mutex);
    last_words = m_stderr;
  }
  conclude_exec(result, status, timed_out, cancelled ? limits.cancellation : nullptr, last_words);
  return result;
}

// The sessions of the scopes held, by container, user and limits.
class SessionPool {
 public:
  void enter() {
    std::lock_guard lock(m_mutex);
    ++m_scopes;
  }
  void leave() {
    std::map<std::string, std::shared_ptr<Slot>> closing;
    {
      std::lock_guard lock(m_mutex);
      if (--m_scopes > 0) {
        return;
      }
      closing.swap(m_slots);
    }
    // Closed here, outside the lock, as the last reference goes (a process
    // still running in one keeps it until it ends); all told to end first.
    for (const auto& [key, slot] : closing) {
      std::lock_guard lock(slot->mutex);
      if (slot->session) {
        slot->session->close_input();
      }
    }
  }

  // The open session for `key`, started now if there is none; null when
  // no scope is held or it cannot start.
  std::shared_ptr<ExecSession> session(const std::string& key, const facts::PythonEnv& env,
                                       const std::optional<process::Credentials>& credentials,
                                       const process::ResourceLimits& resources) {
    std::shared_ptr<Slot> slot;
    {
      std::lock_guard lock(m_mutex);
      if (m_scopes == 0) {
        return nullptr;
      }
      auto& found = m_slots[key];
      if (!found) {
        found = std::make_shared<Slot>();
      }
      slot = found;
    }
    // Envs of one container and user wait for the one session being started.
    std::lock_guard lock(slot->mutex);
    if (slot->session && !slot->session->retired()) {
      return slot->session;
    }
    if (slot->session && !slot->session->took_any()) {
      slot->broken = true;  // its processes run through execs of their own from now on
    }
    if (slot->broken) {
      return nullptr;
    }
    auto started = std::make_shared<ExecSession>(env, credentials, resources);
    if (!started->error().empty()) {
      return nullptr;
    }
    slot->session = started;
    return started;
  }

 private:
  struct Slot {
    std::mutex mutex;
    std::shared_ptr<ExecSession> session;
    bool broken = false;  // a session of its key never started a process
  };
  std::mutex m_mutex;
  int m_scopes = 0;
  std::map<std::string, std::shared_ptr<Slot>> m_slots;
};

// Never destroyed: a scope may end as the process exits.
SessionPool& g_pool = *new SessionPool;

}  // namespace

ExecSessionScope::ExecSessionScope() {
  g_pool.enter();
}

ExecSessionScope::~ExecSessionScope() {
  g_pool.leave();
}

std::size_t exec_sessions_started() {
  return g_started.load();
}

process::ProcessResult run_env_process(const facts::PythonEnv& env,
                                       const process::ProcessSpec& inside,
                                       const process::ProcessLimits& limits,
                                       const process::TimeoutHook& on_timeout) {
  if (env.exec.empty() || !env.exec.runtime_client || !inside.stdin_data.empty()) {
    return process::run_process(env_process(env, inside), limits, on_timeout);
  }
  // One session per client command line (container and user), root process
  // and limits.
  const process::ProcessSpec outer = through_prefix(env.exec, server_spec(inside.credentials, ""));
  std::string key = std::to_string(env.exec.root_process) + ":" +
                    std::to_string(env.exec.root_process_start) + ":" +
                    process::limits_for_bootstrap(limits.resources, outer.unprivileged_inside);
  for (const auto& word : outer.argv) {
    key += '\0' + word;
  }
  // A session that ended before it took the process (a process of the
  // user killed the server, the container stopped) is replaced once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto session = g_pool.session(key, env, inside.credentials, limits.resources);
    if (!session) {
      break;
    }
    if (auto result = session->run(inside, limits, on_timeout)) {
      return std::move(*result);
    }
  }
  return process::run_process(env_process(env, inside), limits, on_timeout);
}

}  // namespace envcontract::discovery
