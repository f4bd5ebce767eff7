// Filesystems that never answer (a user's FUSE mount, a dead network mount),
// made for real with a FUSE server that never replies: discovery keeps out of
// users' mounts, an env holding one is named and not read, and a read that
// blocks anyway is left behind at its deadline while the other envs are
// reported.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "common/json_text.hpp"
#include "contracts/host_judgement.hpp"
#include "contracts/judgement.hpp"
#include "probes/host_facts.hpp"
#include "probes/progress_watch.hpp"
#include "process/containment.hpp"
#include "process/mount_table.hpp"
#include "process/process_runner.hpp"
#include "process/scratch_directory.hpp"
#include "process/stall_guard.hpp"
#include "tests/support/contract_text.hpp"
#include "tests/support/hung_mount.hpp"
#include "tests/support/system_venv.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::probes {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using testing::HungMount;

constexpr uid_t k_nobody = 65534;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Polls `condition` every 5 ms for up to 2 s.
bool wait_until_true(const std::function<bool()>& condition) {
  for (const auto end = Clock::now() + std::chrono::seconds(2); Clock::now() < end;) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

class StalledReads : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = HungMount::unavailable(); !why.empty()) {
      GTEST_SKIP() << "skipped: " << why;
    }
    testing::open_to_all(m_dir.path());  // root's envs are read and run as a uid of their own
  }

  static fs::path make_venv(const fs::path& prefix) { return testing::make_system_venv(prefix); }
  static fs::path site_packages(const fs::path& prefix) {
    return testing::system_venv_site(prefix);
  }

  static const EnvFacts* find(const HostFacts& facts, const std::string& name) {
    for (const auto& env : facts.envs) {
      if (env.env.name == name) {
        return &env;
      }
    }
    return nullptr;
  }

  static std::string problems_of(const HostFacts& facts) {
    std::string text;
    for (const auto& problem : facts.problems) {
      text += problem.path.string() + ": " + problem.problem + "\n";
    }
    return text;
  }

  static contracts::Contract contract() {
    auto loaded = testing::load_checks("  - {id: dists, kind: distributions, absent: [leak]}\n");
    EXPECT_TRUE(loaded.contract) << testing::joined(loaded);
    return *loaded.contract;
  }

  testing::TempDir m_dir;
};

// Lines as the kernel writes them (proc(5)), escapes and optional fields included.
TEST(MountTable, UsersFuseMountsAreFoundAndRootsAreNot) {
  const auto table = process::MountTable::parse(
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      "40 22 0:35 / /home/alice/my\\040files rw,nosuid,nodev shared:20 master:3 - fuse.sshfs "
      "alice@laptop: rw,user_id=1000,group_id=1000\n"
      "41 22 0:36 / /cvmfs/sft.cern.ch ro - fuse cvmfs2 ro,user_id=0,group_id=0,allow_other\n"
      "42 22 0:37 / /mnt/usb rw - fuseblk /dev/sdb1 rw,user_id=1001,group_id=1001\n"
      "43 22 0:38 / /mnt/odd rw - fuse.odd odd rw\n"
      "44 22 0:39 / /proc rw - proc proc rw\n"
      "truncated line\n");
  ASSERT_EQ(table.user_mounts().size(), 3U);
  EXPECT_EQ(table.user_mounts()[0].mount_point, "/home/alice/my files");
  EXPECT_EQ(table.user_mounts()[0].fstype, "fuse.sshfs");
  EXPECT_EQ(table.user_mounts()[0].user_id, 1000U);
  EXPECT_EQ(table.user_mounts()[1].fstype, "fuseblk");
  // No user_id= at all: not shown to be root's, so kept out.
  EXPECT_EQ(table.user_mounts()[2].mount_point, "/mnt/odd");

  EXPECT_TRUE(table.holding("/home/alice/my files"));
  EXPECT_TRUE(table.holding("/home/alice/my files/env/bin"));
  EXPECT_FALSE(table.holding("/home/alice/my filesystem"));
  EXPECT_FALSE(table.holding("/cvmfs/sft.cern.ch/lcg/views"));
  EXPECT_TRUE(table.within("/home/alice"));
  EXPECT_FALSE(table.within("/home/bob"));
  EXPECT_NE(process::describe(table.user_mounts()[1])
                .find("/mnt/usb is a fuseblk filesystem mounted by "),
            std::string::npos);
}

