#include "daemon/scanner.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <set>
#include <thread>

#include "common/json_text.hpp"
#include "common/time_text.hpp"
#include "contracts/host_judgement.hpp"
#include "daemon/probe_plan.hpp"
#include "discovery/exec_prefix.hpp"
#include "discovery/exec_session.hpp"
#include "freshness/fingerprint.hpp"
#include "process/stall_guard.hpp"
#include "report/report_json.hpp"

namespace envcontract::daemon {

namespace {

std::string seconds_text(std::chrono::milliseconds duration) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(duration).count()) + " s";
}

// Cancels a scan that outlives its deadline, or whose outside cancellation
// fires; ends with the scan.
class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds deadline, process::Cancellation& cancellation,
           const process::Cancellation* outside = nullptr) {
    if (deadline.count() <= 0 && outside == nullptr) {
      return;
    }
    m_thread = std::thread([this, deadline, outside, &cancellation] {
      const auto end = deadline.count() > 0 ? std::chrono::steady_clock::now() + deadline
                                            : std::chrono::steady_clock::time_point::max();
      std::unique_lock lock(m_mutex);
      while (!m_done) {
        if (outside != nullptr && outside->cancelled()) {
          cancellation.cancel(outside->reason());
          return;
        }
        if (std::chrono::steady_clock::now() >= end) {
          cancellation.cancel("the scan's deadline of " + seconds_text(deadline) +
                              " passed (scan_deadline in the agent's config)");
          return;
        }
        m_wake.wait_for(lock, std::chrono::milliseconds(outside != nullptr ? 100 : 1000));
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(m_mutex);
      m_done = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable()) {
      m_thread.join();
    }
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_done = false;
  std::thread m_thread;
};

}  // namespace

void Scanner::cancel(const std::string& reason) {
  std::lock_guard lock(m_cancel_mutex);
  m_cancelled_for = reason;
  if (m_running) {
    m_running->cancel(reason);
  }
}

namespace {

// One env's report entry, judged and built on its own, so that it costs
// that env's facts and not the host's; `top` gets the report's other fields
// (contract, image, targets) the first time.
report::Json judged_alone(const LoadedContract& contract, const facts::HostFacts& host,
                          std::size_t index, const contracts::EnvJudgement& judgement,
                          std::optional<report::Json>& top) {
  facts::HostFacts single;
  single.host = host.host;
  single.gathered_at = host.gathered_at;
  single.image = host.image;
  single.problems = host.problems;
  single.incomplete = host.incomplete;
  single.static_elapsed = host.static_elapsed;
  single.activation_elapsed = host.activation_elapsed;
  single.linkage_elapsed = host.linkage_elapsed;
  single.envs.push_back(host.envs[index]);
  auto built = report::build_report(
      contract.identity, contracts::judge_host(contract.contract, single, {judgement}), single, 0);
  auto entry = report::to_json(built.envs.at(0));
  if (!top) {
    built.envs.clear();
    top = report::to_json(built);
    top->erase("envs");
  }
  return entry;
}

// The envs judged so far as a report whose verdict is "pending", as text:
// each finished env's entry is serialised once, when it finishes, and the
// report is put together from those texts.
std::string partial_report(const report::Json& top, const std::vector<std::string>& finished,
                           const probes::HostFacts& facts,
                           const std::vector<std::string>& compliant_envs) {
  report::Json report = top;
  auto pending = report::Json::array();
  std::string envs;
  std::size_t done = 0;
  for (std::size_t i = 0; i < finished.size(); ++i) {
    if (finished[i].empty()) {
      pending.push_back(facts.envs[i].env.name);
      continue;
    }
    envs += (envs.empty() ? "" : ",") + finished[i];
    ++done;
  }
  report["verdict"] = "pending";
  report["reasons"] =
      report::Json::array({"the first scan is running: " + std::to_string(done) + " of " +
                           std::to_string(finished.size()) + " envs judged so far"});
  report["compliant_envs"] = compliant_envs;
  report["partial"] = {
      {"done", done}, {"total", finished.size()}, {"pending_envs", std::move(pending)}};
  report["envs"] = report::Json::array();  // the last key: filled in as text below
  std::string text = common::json_text(report);
  const std::string placeholder = "\"envs\":[]";
  const auto at = text.rfind(placeholder);
  text.replace(at, placeholder.size(), "\"envs\":[" + envs + "]");
  return text;
}

// Probes one env on a thread of its own, waited for at most its deadline
// and then the time to read what its probes wrote: the agent's own reads of
// a probe's scratch files are bounded no other way, and a container's /tmp
// on a filesystem that stops answering (the fuse-overlayfs of a rootless
// container, stopped by the user who runs it) would block them for good and
// hold the whole host's report. Such a probe is left behind and reported as
// stalled; the next scan does not start another behind it.
facts::DynamicFacts probe_bounded(const facts::EnvFacts& env, const probes::ProbePlan& plan,
                                  const ScanSettings& settings,
                                  const process::Cancellation* cancellation,
                                  std::optional<facts::Stall>& stall) {
  using std::chrono::milliseconds;
  // Once timed out or cancelled, the probe samples the stacks of what hung
  // (eu-stack is given 15 s), then kills it (a process that cannot be killed
  // is given 5 s, its output 0.5 s more).
  const milliseconds winding_down = std::chrono::seconds(30);
  // Beyond the probe's own limits: that, and reading its results.
  const milliseconds margin = settings.facts.reading_deadline + winding_down;
  const milliseconds probe_limit =
      settings.env_deadline.count() > 0 ? settings.env_deadline : settings.scan_deadline;
  const milliseconds wait = probe_limit.count() > 0 ? probe_limit + margin : milliseconds(0);
  // What the work touches is its own: left behind, it may wake and run on
  // long after this scan.
  auto job_env = std::make_shared<const facts::PythonEnv>(env.env);
  auto job_activation = std::make_shared<const probes::ActivatedEnvironment>(env.activation);
  auto job_plan = std::make_shared<probes::ProbePlan>(plan);
  auto dynamic = std::make_shared<facts::DynamicFacts>();
  const std::string prefix = env.env.prefix.string();
  // A container's envs share its /tmp: once one's probe is left blocked
  // there, the others are not started behind it (each would hold a blocked
  // thread, and their number is bounded host-wide). The host's envs each
  // have a key of their own: one left behind says nothing of the others.
  const std::string key = env.env.exec.empty()
                              ? "probe " + prefix
                              : "probe in " + discovery::scratch_root(env.env).string();
  stall = process::run_bounded(
      key, "the probe of " + prefix, wait, cancellation,
      [job_env, job_activation, job_plan, dynamic](const process::Cancellation& stop) {
        job_plan->cancellation = &stop;  // the job's: cancelled when it is left behind
        *dynamic = probes::probe_env(*job_env, *job_activation, *job_plan);
      },
      winding_down);
  return stall ? facts::DynamicFacts{} : std::move(*dynamic);
}

}  // namespace

namespace {

// One scan's envs after their facts are gathered: each fingerprinted, its
// probe reused or run, judged once, and told to the observer as it ends.
class ScanRun {
 public:
  ScanRun(const LoadedContract& contract, const ScanSettings& settings,
          const ScanObserver& observer, facts::HostFacts& facts, const probes::ProbePlan& plan,
          const std::shared_ptr<process::Cancellation>& cancellation, freshness::ProbeCache& probes)
      : m_contract(contract),
        m_settings(settings),
        m_observer(observer),
        m_facts(facts),
        m_plan(plan),
        m_cancellation(cancellation),
        m_probes(probes),
        m_judged(facts.envs.size()),
        m_finished(facts.envs.size()) {}

  // Every env, `concurrency` at a time, then the host judged of their
  // judgements.
  contracts::HostJudgement run(const std::shared_ptr<const probes::ProbeLanes>& lanes) {
    probes::run_concurrently(m_facts.envs.size(), m_settings.concurrency, [&](std::size_t index) {
      std::optional<probes::ProbeLanes::EnvTurn> turn;
      if (!m_facts.envs[index].kept) {
        turn.emplace(*lanes);
      }
      run_env(index);
    });
    if (!m_settings.some_envs_only) {
      m_probes.forget_all_but(m_seen);
    }
    std::vector<contracts::EnvJudgement> judged;
    judged.reserve(m_judged.size());
    for (std::size_t i = 0; i < m_judged.size(); ++i) {
      // An env whose files blocked its fingerprint is judged here, with
      // that error.
      judged.push_back(m_judged[i] ? std::move(*m_judged[i])
                                   : contracts::judge_env_contained(m_contract.contract,
                                                                    m_facts.envs[i], m_judged_on));
    }
    return contracts::judge_host(m_contract.contract, m_facts, std::move(judged));
  }

  std::size_t probed() const { return m_probed; }

 private:
  using Clock = std::chrono::steady_clock;

  void run_env(std::size_t index) {
    auto& env = m_facts.envs[index];
    const auto env_started = Clock::now();
    std::optional<facts::Stall> stalled;
    const std::string fingerprint = fingerprint_of(env, stalled);
    if (stalled) {
      std::lock_guard lock(m_progress_mutex);
      env.errors.push_back(
          facts::FactError{facts::FactError::Stage::reading, stalled->message(), stalled});
      m_probes.forget(env.env.prefix.string());
      ++m_done;
      tell_finished(env, "error", env_started);
      return;
    }
    {
      std::lock_guard lock(m_progress_mutex);
      m_seen.insert(env.env.prefix.string());
    }
    auto reusable = m_probes.reusable(env.env.prefix.string(), fingerprint, env_started,
                                      m_settings.reprobe_interval);
    if (m_observer.env_started) {
      m_observer.env_started(env.env.name, reusable.has_value());
    }
    freshness::ProbeCache::Entry result;
    std::string failure;
    if (reusable) {
      result = std::move(*reusable);
    } else {
      failure = probe(env, fingerprint, env_started, result, stalled);
    }
    {
      std::lock_guard lock(m_progress_mutex);
      record_probe(env, reusable.has_value(), std::move(result), failure, stalled);
    }
    // Judged once, on this env's thread, with what its probe found.
    m_judged[index] = contracts::judge_env_contained(m_contract.contract, env, m_judged_on);
    std::lock_guard lock(m_progress_mutex);
    ++m_done;
    tell_partial_report(index);
    tell_finished(env, contracts::to_string(m_judged[index]->verdict), env_started);
  }

  // What decides whether the env is probed again. An env that was not read
  // (a user's mount in it, a reader that blocked) is not touched again: none
  // of its code runs, so there is nothing to fingerprint. The fingerprint
  // stats the env's files: bounded like every other read of them, and an
  // env whose files block (`stalled`) is not probed.
  std::string fingerprint_of(const facts::EnvFacts& env, std::optional<facts::Stall>& stalled) {
    auto fingerprint = std::make_shared<std::string>(m_probes.kept_fingerprint(env));
    const bool unread =
        !env.env.user_mount.empty() ||
        std::any_of(env.errors.begin(), env.errors.end(), [](const probes::FactError& error) {
          return error.stage == probes::FactError::Stage::reading;
        });
    if (!unread && fingerprint->empty()) {
      // Taken here, from the facts; the job, which may be left behind on a
      // stalled mount, holds its own copy and only stats.
      auto input = std::make_shared<const freshness::FingerprintInput>(
          freshness::fingerprint_input(env, m_contract.identity.sha256));
      stalled = process::run_bounded("fingerprint " + env.env.prefix.string(),
                                     "reading the files of " + env.env.prefix.string(),
                                     m_settings.facts.reading_deadline, m_cancellation.get(),
                                     [fingerprint, input](const process::Cancellation&) {
                                       *fingerprint = freshness::env_fingerprint(*input);
                                     });
      if (stalled) {
        // The job left behind may still write the string: it is its own now.
        return {};
      }
    }
    return *fingerprint;
  }

  // Runs the env's probe: "" and its `result`, or why it failed. One env's
  // failure is that env's error: the others are probed and the scan
  // finishes.
  std::string probe(const facts::EnvFacts& env, const std::string& fingerprint,
                    Clock::time_point env_started, freshness::ProbeCache::Entry& result,
                    std::optional<facts::Stall>& stalled) {
    try {
      std::optional<facts::Stall> probe_stall;
      auto dynamic = probe_bounded(env, m_plan, m_settings, m_cancellation.get(), probe_stall);
      if (probe_stall) {
        stalled = std::move(probe_stall);
        return stalled->message();
      }
      result = {fingerprint, std::move(dynamic), common::now_rfc3339(), env_started};
      return {};
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "an unknown exception";
    }
  }

  // The probe's facts into the env's, and into the cache unless it was cut
  // short. Under the progress lock.
  void record_probe(facts::EnvFacts& env, bool reused, freshness::ProbeCache::Entry result,
                    const std::string& failure, const std::optional<facts::Stall>& stalled) {
    if (failure.empty()) {
      env.dynamic = result.dynamic;
      env.probed_at = result.probed_at;
    } else {
      env.errors.push_back(
          facts::FactError{facts::FactError::Stage::dynamic_probe, failure, stalled});
    }
    m_probed += reused ? 0 : 1;
    // A probe cut short says nothing about the env: the next scan probes it anew.
    if (failure.empty() && !m_cancellation->cancelled()) {
      m_probes.put(env.env.prefix.string(), std::move(result));
    } else {
      m_probes.forget(env.env.prefix.string());
    }
  }

  // The envs judged so far, after each but the last. Under the progress lock.
  void tell_partial_report(std::size_t index) {
    if (!m_observer.partial_report || m_done >= m_facts.envs.size()) {
      return;
    }
    try {
      const auto entry = judged_alone(m_contract, m_facts, index, *m_judged[index], m_partial_top);
      if (entry.value("verdict", "") == "compliant") {
        m_compliant_envs.push_back(entry.value("name", ""));
      }
      m_finished[index] = common::json_text(entry);
      m_observer.partial_report(
          partial_report(*m_partial_top, m_finished, m_facts, m_compliant_envs));
    } catch (const std::exception& e) {
      spdlog::warn("no partial report after {}: {}", m_facts.envs[index].env.name, e.what());
    }
  }

  // Under the progress lock.
  void tell_finished(const facts::EnvFacts& env, const std::string& verdict,
                     Clock::time_point env_started) {
    if (m_observer.env_finished) {
      m_observer.env_finished(
          env.env.name, verdict,
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - env_started), m_done,
          m_facts.envs.size());
    }
  }

  const LoadedContract& m_contract;
  const ScanSettings& m_settings;
  const ScanObserver& m_observer;
  facts::HostFacts& m_facts;
  const probes::ProbePlan& m_plan;
  std::shared_ptr<process::Cancellation> m_cancellation;
  freshness::ProbeCache& m_probes;
  // Each env's judgement, written by its own thread only, all as of one
  // moment (a waiver that ends today ends for every env of the report).
  std::vector<std::optional<contracts::EnvJudgement>> m_judged;
  const std::chrono::system_clock::time_point m_judged_on = std::chrono::system_clock::now();

  std::mutex m_progress_mutex;  // guards what follows
  std::size_t m_done = 0;
  std::size_t m_probed = 0;
  std::set<std::string> m_seen;
  // Each finished env's report entry as text, for partial reports.
  std::vector<std::string> m_finished;
  std::vector<std::string> m_compliant_envs;
  std::optional<report::Json> m_partial_top;
};

}  // namespace

