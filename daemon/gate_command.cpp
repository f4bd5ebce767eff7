#include "daemon/gate_command.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>

#include "common/shown_path.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/gate_agent.hpp"
#include "daemon/scan_progress.hpp"
#include "discovery/discovery.hpp"
#include "report/ci_output.hpp"
#include "report/junit.hpp"
#include "report/printable.hpp"
#include "report/report_table.hpp"

namespace envcontract::daemon {

namespace {

namespace fs = std::filesystem;
using Json = report::Json;

constexpr const char* k_prefix = "envcontract gate: ";

// Every variable the gate reads from the job's environment.
constexpr const char* k_variables[] = {"GITHUB_ACTIONS",
                                       "GITHUB_STEP_SUMMARY",
                                       "GITHUB_WORKSPACE",
                                       "GITLAB_CI",
                                       "CI_PROJECT_DIR",
                                       "CONDA_PREFIX",
                                       "VIRTUAL_ENV",
                                       "ENVCONTRACT_PLATFORM",
                                       "ENVCONTRACT_RUNNER_LABELS",
                                       "ENVCONTRACT_GATE_BYPASS",
                                       "ENVCONTRACT_AGENT",
                                       "GITHUB_REPOSITORY",
                                       "GITHUB_RUN_ID",
                                       "GITHUB_RUN_ATTEMPT",
                                       "GITHUB_JOB",
                                       "GITHUB_SERVER_URL",
                                       "CI_PROJECT_PATH",
                                       "CI_JOB_ID",
                                       "CI_JOB_URL"};

std::string variable(const GateOptions& options, const std::string& name) {
  const auto it = options.variables.find(name);
  return it == options.variables.end() ? "" : it->second;
}

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A string of an env's, or of the job's checkout, on one line of the job's
// log: no line break to start a line of its own (a workflow command), no
// control character to drive a terminal or fake a GitLab section marker.
std::string one_line(const std::string& text) {
  return report::printable(text);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  if (lines.empty()) {
    lines.emplace_back();
  }
  return lines;
}

// The contract inputs with what the job's environment adds to the flags.
GateContractInputs contract_inputs(const GateOptions& options) {
  GateContractInputs inputs = options.contract;
  if (inputs.workspace.empty()) {
    for (const char* name : {"GITHUB_WORKSPACE", "CI_PROJECT_DIR"}) {
      if (const std::string dir = variable(options, name); !dir.empty()) {
        inputs.workspace = dir;
        break;
      }
    }
  }
  if (inputs.workspace.empty()) {
    std::error_code error;
    inputs.workspace = fs::current_path(error);
  }
  if (inputs.platform.empty()) {
    inputs.platform = variable(options, "ENVCONTRACT_PLATFORM");
  }
  if (inputs.runner_labels.empty()) {
    std::istringstream labels(variable(options, "ENVCONTRACT_RUNNER_LABELS"));
    for (std::string label; std::getline(labels, label, ',');) {
      const auto first = label.find_first_not_of(" \t");
      const auto last = label.find_last_not_of(" \t");
      if (first != std::string::npos) {
        inputs.runner_labels.push_back(label.substr(first, last - first + 1));
      }
    }
  }
  return inputs;
}

struct ChosenEnvs {
  std::vector<fs::path> prefixes;  // empty: every env discovery finds
  std::string why;
};

// The env the job is about to use: --env (a prefix, or a name discovery
// knows), else the job shell's conda env or venv, else every env.
common::Result<ChosenEnvs> choose_envs(const GateOptions& options) {
  const std::string& wanted = options.env;
  if (!wanted.empty() && wanted.find('/') != std::string::npos) {
    std::error_code error;
    if (!fs::is_directory(wanted, error)) {
      return common::Error{"--env " + one_line(wanted) +
                           " is not a directory: name the env's prefix"};
    }
    return ChosenEnvs{{fs::absolute(wanted)}, "--env"};
  }
  if (!wanted.empty()) {
    const auto discovery = discovery::discover_envs(options.settings.facts.discovery);
    std::vector<fs::path> named;
    std::string known;
    for (const auto& env : discovery.envs) {
      if (env.name == wanted) {
        named.push_back(env.prefix);
      }
      known += (known.empty() ? "" : ", ") + one_line(env.name);
    }
    if (named.size() != 1) {
      return common::Error{(named.empty() ? "no env is named " + one_line(wanted)
                                          : "several envs are named " + one_line(wanted)) +
                           " (found: " + (known.empty() ? std::string("none") : known) +
                           "); name it by its prefix (--env /path/to/env)"};
    }
    return ChosenEnvs{named, "--env " + wanted};
  }
  // A venv activated over conda's base (a runner whose shell activates
  // base) is the env the job uses: VIRTUAL_ENV first.
  for (const char* name : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (const std::string prefix = variable(options, name); !prefix.empty()) {
      std::error_code error;
      if (!fs::is_directory(prefix, error)) {
        return common::Error{std::string("the job's ") + name + " (" + one_line(prefix) +
                             ") is not a directory: activate the env the job uses, or name it "
                             "(--env)"};
      }
      return ChosenEnvs{{prefix}, std::string("the job's ") + name};
    }
  }
  return ChosenEnvs{{}, "every env found"};
}

// GitHub keeps a step summary of 1 MiB at most: a longer one is cut at a
// line, saying so, rather than refused.
constexpr std::size_t k_max_summary_bytes = 512 * 1024;

void append_step_summary(const std::string& file, std::string markdown, std::ostream& err) {
  if (markdown.size() > k_max_summary_bytes) {
    markdown.resize(markdown.rfind('\n', k_max_summary_bytes) + 1);
    markdown += "\n(cut here: a step summary holds 1 MiB; the job's log has every check)\n";
  }
  std::ofstream summary(file, std::ios::app);
  summary << markdown;
  summary.flush();
  if (!summary) {
    err << k_prefix << "cannot append the summary to " << file
        << " ($GITHUB_STEP_SUMMARY): the annotations above say the same\n";
  }
}

// The JUnit file, written where the job's checkout may hold anything: a
// link there is refused, never followed to a file the runner's user owns,
// and a FIFO there is refused at once (O_NONBLOCK) rather than waited on.
void write_junit(const fs::path& file, const report::Report& report, std::ostream& err) {
  const std::string xml =
      report::junit_xml({{report.host.empty() ? "localhost" : report.host, &report, ""}});
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  struct stat info {};
  if (fd >= 0 && (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || ::ftruncate(fd, 0) != 0)) {
    errno = S_ISREG(info.st_mode) ? errno : EINVAL;
    ::close(fd);
    fd = -1;
  }
  bool written = fd >= 0;
  for (std::size_t done = 0; written && done < xml.size();) {
    const ssize_t wrote = ::write(fd, xml.data() + done, xml.size() - done);
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    written = wrote > 0;
    done += written ? static_cast<std::size_t>(wrote) : 0;
  }
  const int saved = errno;
  if (fd >= 0) {
    ::close(fd);
  }
  if (!written) {
    err << k_prefix << "cannot write " << one_line(file.string()) << ": " << std::strerror(saved)
        << " (a link there is not followed)\n";
  }
}

// The agent to ask, or why none is: "none", a remote address (the gate asks
// the agent of the machine the job runs on; fleetctl gate asks others).
common::Result<std::optional<fleet::HostAddress>> agent_address(const GateOptions& options) {
  std::string text = options.agent;
  if (text.empty()) {
    text = variable(options, "ENVCONTRACT_AGENT");
  }
  if (text.empty()) {
    text = "127.0.0.1:" + std::to_string(fleet::default_agent_port);
  }
  if (text == "none") {
    return std::optional<fleet::HostAddress>();
  }
  const auto address = fleet::parse_host_address(text);
  if (!address || !is_loopback(*address)) {
    return common::Error{"--agent " + one_line(text) +
                         " is not this machine's agent: give its loopback address "
                         "(127.0.0.1:PORT), or none; fleetctl gate asks another host's"};
  }
  return std::optional<fleet::HostAddress>(*address);
}

// The prefix as the agent's discovery found it: without links, so that
// "~/work/env" given through a linked home is the env it knows.
std::string agent_prefix(const fs::path& prefix) {
  std::error_code error;
  const auto canonical = fs::canonical(prefix, error);
  return (error ? fs::absolute(prefix) : canonical).lexically_normal().string();
}

}  // namespace

std::map<std::string, std::string> gate_variables_from_environment() {
  std::map<std::string, std::string> variables;
  for (const char* name : k_variables) {
    if (const char* value = std::getenv(name); value != nullptr) {
      variables[name] = value;
    }
  }
  return variables;
}

namespace {

// What a gate judges: the contract of the job's checkout, its env, and the
// local agent to ask (none: judged here).
struct GateSubject {
  ContractHandle contract;
  ScanSettings settings;
  fleet::GateQuery query;
  std::optional<fleet::HostAddress> agent;
};

// The subject from the gate's options, said on `err` as it is chosen; or
// why the job cannot be judged.
common::Result<GateSubject> gate_subject(const GateOptions& options, const std::string& bypass,
                                         std::ostream& err) {
  const auto inputs = contract_inputs(options);
  const auto chosen = choose_gate_contract(inputs);
  if (!chosen) {
    return common::Error{chosen.error()};
  }
  err << k_prefix << "contract " << one_line(common::shown_path(chosen->file)) << " ("
      << one_line(chosen->why) << ")\n";
  auto loaded = load_contract(chosen->file, {}, inputs.workspace);
  if (!loaded) {
    return common::Error{loaded.error()};
  }
  const auto envs = choose_envs(options);
  if (!envs) {
    return common::Error{envs.error()};
  }
  auto agent = agent_address(options);
  if (!agent) {
    return common::Error{agent.error()};
  }
  GateSubject subject;
  subject.contract = std::move(loaded.value());
  subject.settings = options.settings;
  if (!envs->prefixes.empty()) {
    subject.settings.facts.discovery.roots.clear();
    subject.settings.facts.discovery.prefixes = envs->prefixes;
  }
  err << k_prefix << "env: " << one_line(envs->why)
      << (envs->prefixes.empty() ? "" : " " + one_line(common::shown_path(envs->prefixes.front())))
      << "\n";
  const auto& contract = *subject.contract;
  subject.query = {contract.judged_sha256,
                   contract.identity.name,
                   contract.identity.sha256,
                   envs->prefixes.empty() ? "" : agent_prefix(envs->prefixes.front()),
                   fleet::gate_job(options.variables),
                   bypass};
  subject.agent = std::move(agent.value());
  return subject;
}

// The env's report: the local agent judges it now, reusing what it probed
// while the env's files say nothing changed, and records the decision; when
// it cannot (another contract, an env it does not know, no agent), the env
// is judged here, and the agent told what was decided.
report::Report judge_gate(const GateOptions& options, const GateSubject& subject,
                          std::ostream& err) {
  fleet::GateVerdict asked;
  if (subject.agent && options.own_judgement_because.empty()) {
    asked = ask_local_agent(*subject.agent, subject.query);
  } else if (subject.agent) {
    asked.why = "not asked: " + options.own_judgement_because;
  }
  const std::string agent_text =
      subject.agent ? subject.agent->host + ":" + std::to_string(subject.agent->port) : "";
  if (asked.kind == fleet::GateVerdict::Kind::answered) {
    err << k_prefix << "judged by the agent at " << agent_text << " in "
        << static_cast<long long>(asked.elapsed_ms) << " ms (" << asked.probed << " env(s) probed, "
        << asked.reused << " unchanged); "
        << (asked.decision_id > 0 ? "decision recorded as #" + std::to_string(asked.decision_id)
                                  : std::string("the agent could not record the decision"))
        << "\n";
    return std::move(asked.report);
  }
  if (subject.agent) {
    err << k_prefix << "the agent at " << agent_text
        << (asked.kind == fleet::GateVerdict::Kind::refused ? " cannot judge it: " : ": ")
        << one_line(asked.why) << "; judged here"
        << (asked.kind == fleet::GateVerdict::Kind::refused ? ""
                                                            : ", and the decision is not recorded")
        << "\n";
  }
  Scanner scanner;
  auto report = scan_with_progress(scanner, *subject.contract, subject.settings, false, err);
  if (asked.kind == fleet::GateVerdict::Kind::refused) {
    const auto decision = report::gate_decision(report);
    if (const auto problem = record_with_local_agent(
            *subject.agent, subject.query, report::to_string(decision.outcome), decision.why);
        !problem.empty()) {
      err << k_prefix << "the agent did not record the decision: " << one_line(problem) << "\n";
    }
  }
  return report;
}

// The report where the CI shows it (GitHub's annotations and step summary,
// a GitLab section, or the table), the JUnit file, and the decision's exit
// status (0 for a bypassed stop).
int tell_gate(const GateOptions& options, const report::Report& report, const std::string& bypass,
              long long started, std::ostream& out, std::ostream& err) {
  const auto decision = report::gate_decision(report);
  const std::string why = one_line(decision.why);
  const std::string table = report::render_table(report, {true, false});
  if (variable(options, "GITHUB_ACTIONS") == "true") {
    const std::string token = report::stop_commands_token();
    out << report::github_annotations(report, decision, bypass) << "::stop-commands::" << token
        << "\n"
        << table << "::" << token << "::\n";
    if (const std::string file = variable(options, "GITHUB_STEP_SUMMARY"); !file.empty()) {
      append_step_summary(file, report::markdown_summary(report, decision, bypass), err);
    }
  } else if (variable(options, "GITLAB_CI") == "true") {
    out << k_prefix << why << "\n"
        << report::gitlab_section("envcontract_gate", "envcontract: the env's checks", table,
                                  started, unix_now());
  } else {
    out << table << k_prefix << why << "\n";
  }
  // What follows on stderr comes after the report, wherever both go.
  out.flush();
  if (!options.junit.empty()) {
    write_junit(options.junit, report, err);
  }
  if (decision.outcome != report::GateDecision::Outcome::go && !bypass.empty()) {
    err << k_prefix << "BYPASSED: the job starts although " << why << " (" << one_line(bypass)
        << ")\n";
    return 0;
  }
  err << k_prefix
      << (decision.outcome == report::GateDecision::Outcome::go ? "go" : "the job is stopped")
      << "\n";
  return decision.exit_code();
}

}  // namespace

int run_gate(const GateOptions& options, std::ostream& out, std::ostream& err) {
  const long long started = unix_now();
  std::string bypass = options.bypass;
  if (bypass.empty()) {
    bypass = variable(options, "ENVCONTRACT_GATE_BYPASS");
  }
  const auto subject = gate_subject(options, bypass, err);
  if (!subject) {
    // A job that cannot be judged (no contract in its checkout, no env) is
    // stopped too, and a bypass lets it start as well.
    const auto lines = lines_of(subject.error());
    for (const auto& line : lines) {
      err << k_prefix << one_line(line) << "\n";
    }
    if (bypass.empty()) {
      return 2;
    }
    if (variable(options, "GITHUB_ACTIONS") == "true") {
      out << report::github_annotations(
          report::Report{}, {report::GateDecision::Outcome::unknown, one_line(lines.front())},
          bypass);
      out.flush();
    }
    err << k_prefix << "BYPASSED: the job starts although it could not be judged ("
        << one_line(bypass) << ")\n";
    return 0;
  }
  const auto report = judge_gate(options, *subject, err);
  return tell_gate(options, report, bypass, started, out, err);
}

}  // namespace envcontract::daemon