TEST_F(StalledReads, AUsersMountIsNeitherSearchedNorRead) {
  const fs::path root = m_dir.path() / "host";
  const fs::path home = root / "home" / "alice";
  fs::create_directories(home / "mnt");
  make_venv(home / "envs" / "good");
  const fs::path holding = make_venv(home / "envs" / "holding");
  fs::create_directories(site_packages(holding) / "mounted");
  // conda's list of envs names one reached through a link into the mount.
  fs::create_symlink(home / "mnt" / "env", home / "linked");
  // Links that lead into the mount, where only a resolver that checks each
  // step sees it: a home's conda directory, an env marker, an envs_dirs entry
  // whose ".." comes after a link.
  fs::create_symlink(home / "mnt" / "dot-conda", home / ".virtualenvs");
  fs::create_directories(home / "proj");
  fs::create_symlink(home / "mnt" / "cm", home / "proj" / "conda-meta");
  fs::create_symlink(home / "mnt" / "x", home / "link");
  fs::create_directories(home / "envs-dir");
  std::ofstream(home / ".condarc") << "envs_dirs: [~/link/../envs-dir]\n";
  // conda's list of envs names one through a link into the mount, and a
  // directory that is no env but holds the mount.
  fs::create_directories(home / ".conda");
  std::ofstream(home / ".conda" / "environments.txt") << (home / "linked").string() << "\n"
                                                      << home.string() << "\n";
  HungMount in_home(home / "mnt", k_nobody);
  HungMount in_env(site_packages(holding) / "mounted", k_nobody);

  HostFactsOptions options;
  options.discovery.roots = {root};
  options.reading_deadline = std::chrono::seconds(30);
  const auto start = Clock::now();
  const auto facts = gather_host_facts(options, std::make_shared<FactCaches>());
  // Nothing waited on either mount: no reader's deadline came into it.
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_EQ(process::blocked_readers(), 0U);

  const std::string problems = problems_of(facts);
  EXPECT_NE(problems.find((home / "mnt").string() + ": " + (home / "mnt").string() +
                          " is a fuse.hung filesystem mounted by "),
            std::string::npos)
      << problems;
  EXPECT_NE(problems.find("(uid 65534): not searched for envs"), std::string::npos) << problems;
  EXPECT_TRUE(facts.incomplete.empty());

  // Only the two envs: no directory became an env for holding the mount.
  EXPECT_EQ(facts.envs.size(), 2U) << problems;
  const auto* good = find(facts, "good");
  ASSERT_NE(good, nullptr) << problems;
  EXPECT_TRUE(good->errors.empty());
  EXPECT_TRUE(good->env.user_mount.empty());
  EXPECT_FALSE(good->static_facts.site_packages.empty());

  const auto* held = find(facts, "holding");
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->env.user_mount, site_packages(holding) / "mounted");
  ASSERT_EQ(held->env.problems.size(), 1U);
  EXPECT_EQ(held->env.problems[0].kind, facts::EnvProblem::Kind::user_mount);
  EXPECT_NE(held->env.problems[0].text.find("mounted is a fuse.hung filesystem mounted by "),
            std::string::npos)
      << held->env.problems[0].text;
  EXPECT_TRUE(discovery::code_refusal(held->env).has_value());

  // Judged: the env is named broken, with the mount, and never compliant.
  const auto host = contracts::judge_host(contract(), facts);
  bool named = false;
  for (const auto& env : host.envs) {
    if (env.name != "holding") {
      EXPECT_EQ(env.judgement.verdict, contracts::EnvVerdict::compliant) << env.name;
      continue;
    }
    EXPECT_NE(env.judgement.verdict, contracts::EnvVerdict::compliant);
    for (const auto& check : env.judgement.checks) {
      if (check.diagnosis && check.diagnosis->cause == "broken_env") {
        named =
            check.diagnosis->summary.find("fuse.hung filesystem mounted by") != std::string::npos;
      }
    }
  }
  EXPECT_TRUE(named) << "no broken_env check names the mount";
}

