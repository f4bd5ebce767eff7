#include "provisioning/provisioner.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/shown_path.hpp"

namespace envcontract::provisioning {
namespace fs = std::filesystem;
namespace {

// The last `lines` lines of `text`.
std::string tail_lines(const std::string& text, std::size_t lines) {
  std::size_t at = text.size();
  while (at > 0 && (text[at - 1] == '\n')) {
    --at;
  }
  std::size_t found = 0;
  std::size_t start = at;
  while (start > 0) {
    if (text[start - 1] == '\n' && ++found == lines) {
      break;
    }
    --start;
  }
  return text.substr(start, at - start);
}

// argv[0] as the runner needs it: absolute, found on the step's PATH.
std::optional<std::string> resolve_program(const std::string& program,
                                           const std::map<std::string, std::string>& env) {
  if (program.find('/') != std::string::npos) {
    return program.starts_with("/") ? std::optional(program) : std::nullopt;
  }
  const auto path = env.find("PATH");
  std::istringstream dirs(path == env.end() ? std::string() : path->second);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir) / program;
    if (!dir.empty() && dir.front() == '/' && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  return std::nullopt;
}

process::ProcessResult run_as_user(const PreparedProvision& prepared, std::vector<std::string> argv,
                                   const std::map<std::string, std::string>& environment,
                                   const fs::path& working_dir, const std::string& stdin_data,
                                   const ProvisionSettings& settings) {
  process::ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.environment = facts::Environment(environment.begin(), environment.end());
  spec.working_dir = working_dir;
  spec.stdin_data = stdin_data;
  spec.credentials = prepared.credentials;
  process::ProcessLimits limits;
  limits.timeout = settings.step_timeout;
  limits.max_output_bytes = settings.max_output_bytes;
  limits.cancellation = settings.cancellation;
  limits.resources = settings.resources;
  return process::run_process(spec, limits);
}

}  // namespace

std::string provisioning_user_problem(const facts::RunAs& user) {
  if (user.is_root()) {
    return "provisioning never runs as root: name an unprivileged user (provisioning.user, "
           "--user)";
  }
  const bool root_group =
      user.gid == 0 || std::find(user.groups.begin(), user.groups.end(), 0) != user.groups.end();
  if (root_group) {
    return "the provisioning user " + user.user +
           " is in root's group (gid 0): name a user outside it";
  }
  return "";
}

NameLock::NameLock(const fs::path& envs_dir, const std::string& name, const facts::RunAs* as) {
  const fs::path file = envs_dir / ("." + name + ".lock");
  std::optional<process::ReadingAs> reading;
  if (as != nullptr) {
    reading.emplace(*as);
    if (!reading->ok()) {
      m_problem =
          "cannot take the credentials of " + as->user + " to lock " + common::shown_path(file);
      return;
    }
  }
  m_fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (m_fd < 0) {
    m_problem = "cannot open the lock " + common::shown_path(file) + ": " + std::strerror(errno);
    return;
  }
  if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    m_problem = errno == EWOULDBLOCK
                    ? "another provision of '" + name + "' is running (it holds " +
                          common::shown_path(file) + "); wait for it to finish"
                    : "cannot lock " + common::shown_path(file) + ": " + std::strerror(errno);
    ::close(m_fd);
    m_fd = -1;
  }
}

NameLock::~NameLock() {
  if (m_fd >= 0) {
    ::close(m_fd);  // releases the flock
  }
}

common::Result<PreparedProvision> prepare_provision(const contracts::ProvisionRecipe& recipe,
                                                    const std::string& name,
                                                    const ProvisionSettings& settings) {
  if (const auto problem = env_name_problem(name); !problem.empty()) {
    return common::Error{problem};
  }
  std::error_code error;
  if (settings.envs_dir.empty() || !settings.envs_dir.is_absolute() ||
      !fs::is_directory(settings.envs_dir, error)) {
    return common::Error{
        "the envs directory " +
        (settings.envs_dir.empty()
             ? std::string("is not set")
             : common::shown_path(settings.envs_dir) + " is not an existing absolute directory") +
        ": set provisioning.envs_dir in the agent's config, or --envs-dir"};
  }
  PreparedProvision prepared;
  prepared.prefix = settings.envs_dir / name;
  struct stat info {};
  if (::lstat(prepared.prefix.c_str(), &info) == 0) {
    return common::Error{common::shown_path(prepared.prefix) +
                         " exists: provision builds a new env beside the others and never "
                         "modifies one; choose another name (or remove that one yourself)"};
  }
  if (::geteuid() == 0) {
    if (settings.user.empty()) {
      return common::Error{
          "name the user the steps run as (provisioning.user in the agent's config, or "
          "--user): provisioning never runs as root"};
    }
    prepared.run_as = process::run_as_user(settings.user);
    if (!prepared.run_as.problem.empty()) {
      return common::Error{prepared.run_as.problem};
    }
    if (const auto problem = provisioning_user_problem(prepared.run_as); !problem.empty()) {
      return common::Error{problem};
    }
    prepared.run_as.switch_credentials = true;
    prepared.run_as.reason = "the provisioning user";
    prepared.credentials =
        process::Credentials{prepared.run_as.uid, prepared.run_as.gid, prepared.run_as.groups};
  } else {
    prepared.run_as = process::run_as_user(std::to_string(::geteuid()));
  }
  const auto base = find_base_python(recipe, settings.python_dirs);
  if (recipe.creates_venv() && !base) {
    return common::Error{base.error()};
  }
  prepared.target.name = name;
  prepared.target.envs_dir = settings.envs_dir;
  prepared.target.base_python = base ? base.value() : fs::path();
  prepared.target.home =
      fs::is_directory(prepared.run_as.home, error) ? prepared.run_as.home : settings.envs_dir;
  prepared.steps = provision_steps(recipe, prepared.target);
  prepared.make_prefix_first = recipe.creates_venv();
  return prepared;
}

