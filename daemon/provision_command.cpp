#include "daemon/provision_command.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ostream>

#include "common/json_text.hpp"
#include "common/printable.hpp"
#include "common/shown_path.hpp"
#include "common/time_text.hpp"
#include "daemon/contract_source.hpp"
#include "daemon/scan_progress.hpp"
#include "daemon/store.hpp"
#include "provisioning/plan.hpp"
#include "provisioning/promotion.hpp"
#include "provisioning/provisioner.hpp"
#include "report/report_table.hpp"

namespace envcontract::daemon {
namespace fs = std::filesystem;
namespace {

using report::Json;

std::optional<ContractHandle> load(const ProvisioningCommandOptions& options, std::ostream& err) {
  if (options.loaded) {
    return options.loaded;
  }
  auto loaded = load_contract(options.contract, options.run_tests, options.checkout);
  if (!loaded) {
    err << loaded.error();
    return std::nullopt;
  }
  return loaded.value();
}

// The report of one env alone, scanned with the whole contract.
report::Report scan_prefix(const ProvisioningCommandOptions& options,
                           const LoadedContract& contract, const fs::path& prefix,
                           std::ostream& err) {
  ScanSettings settings = options.scan;
  settings.facts.discovery.roots.clear();
  settings.facts.containers.clear();
  settings.facts.container_discovery.reset();
  settings.facts.discovery.prefixes = {prefix};
  settings.cancelled_by = options.cancellation;
  Scanner scanner;
  return scan_with_progress(scanner, contract, settings, options.scan_progress, err);
}

const report::EnvReport* env_of(const report::Report& report) {
  return report.envs.empty() ? nullptr : &report.envs.front();
}

// "torch-cpu-build (cuda_build): CUDA build of torch ..." for each check
// that keeps the env from complying.
std::string failing_checks(const report::EnvReport& env) {
  std::string lines;
  for (const auto& check : env.checks) {
    if (check.status == contracts::CheckStatus::fail ||
        check.status == contracts::CheckStatus::error) {
      const auto& diagnosis = report::diagnosis_of(check);
      lines += "  " + check.id + " (" + diagnosis.cause + "): " + diagnosis.summary + "\n";
    }
  }
  return lines;
}

void record(const ProvisioningCommandOptions& options, const std::string& action,
            const std::string& name, const std::string& started_at, const std::string& outcome,
            Json detail, std::ostream& err) {
  if (options.database.empty() && !options.recorder) {
    // Said, so that nobody looks for it in the history later.
    err << "envcontractd " << action
        << ": not recorded: no database (--database FILE records it, as does an agent config: "
           "--config FILE, or /etc/envcontract/agent.yaml when it exists)\n";
    return;
  }
  Json entry = {{"action", action},
                {"name", name},
                {"requested_by", options.requested_by},
                {"started_at", started_at},
                {"finished_at", common::now_rfc3339()},
                {"outcome", outcome},
                {"detail", std::move(detail)}};
  // What was done is done: a database that cannot take the record (busy,
  // full) is said, never turned into a failure of the action.
  try {
    if (options.recorder) {
      options.recorder(entry);
      return;
    }
    auto store = Store::open(options.database);
    if (!store) {
      err << "envcontractd " << action << ": not recorded: " << store.error() << "\n";
      return;
    }
    store.value()->record_provision(entry);
  } catch (const std::exception& e) {
    err << "envcontractd " << action << ": not recorded: " << e.what() << "\n";
  }
}

provisioning::ProvisionSettings provision_settings(const ProvisioningCommandOptions& options) {
  provisioning::ProvisionSettings settings;
  settings.envs_dir = options.provisioning.envs_dir;
  settings.user = options.provisioning.user;
  settings.remove_on_failure = options.provisioning.remove_on_failure;
  settings.python_dirs = options.provisioning.python_dirs;
  settings.step_timeout = options.provisioning.step_timeout;
  settings.cancellation = options.cancellation;
  // The probes' memory and file bounds; CPU time for as long as a step may run.
  settings.resources = options.scan.probe_limits;
  settings.resources.cpu_seconds =
      std::max<std::uint64_t>(settings.resources.cpu_seconds,
                              static_cast<std::uint64_t>(settings.step_timeout.count() / 1000));
  return settings;
}

// The credentials links are switched with: the provisioning user's when the
// agent is root, else nullopt (the agent's own). An error when root has
// no user to take.
common::Result<std::optional<facts::RunAs>> link_credentials(
    const ProvisioningCommandOptions& options) {
  if (::geteuid() != 0) {
    return std::optional<facts::RunAs>();
  }
  if (options.provisioning.user.empty()) {
    return common::Error{
        "name the provisioning user (provisioning.user, --user): links are "
        "switched with that user's rights, never root's"};
  }
  auto run_as = process::run_as_user(options.provisioning.user);
  if (!run_as.problem.empty()) {
    return common::Error{run_as.problem};
  }
  if (const auto problem = provisioning::provisioning_user_problem(run_as); !problem.empty()) {
    return common::Error{problem};
  }
  run_as.switch_credentials = true;
  return std::optional<facts::RunAs>(run_as);
}

// A name in the envs directory, or an absolute path as given.
fs::path in_envs_dir(const ProvisioningCommandOptions& options, const std::string& name) {
  return name.starts_with("/") ? fs::path(name) : options.provisioning.envs_dir / name;
}

std::string seconds(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

}  // namespace

int run_plan(const ProvisioningCommandOptions& options, const std::string& env, std::ostream& out,
             std::ostream& err) {
  const auto contract = load(options, err);
  if (!contract) {
    return 2;
  }
  Scanner scanner;
  const auto report =
      scan_with_progress(scanner, **contract, options.scan, options.scan_progress, err);
  if (!env.empty()) {
    bool found = false;
    std::string names;
    for (const auto& entry : report.envs) {
      found = found || entry.name == env;
      names += (names.empty() ? "" : ", ") + entry.name;
    }
    if (!found) {
      err << "envcontractd plan: no env '" << env
          << "' on this host (its envs: " << (names.empty() ? std::string("none") : names) << ")\n";
      return 2;
    }
  }
  const auto plan = provisioning::build_plan(report, (*contract)->contract, env);
  if (options.json) {
    out << common::json_text(provisioning::to_json(plan), 2) << "\n";
  } else {
    out << provisioning::render_plan(plan);
  }
  return plan.envs.empty() && plan.host_steps.empty() ? 0 : 1;
}

int run_provision_command(const ProvisioningCommandOptions& options, const std::string& name,
                          bool apply, std::ostream& out, std::ostream& err) {
  const auto contract = load(options, err);
  if (!contract) {
    return 2;
  }
  const auto& recipe = (*contract)->contract.provision;
  if (!recipe) {
    err << "envcontractd provision: " << common::shown_path(options.contract)
        << " has no 'provision:' section: add the recipe (python, packages, ...; "
           "docs/provisioning.md)\n";
    return 2;
  }
  const auto settings = provision_settings(options);
  const auto prepared = provisioning::prepare_provision(*recipe, name, settings);
  if (!prepared) {
    err << "envcontractd provision: " << prepared.error() << "\n";
    if (apply) {
      record(options, "provision", name, common::now_rfc3339(), "refused",
             {{"contract", (*contract)->contract.name}, {"error", prepared.error()}}, err);
    }
    return 2;
  }
  const auto& steps = prepared->steps;
  out << "provision " << name << " at " << prepared->prefix.string() << " as "
      << prepared->run_as.user << ", to " << (*contract)->contract.name << ":\n";
  // The steps quote the contract (its commands, its variables' values): one
  // line each, whatever newline or escape sequence they hold, so that what a
  // reviewer reads is what runs and no contract draws lines of its own.
  for (std::size_t i = 0; i < steps.size(); ++i) {
    out << "  " << i + 1 << ". " << steps[i].name << ": "
        << common::printable(steps[i].description.empty()
                                 ? "$ " + provisioning::command_line(steps[i].argv)
                                 : steps[i].description)
        << "\n";
  }
  out << "  " << steps.size() + 1 << ". verify: scan " << name << " with the whole contract\n";
  if (!apply) {
    out << "dry run: nothing was run; add --apply to build it\n";
    return 0;
  }
  const std::string started_at = common::now_rfc3339();
  provisioning::ProvisionProgress progress;
  // On a terminal, one line per step, rewritten when it ends; in a log, a
  // line when it starts and one when it ends.
  const bool terminal = options.progress_on_terminal;
  progress.started = [&out, terminal](std::size_t index, std::size_t count,
                                      const provisioning::ProvisionStep& step) {
    out << "[" << index + 1 << "/" << count << "] " << step.name << " ..." << (terminal ? "" : "\n")
        << std::flush;
  };
  progress.finished = [&out, terminal](std::size_t index, std::size_t count,
                                       const provisioning::StepOutcome& outcome) {
    out << (terminal ? "\r\033[K" : "") << "[" << index + 1 << "/" << count << "] " << outcome.step
        << ": " << outcome.status << " (" << outcome.process << ", " << seconds(outcome.duration)
        << ")" << std::endl;
  };
  const auto outcome = provisioning::run_provision(*prepared, settings, progress);
  Json detail = {{"contract", (*contract)->contract.name},
                 {"prefix", prepared->prefix.string()},
                 {"user", outcome.user},
                 {"provision", provisioning::to_json(outcome)}};
  if (!outcome.ok) {
    err << "envcontractd provision: " << outcome.error << "\n";
    if (!outcome.left_behind.empty()) {
      err << "the env at " << prepared->prefix.string() << ": " << outcome.left_behind << "\n";
    }
    record(options, "provision", name, started_at, "failed", detail, err);
    return 2;
  }
  out << "[verify] scanning " << name << " with the whole contract ..." << std::endl;
  const auto report = scan_prefix(options, **contract, prepared->prefix, err);
  const auto* env = env_of(report);
  const std::string verdict = env != nullptr ? contracts::to_string(env->verdict) : "error";
  detail["verdict"] = verdict;
  detail["failing_checks"] = env != nullptr ? Json(failing_checks(*env)) : Json("");
  out << report::render_table(report, {false, false});
  if (verdict == "compliant") {
    out << name << " complies with " << (*contract)->contract.name
        << ": promote it with `envcontractd promote " << name << " --as NAME`\n";
    record(options, "provision", name, started_at, "compliant", detail, err);
    return 0;
  }
  err << "envcontractd provision: " << name << " was built but does not comply (" << verdict
      << "); it will not be promoted:\n"
      << (env != nullptr ? failing_checks(*env) : std::string("  the scan found no env\n"));
  record(options, "provision", name, started_at, verdict == "drift" ? "drift" : "error", detail,
         err);
  return 1;
}

int run_promote(const ProvisioningCommandOptions& options, const std::string& env_name,
                const std::string& as, std::ostream& out, std::ostream& err) {
  const std::string started_at = common::now_rfc3339();
  const auto contract = load(options, err);
  if (!contract) {
    return 2;
  }
  if (!env_name.starts_with("/") && options.provisioning.envs_dir.empty()) {
    err << "envcontractd promote: set provisioning.envs_dir (or --envs-dir), or give the env "
           "and the link as absolute paths\n";
    return 2;
  }
  // By name, the env is a real directory of the envs directory: a link the
  // provisioning user planted there is not followed (by root, into an env
  // elsewhere). An absolute path is the operator's own choice.
  fs::path prefix;
  std::error_code error;
  if (env_name.starts_with("/")) {
    prefix = fs::canonical(env_name, error);
  } else {
    prefix = in_envs_dir(options, env_name);
    if (!fs::is_directory(fs::symlink_status(prefix, error))) {
      error = std::make_error_code(std::errc::not_a_directory);
    }
  }
  // Exit 2 for what keeps promote from judging the env (no env, a wrong
  // --as, no user to switch links as, the name busy); an env that is not fit
  // to promote (a failed provision, drift) is refused with 1.
  const auto refuse = [&](const std::string& why, int exit_code = 2) {
    err << "envcontractd promote: " << why << "\n";
    record(options, "promote", as, started_at, "refused",
           {{"env", env_name}, {"link", as}, {"error", why}}, err);
    return exit_code;
  };
  if (error || !fs::is_directory(prefix)) {
    return refuse(
        "no env at " + common::shown_path(in_envs_dir(options, env_name)) +
        (env_name.starts_with("/") ? "" : " (a directory of the envs directory, not a link)"));
  }
  const fs::path link = in_envs_dir(options, as);
  if (link == prefix || as.empty()) {
    return refuse("--as names the link to switch, not the env itself");
  }
  const auto credentials = link_credentials(options);
  if (!credentials) {
    return refuse(credentials.error());
  }
  // A provision that failed left its env marked: never promoted, even if
  // what it built happens to pass (a recipe command that failed is a step
  // of the contract's recipe, not an option).
  const auto marked_failed = [&prefix] {
    struct stat marker {};
    return ::lstat((prefix / provisioning::k_failed_marker).c_str(), &marker) == 0;
  };
  const std::string failed_why = env_name + " is marked as a failed provision (" +
                                 std::string(provisioning::k_failed_marker) + "): build it again";
  if (marked_failed()) {
    return refuse(failed_why, 1);
  }
  // One change of a name at a time: not the link while it is being
  // provisioned, nor the env while it is still being built.
  const auto* as_user = credentials->has_value() ? &**credentials : nullptr;
  provisioning::NameLock lock(link.parent_path(), link.filename().string(), as_user);
  if (!lock.held()) {
    return refuse(lock.problem());
  }
  std::optional<provisioning::NameLock> env_lock;
  if (!env_name.starts_with("/")) {
    env_lock.emplace(prefix.parent_path(), prefix.filename().string(), as_user);
    if (!env_lock->held()) {
      return refuse(env_lock->problem());
    }
  }
  if (marked_failed()) {
    return refuse(failed_why, 1);
  }
  const auto report = scan_prefix(options, **contract, prefix, err);
  const auto* env = env_of(report);
  const std::string verdict = env != nullptr ? contracts::to_string(env->verdict) : "error";
  Json detail = {{"contract", (*contract)->contract.name},
                 {"env", prefix.string()},
                 {"link", link.string()},
                 {"verdict", verdict}};
  if (verdict != "compliant") {
    const std::string why = env != nullptr ? failing_checks(*env) : "  the scan found no env\n";
    err << "envcontractd promote: " << env_name << " does not comply with "
        << (*contract)->contract.name << " (" << verdict << "), so it is not promoted:\n"
        << why;
    detail["failing_checks"] = why;
    record(options, "promote", as, started_at, "refused", detail, err);
    return 1;
  }
  const auto switched =
      provisioning::switch_link(link, prefix, credentials->has_value() ? &**credentials : nullptr);
  if (!switched) {
    err << "envcontractd promote: " << switched.error() << "\n";
    detail["error"] = switched.error();
    record(options, "promote", as, started_at, "failed", detail, err);
    return 2;
  }
  detail["previous"] = switched->previous ? Json(switched->previous->string()) : Json(nullptr);
  out << "promoted: " << link.string() << " -> " << prefix.string()
      << (switched->previous ? " (was " + switched->previous->string() +
                                   "; envcontractd rollback " + as + " goes back)"
                             : std::string())
      << "\n";
  record(options, "promote", as, started_at, "promoted", detail, err);
  return 0;
}

int run_rollback(const ProvisioningCommandOptions& options, const std::string& name,
                 std::ostream& out, std::ostream& err) {
  const std::string started_at = common::now_rfc3339();
  if (!name.starts_with("/") && options.provisioning.envs_dir.empty()) {
    err << "envcontractd rollback: set provisioning.envs_dir (or --envs-dir), or give the link "
           "as an absolute path\n";
    return 2;
  }
  const auto credentials = link_credentials(options);
  if (!credentials) {
    err << "envcontractd rollback: " << credentials.error() << "\n";
    return 2;
  }
  const fs::path link = in_envs_dir(options, name);
  const auto switched =
      provisioning::rollback_link(link, credentials->has_value() ? &**credentials : nullptr);
  Json detail = {{"link", link.string()}};
  if (!switched) {
    err << "envcontractd rollback: " << switched.error() << "\n";
    detail["error"] = switched.error();
    record(options, "rollback", name, started_at, "failed", detail, err);
    return 2;
  }
  detail["target"] = switched->target.string();
  detail["previous"] = switched->previous ? Json(switched->previous->string()) : Json(nullptr);
  out << "rolled back: " << link.string() << " -> " << switched->target.string() << "\n";
  record(options, "rollback", name, started_at, "rolled_back", detail, err);
  return 0;
}

}  // namespace envcontract::daemon