TEST_F(StalledReads, AReadThatNeverReturnsIsLeftBehindAndNamed) {
  // Root's own mount (user_id=0), such as a network filesystem whose server
  // died: not kept out by rule, so only the deadline saves the scan.
  const fs::path dead = m_dir.path() / "dead";
  fs::create_directories(dead);
  const fs::path victim = make_venv(m_dir.path() / "victim");
  fs::create_symlink(dead / "evil.pth", site_packages(victim) / "evil.pth");
  const fs::path fine = make_venv(m_dir.path() / "fine");
  HungMount mount(dead, 0);

  HostFactsOptions options;
  options.discovery.prefixes = {victim, fine};
  options.reading_deadline = std::chrono::seconds(2);
  auto start = Clock::now();
  const auto facts = gather_host_facts(options, std::make_shared<FactCaches>());
  const double first = seconds_since(start);
  EXPECT_GE(first, 2.0);
  EXPECT_LT(first, 8.0);
  EXPECT_EQ(process::blocked_readers(), 1U);

  const auto* blocked = find(facts, "victim");
  ASSERT_NE(blocked, nullptr) << problems_of(facts);
  ASSERT_EQ(blocked->errors.size(), 1U);
  EXPECT_EQ(blocked->errors[0].stage, facts::FactError::Stage::reading);
  ASSERT_TRUE(blocked->errors[0].stall.has_value());
  const auto& stall = *blocked->errors[0].stall;
  EXPECT_EQ(stall.last_path, (site_packages(victim) / "evil.pth").string());
  EXPECT_NE(stall.kernel_wait, "");  // where it sleeps (request_wait_answer and the like)
  EXPECT_EQ(stall.deadline, std::chrono::seconds(2));
  EXPECT_FALSE(stall.from_earlier);
  EXPECT_NE(blocked->errors[0].message.find("did not finish within 2 s: its reader is blocked"),
            std::string::npos)
      << blocked->errors[0].message;
  const auto* other = find(facts, "fine");
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->errors.empty());
  EXPECT_FALSE(other->static_facts.site_packages.empty());

  const auto json = to_json(facts);
  const auto& stalled = json["envs"][1]["fact_errors"][0]["stalled"];
  EXPECT_EQ(stalled["path"], (site_packages(victim) / "evil.pth").string())
      << common::json_text(json, 1);
  const auto host = contracts::judge_host(contract(), facts);
  for (const auto& env : host.envs) {
    if (env.name == "fine") {
      EXPECT_EQ(env.judgement.verdict, contracts::EnvVerdict::compliant);
      continue;
    }
    EXPECT_EQ(env.judgement.verdict, contracts::EnvVerdict::error)
        << common::json_text(contracts::to_json(env.judgement), 1);
    bool named = false;
    for (const auto& check : env.judgement.checks) {
      named = named || (check.diagnosis && check.diagnosis->cause == "stalled_read" &&
                        check.diagnosis->remedy.find("findmnt -T ") != std::string::npos);
    }
    EXPECT_TRUE(named);
  }

  // The next scan does not start a second reader behind the blocked one.
  start = Clock::now();
  const auto again = gather_host_facts(options, std::make_shared<FactCaches>());
  EXPECT_LT(seconds_since(start), 1.9);
  EXPECT_EQ(process::blocked_readers(), 1U);
  const auto* still = find(again, "victim");
  ASSERT_NE(still, nullptr);
  ASSERT_EQ(still->errors.size(), 1U);
  ASSERT_TRUE(still->errors[0].stall.has_value());
  EXPECT_TRUE(still->errors[0].stall->from_earlier) << "blocked since the scan before";
  EXPECT_NE(still->errors[0].message.find("is still blocked"), std::string::npos)
      << still->errors[0].message;

  // Once the filesystem goes, the reader returns and nothing is left behind.
  mount.release();
  EXPECT_TRUE(process::wait_for_blocked_readers(std::chrono::seconds(10)));
}