ProvisionOutcome run_provision(const PreparedProvision& prepared, const ProvisionSettings& settings,
                               const ProvisionProgress& progress) {
  ProvisionOutcome outcome;
  outcome.prefix = prepared.prefix;
  outcome.user = prepared.run_as.user;
  NameLock lock(settings.envs_dir, prepared.target.name,
                prepared.credentials ? &prepared.run_as : nullptr);
  if (!lock.held()) {
    outcome.error = lock.problem();
    return outcome;
  }
  // Checked again under the lock: a provision that finished meanwhile made it.
  struct stat info {};
  if (::lstat(prepared.prefix.c_str(), &info) == 0) {
    outcome.error = common::shown_path(prepared.prefix) + " exists: choose another name";
    return outcome;
  }
  if (prepared.make_prefix_first) {
    // mkdir fails on anything that exists, link included: the one atomic
    // "does not exist yet" there is.
    const auto made =
        run_as_user(prepared, {"/bin/mkdir", "-m", "0755", "--", prepared.prefix.string()},
                    {{"PATH", "/usr/bin:/bin"}}, settings.envs_dir, "", settings);
    if (!made.succeeded()) {
      outcome.error = "cannot make " + common::shown_path(prepared.prefix) + ": " +
                      made.describe() + (made.err.empty() ? "" : ": " + made.err);
      return outcome;
    }
  }
  const auto count = prepared.steps.size();
  bool failed = false;
  for (std::size_t i = 0; i < count; ++i) {
    const auto& step = prepared.steps[i];
    StepOutcome done;
    done.step = step.name;
    done.command = command_line(step.argv);
    if (failed) {
      done.status = "not_run";
      outcome.steps.push_back(std::move(done));
      continue;
    }
    if (progress.started) {
      progress.started(i, count, step);
    }
    auto argv = step.argv;
    const auto program = argv.empty() ? std::nullopt : resolve_program(argv[0], step.environment);
    if (!program) {
      done.status = "failed";
      done.process = "not started";
      done.output_tail = (argv.empty() ? std::string("an empty command") : argv[0]) +
                         ": not found on the step's PATH (give it as an absolute path)";
    } else {
      argv[0] = *program;
      const fs::path dir = fs::exists(step.working_dir) ? step.working_dir : settings.envs_dir;
      const auto result =
          run_as_user(prepared, argv, step.environment, dir, step.stdin_data, settings);
      done.status = result.succeeded() ? "ok" : "failed";
      done.process = result.describe();
      done.duration = result.duration;
      std::string shown = tail_lines(result.out, 15);
      const std::string errors = tail_lines(result.err, 25);
      if (!errors.empty()) {
        shown += (shown.empty() ? "" : "\n") + errors;
      }
      done.output_tail = shown;
    }
    failed = done.status != "ok";
    if (failed) {
      outcome.error = "step " + std::to_string(i + 1) + " (" + step.name +
                      ") failed: " + done.process +
                      (done.output_tail.empty() ? "" : "\n" + done.output_tail);
    }
    if (progress.finished) {
      progress.finished(i, count, done);
    }
    outcome.steps.push_back(std::move(done));
  }
  outcome.ok = !failed;
  std::error_code error;
  if (failed && fs::exists(fs::symlink_status(prepared.prefix, error))) {
    // As the user: the prefix is theirs, and nothing the agent does as
    // root follows a link they may have planted in it. With limits of its
    // own: when the run was cancelled (the agent stops), cleaning up still
    // happens, briefly.
    ProvisionSettings cleanup = settings;
    cleanup.cancellation = nullptr;
    cleanup.step_timeout = std::chrono::seconds(60);
    const std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"}};
    // The marker first: if removing fails or is cut short, what is left is
    // still marked (and promote refuses it).
    const auto marked = run_as_user(
        prepared,
        {"/bin/sh", "-c", "cat > \"$1\"", "sh", (prepared.prefix / k_failed_marker).string()}, env,
        settings.envs_dir, outcome.error + "\n", cleanup);
    if (settings.remove_on_failure) {
      const auto removed = run_as_user(
          prepared, {"/bin/rm", "-rf", "--one-file-system", "--", prepared.prefix.string()}, env,
          settings.envs_dir, "", cleanup);
      outcome.left_behind = removed.succeeded() ? "removed"
                                                : "kept: removing it failed (" +
                                                      removed.describe() + ": " + removed.err + ")";
    } else {
      // The message went through stdin: it may be longer than an argument may be.
      outcome.left_behind = std::string("kept, marked failed (") + k_failed_marker +
                            (marked.succeeded() ? "" : ", not written: " + marked.describe()) + ")";
    }
  }
  return outcome;
}

nlohmann::ordered_json to_json(const StepOutcome& outcome) {
  return {{"step", outcome.step},
          {"command", outcome.command},
          {"status", outcome.status},
          {"process", outcome.process},
          {"output_tail", outcome.output_tail},
          {"duration_ms", outcome.duration.count()}};
}

nlohmann::ordered_json to_json(const ProvisionOutcome& outcome) {
  auto steps = nlohmann::ordered_json::array();
  for (const auto& step : outcome.steps) {
    steps.push_back(to_json(step));
  }
  return {{"ok", outcome.ok},       {"prefix", outcome.prefix.string()},
          {"user", outcome.user},   {"steps", steps},
          {"error", outcome.error}, {"left_behind", outcome.left_behind}};
}

}  // namespace envcontract::provisioning