void Scanner::start_or_stop_watch(const ScanSettings& settings) {
  if (!settings.watch_changes && m_caches->kept.watch()) {
    // Turned off (a configuration reloaded).
    m_caches->kept.stop_watching();
    m_watch_tried = false;
  }
  if (settings.watch_changes && !m_watch_tried) {
    m_watch_tried = true;
    std::string why_not;
    auto watch = freshness::ChangeWatch::start(why_not);
    m_caches->kept.watch_with(watch);
    if (!watch) {
      spdlog::warn("file changes are not watched ({}): every scan reads every env's files",
                   why_not);
    }
  }
}

report::Report Scanner::scan(const LoadedContract& contract, const ScanSettings& settings,
                             const ScanObserver& observer) {
  std::lock_guard scan_lock(m_scan_mutex);
  // A container's envs share one engine exec per user for the scan.
  const discovery::ExecSessionScope exec_sessions;
  const auto started = std::chrono::steady_clock::now();
  const auto cancellation = std::make_shared<process::Cancellation>();
  {
    std::lock_guard lock(m_cancel_mutex);
    m_running = cancellation;
    if (!m_cancelled_for.empty()) {
      cancellation->cancel(m_cancelled_for);
    }
  }
  const Watchdog watchdog(settings.scan_deadline, *cancellation, settings.cancelled_by);
  start_or_stop_watch(settings);
  auto options = settings.facts;
  if (settings.watch_changes && settings.reprobe_interval.count() > 0) {
    options.keep_unchanged_for = settings.reprobe_interval;
    options.keep_key = contract.identity.sha256;
  }
  auto plan = plan_from_contract(&contract.contract);
  options.request = static_cast<const facts::ProbeRequest&>(plan);
  options.cancellation = cancellation.get();
  options.concurrency = settings.concurrency;
  options.probe_limits = settings.probe_limits;
  auto facts = probes::gather_host_facts(options, m_caches);
  // Parsed libraries serve this scan's envs only: kept, they made most of
  // an idle agent's memory (6.7 of 9.2 MB of heap on a 16-env host), and a
  // real libtorch's symbol tables alone are tens of MB.
  m_caches->elf_files.clear();
  plan.resources = settings.probe_limits;
  plan.env_deadline = settings.env_deadline;
  plan.cancellation = cancellation.get();
  // Envs whose facts are kept are not probed again, so they hold no lane (one
  // whose last probe left no record is probed after all, beside the lanes).
  const auto probed_envs = static_cast<std::size_t>(std::count_if(
      facts.envs.begin(), facts.envs.end(), [](const auto& env) { return !env.kept; }));
  const auto lanes = std::make_shared<const probes::ProbeLanes>(settings.concurrency, probed_envs);
  plan.lanes = lanes;
  if (observer.started) {
    observer.started(facts.envs.size());
  }
  ScanRun run(contract, settings, observer, facts, plan, cancellation, *m_probes);
  const auto judgement = run.run(lanes);
  m_last_probed = run.probed();
  m_last_reused = facts.envs.size() - run.probed();
  m_last_read = static_cast<std::size_t>(std::count_if(facts.envs.begin(), facts.envs.end(),
                                                       [](const auto& env) { return !env.kept; }));
  const auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started);
  {
    std::lock_guard lock(m_cancel_mutex);
    m_running.reset();
  }
  auto report = report::build_report(contract.identity, judgement, facts, elapsed.count());
  m_caches->kept.give_back(facts.envs);
  return report;
}

}  // namespace envcontract::daemon