TEST_F(StalledReads, OtherEnvsOnANetworkFilesystemThatBlockedAreNotWaitedFor) {
  // The mount table says share/ is NFS (the test cannot kill an NFS server):
  // one env there blocks, through a link into a FUSE mount that never answers.
  const fs::path share = m_dir.path() / "share";
  const fs::path dead = m_dir.path() / "dead";
  fs::create_directories(dead);
  const fs::path first = make_venv(share / "a-blocks");
  fs::create_symlink(dead / "evil.pth", site_packages(first) / "evil.pth");
  // Would block too, if it were started: a second reader left behind.
  const fs::path second = make_venv(share / "b-same-share");
  fs::create_symlink(dead / "worse.pth", site_packages(second) / "worse.pth");
  const fs::path local = make_venv(m_dir.path() / "local");
  HungMount mount(dead, 0);

  HostFactsOptions options;
  options.discovery.prefixes = {share / "a-blocks", share / "b-same-share", local};
  options.discovery.mounts = std::make_shared<const process::MountTable>(
      process::MountTable::parse("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n30 22 0:50 / " +
                                 share.string() + " rw - nfs4 filer:/share rw\n"));
  options.reading_deadline = std::chrono::seconds(2);
  // Envs are read side by side, but those on one share one after another.
  options.concurrency = 4;
  const auto start = Clock::now();
  const auto facts = gather_host_facts(options, std::make_shared<FactCaches>());
  // One deadline, not one per env on the share, and one reader left behind.
  EXPECT_LT(seconds_since(start), 3.9);
  EXPECT_EQ(process::blocked_readers(), 1U);
  const auto* skipped = find(facts, "b-same-share");
  ASSERT_NE(skipped, nullptr);
  ASSERT_EQ(skipped->errors.size(), 1U);
  EXPECT_NE(skipped->errors[0].message.find("not started: it is on " + share.string() +
                                            " (nfs4), where reading " + first.string() +
                                            " blocked in this scan"),
            std::string::npos)
      << skipped->errors[0].message;
  const auto* elsewhere = find(facts, "local");
  ASSERT_NE(elsewhere, nullptr);
  EXPECT_TRUE(elsewhere->errors.empty());
  const auto host = contracts::judge_host(contract(), facts);
  for (const auto& env : host.envs) {
    EXPECT_EQ(env.judgement.verdict,
              env.name == "local" ? contracts::EnvVerdict::compliant : contracts::EnvVerdict::error)
        << env.name;
  }
  mount.release();
  EXPECT_TRUE(process::wait_for_blocked_readers(std::chrono::seconds(10)));
}

TEST_F(StalledReads, ADiscoveryUnitThatBlocksCostsItsOwnEnvsOnly) {
  const fs::path root = m_dir.path() / "host";
  fs::create_directories(root / "opt" / "dead");
  make_venv(root / "opt" / "fine");
  make_venv(root / "home" / "bob" / ".virtualenvs" / "bobenv");
  HostFactsOptions options;
  options.discovery.roots = {root};
  options.reading_deadline = std::chrono::seconds(2);
  const auto caches = std::make_shared<FactCaches>();
  const auto before = gather_host_facts(options, caches);
  ASSERT_EQ(before.envs.size(), 2U) << problems_of(before);

  // The root's walk now blocks (root's own mount, no rule keeps it out).
  HungMount mount(root / "opt" / "dead", 0);
  const auto start = Clock::now();
  const auto facts = gather_host_facts(options, caches);
  EXPECT_LT(seconds_since(start), 8.0);
  ASSERT_EQ(facts.incomplete.size(), 1U);
  const std::string walk = "discovery of " + root.string();
  EXPECT_NE(facts.incomplete[0].find(walk + " did not finish within 2 s"), std::string::npos)
      << facts.incomplete[0];
  EXPECT_NE(problems_of(facts).find((root / "opt" / "dead").string()), std::string::npos)
      << problems_of(facts) << facts.incomplete[0];
  // Bob's home is a unit of its own; the walk's env stands in from the last
  // complete walk.
  const auto* bob = find(facts, "bobenv");
  ASSERT_NE(bob, nullptr);
  EXPECT_TRUE(bob->errors.empty());
  const auto* fine = find(facts, "fine");
  ASSERT_NE(fine, nullptr);
  EXPECT_EQ(fine->env.found_by.back(), "the last complete " + walk);
  EXPECT_TRUE(fine->errors.empty());

  const auto host = contracts::judge_host(contract(), facts);
  EXPECT_EQ(host.verdict, contracts::EnvVerdict::error);
  ASSERT_FALSE(host.reasons.empty());
  EXPECT_NE(host.reasons[0].find(walk + " did not finish"), std::string::npos);

  mount.release();
  EXPECT_TRUE(process::wait_for_blocked_readers(std::chrono::seconds(10)));
}

// The user a probe runs as owns its scratch directory, and fusermount lets a
// user mount on a directory they own: a file the agent reads there (the
// progress, the results, the stacks) made into a mount whose server never
// answers must not block the agent, nor must removing the directory.
TEST_F(StalledReads, AMountInAProbesScratchDirectoryIsNotEntered) {
  auto directory = std::make_unique<process::ScratchDirectory>("envcontract-test", std::nullopt);
  ASSERT_TRUE(directory->ok()) << directory->error();
  const fs::path path = directory->file("progress").parent_path();
  fs::create_directories(path / "progress");
  fs::create_directories(path / "deeper" / "mounted");
  HungMount progress_mount(path / "progress", k_nobody);
  HungMount deeper_mount(path / "deeper" / "mounted", k_nobody);
  const auto reader = directory->reader();
  ASSERT_NE(reader, nullptr);
  // On a thread: a read that blocked would otherwise hang the test itself.
  auto reads = std::async(std::launch::async, [&] {
    const bool nothing_read = !directory->read("progress", 4096) &&
                              !reader->read("progress", 4096) &&
                              !directory->read("deeper/mounted", 4096);
    directory.reset();  // removes what it can, and does not enter the mounts
    return nothing_read;
  });
  const bool finished = reads.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!finished) {
    progress_mount.release();  // unblocks the reader, so that the test can end
    deeper_mount.release();
  }
  ASSERT_TRUE(finished) << "a read inside the scratch directory entered the hung mount";
  EXPECT_TRUE(reads.get());
  progress_mount.release();
  deeper_mount.release();
  fs::remove_all(path);
}

// A server that takes a request and never answers leaves its caller asleep
// where even SIGKILL does not reach: the process runner stops waiting for
// it rather than holding up the scan's thread for good.
TEST_F(StalledReads, AProcessThatCannotBeKilledIsLeftBehindNotWaitedFor) {
  const fs::path dead = m_dir.path() / "taking";
  fs::create_directories(dead);
  HungMount mount(dead, 0, true);
  process::ProcessSpec spec;
  spec.argv = {"/bin/cat", (dead / "file").string()};
  spec.environment = {{"PATH", "/usr/bin:/bin"}};
  process::ProcessLimits limits;
  limits.timeout = std::chrono::seconds(1);
  const auto start = Clock::now();
  const auto result = process::run_process(spec, limits);
  const double waited = seconds_since(start);
  EXPECT_GE(waited, 5.0);  // the timeout, then the grace after SIGKILL
  EXPECT_LT(waited, 12.0);
  EXPECT_EQ(result.outcome, process::ProcessResult::Outcome::timed_out);
  EXPECT_TRUE(result.left_behind);
  EXPECT_NE(result.describe().find("could not be killed"), std::string::npos) << result.describe();
  // Its time is the timeout's, not the killing's.
  EXPECT_LT(result.duration, std::chrono::milliseconds(1500)) << result.describe();

  // The same for a grandchild: the shell dies of SIGKILL, the cat it waits
  // for does not (it is found in the probe's cgroup).
  spec.argv = {"/bin/sh", "-c", "/bin/cat " + (dead / "other").string() + "; true"};
  const auto nested = process::run_process(spec, limits);
  EXPECT_EQ(nested.outcome, process::ProcessResult::Outcome::timed_out);
  if (process::containment_description().starts_with("cgroup")) {
    EXPECT_TRUE(nested.left_behind) << nested.describe();
  }
  mount.release();
}

// Between its start and its program, a child can block for good: entering
// a working directory, or loading a program, on a filesystem that never
// answers. The time-out bounds that too; the agent itself touches neither.
TEST_F(StalledReads, AChildThatBlocksBeforeItsProgramRunsIsBoundedByTheTimeout) {
  const fs::path dead = m_dir.path() / "taking";
  fs::create_directories(dead);
  HungMount mount(dead, 0, true);
  process::ProcessLimits limits;
  limits.timeout = std::chrono::seconds(1);
  process::ProcessSpec in_dead_dir;
  in_dead_dir.argv = {"/bin/true"};
  in_dead_dir.working_dir = dead / "env";
  process::ProcessSpec dead_program;
  dead_program.argv = {(dead / "env" / "bin" / "python").string(), "-c", "pass"};
  for (const auto& spec : {in_dead_dir, dead_program}) {
    const auto start = Clock::now();
    // No env code runs yet: nothing to sample (the child is a copy of the agent).
    int sampled = 0;
    const auto result = process::run_process(spec, limits, [&sampled](pid_t) { ++sampled; });
    EXPECT_LT(seconds_since(start), 12.0);  // the timeout, then the grace after SIGKILL
    EXPECT_EQ(result.outcome, process::ProcessResult::Outcome::timed_out) << result.describe();
    EXPECT_TRUE(result.left_behind) << result.describe();
    EXPECT_EQ(sampled, 0);
  }
  mount.release();
}

// Processes left behind are counted per user they ran as: one user whose
// envs sit on filesystems that never answer stops that user's probes, not
// every user's, until they end.
TEST_F(StalledReads, ProcessesLeftBehindStopOnlyTheirOwnUsersProbes) {
  const fs::path dead = m_dir.path() / "taking";
  fs::create_directories(dead);
  HungMount mount(dead, k_nobody, true);
  auto as = [](uid_t uid) {
    process::ProcessSpec spec;
    spec.environment = {{"PATH", "/usr/bin:/bin"}};
    spec.credentials = process::Credentials{uid, uid, {}};
    return spec;
  };
  process::ProcessLimits limits;
  limits.timeout = std::chrono::milliseconds(500);
  // Eight at once, as a scan's workers would run them. Where a cgroup finds
  // descendants, half are a shell's child: the shell dies, its child is
  // left behind, not the agent's child (or not yet: the subreaper inherits
  // it once the shell is reaped), and is still waited for until it ends.
  const bool nested = process::containment_description().starts_with("cgroup");
  std::vector<std::future<process::ProcessResult>> stuck;
  for (int i = 0; i < 8; ++i) {
    stuck.push_back(std::async(std::launch::async, [&, i] {
      auto spec = as(k_nobody);
      const std::string file = (dead / ("file" + std::to_string(i))).string();
      spec.argv = nested && i % 2 == 1
                      ? std::vector<std::string>{"/bin/sh", "-c", "/bin/cat " + file + "; true"}
                      : std::vector<std::string>{"/bin/cat", file};
      return process::run_process(spec, limits);
    }));
  }
  for (auto& each : stuck) {
    const auto result = each.get();
    ASSERT_TRUE(result.left_behind) << result.describe();
  }
  auto spec = as(k_nobody);
  spec.argv = {"/bin/true"};
  const auto refused = process::run_process(spec, limits);
  EXPECT_EQ(refused.error,
            "8 processes run as uid 65534 are left behind, unkillable (asleep on filesystems "
            "that do not answer): no more are started as that user until they end");
  auto other = as(54321);
  other.argv = {"/bin/true"};
  const auto ran = process::run_process(other, limits);
  EXPECT_TRUE(ran.succeeded()) << ran.describe();

  // Once their filesystem goes, they end, and the user's probes run again.
  mount.release();
  const auto end = Clock::now() + std::chrono::seconds(20);
  process::ProcessResult again;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    again = process::run_process(spec, limits);
  } while (!again.succeeded() && Clock::now() < end);
  EXPECT_TRUE(again.succeeded()) << again.describe();
}

// The progress of a chain is followed from a thread of its own: it sees
// what the child appends, and ends at once when the chain does.
TEST(ProgressWatch, FollowsTheFileAndEndsWithTheChain) {
  process::ScratchDirectory directory("envcontract-test", std::nullopt);
  ASSERT_TRUE(directory.ok()) << directory.error();
  const fs::path file = directory.file("progress");
  std::ofstream(file) << "identity\n";
  const auto started = Clock::now();
  {
    ProgressWatch watch(directory.reader(), "progress", 4096, std::chrono::milliseconds(5));
    EXPECT_TRUE(wait_until_true([&] { return watch.text() == "identity\n"; }));
    std::ofstream(file, std::ios::app) << "imports\n";
    EXPECT_TRUE(wait_until_true([&] { return watch.text() == "identity\nimports\n"; }));
  }
  EXPECT_LT(seconds_since(started), 1.0);
  // Bounded, as every read there is.
  std::ofstream(file, std::ios::app) << std::string(8192, 'x');
  ProgressWatch bounded(directory.reader(), "progress", 4096, std::chrono::milliseconds(5));
  EXPECT_TRUE(wait_until_true([&] { return bounded.text().size() == 4096; }));
}

}  // namespace
}  // namespace envcontract::probes
