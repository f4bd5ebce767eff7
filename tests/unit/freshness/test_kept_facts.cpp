// Facts kept between scans (KeptFacts) with the kernel's real change watch
// over a real temporary directory: lent while nothing they were read from
// changed, under the same key, within their time; forgotten otherwise.
#include "freshness/kept_facts.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "process/read_dependencies.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::freshness {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

class KeptFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    m_watch = ChangeWatch::start(why_not);
    if (!m_watch) {
      GTEST_SKIP() << "skipped: the kernel will not watch filesystems here: " << why_not;
    }
    m_kept.watch_with(m_watch);
    m_mounts = process::MountTable::load();
    m_file = m_dir.write("env/bin/python", "#!/bin/sh\n");
    // The first read of a filesystem not yet watched counts as changed once.
    ASSERT_TRUE(m_watch->changed(*read_interest()).has_value());
  }

  // An interest in the env's one file, settled as a finished read's is.
  std::shared_ptr<ChangeWatch::Interest> read_interest() {
    auto interest = m_watch->open();
    process::ReadDependencies read;
    read.paths.insert(m_file);
    read.files.insert(m_file);
    EXPECT_EQ(m_watch->settle(*interest, read, m_mounts), "");
    return interest;
  }

  facts::EnvFacts env_facts() const {
    facts::EnvFacts env;
    env.env.prefix = m_dir.path() / "env";
    env.env.python = m_file;
    env.device_nodes.push_back({"/dev/xpu*", {"/dev/xpu0"}});
    env.probed_at = "2026-12-06T00:00:00Z";
    return env;
  }

  std::filesystem::path prefix() const { return m_dir.path() / "env"; }

  testing::TempDir m_dir;
  std::filesystem::path m_file;
  std::shared_ptr<ChangeWatch> m_watch;
  process::MountTable m_mounts;
  KeptFacts m_kept;
};

TEST_F(KeptFactsTest, UnchangedFactsAreLentOnceAndGivenBackWithoutWhatTheHostGave) {
  m_kept.keep(env_facts(), "contract", read_interest());
  auto lent = m_kept.lend(prefix(), "contract", hours(1), {"conda's environments.txt"});
  ASSERT_TRUE(lent.has_value());
  EXPECT_TRUE(lent->kept);
  EXPECT_EQ(lent->env.found_by, std::vector<std::string>{"conda's environments.txt"});
  EXPECT_TRUE(lent->device_nodes.empty()) << "device nodes are the host's, given at each scan";
  EXPECT_TRUE(lent->probed_at.empty()) << "what its code showed is the scanner's";

  // What the scan added is not kept with them.
  lent->device_nodes = env_facts().device_nodes;
  lent->errors.push_back({facts::FactError::Stage::dynamic_probe, "timed out", std::nullopt});
  std::vector<facts::EnvFacts> scan{std::move(*lent)};
  m_kept.give_back(scan);
  const auto again = m_kept.lend(prefix(), "contract", hours(1), {});
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->errors.empty());
  EXPECT_TRUE(again->device_nodes.empty());
}

TEST_F(KeptFactsTest, FactsLentAndNeverGivenBackAreReadAgain) {
  m_kept.keep(env_facts(), "contract", read_interest());
  ASSERT_TRUE(m_kept.lend(prefix(), "contract", hours(1), {}).has_value());
  EXPECT_FALSE(m_kept.lend(prefix(), "contract", hours(1), {}).has_value());
  EXPECT_EQ(m_kept.size(), 0U);
}

TEST_F(KeptFactsTest, AChangedFileAnotherKeyOrAnExpiredTimeForgetsThem) {
  m_kept.keep(env_facts(), "contract", read_interest());
  std::ofstream(m_file, std::ios::app) << "# edited\n";
  EXPECT_FALSE(m_kept.lend(prefix(), "contract", hours(1), {}).has_value());
  EXPECT_EQ(m_kept.size(), 0U) << "a changed env is forgotten, not kept for later";

  // Each below would have been lent as it was asked first.
  m_kept.keep(env_facts(), "contract", read_interest());
  std::vector<facts::EnvFacts> lent;
  lent.push_back(m_kept.lend(prefix(), "contract", hours(1), {}).value());
  m_kept.give_back(lent);
  EXPECT_FALSE(m_kept.lend(prefix(), "another contract", hours(1), {}).has_value());
  EXPECT_FALSE(m_kept.lend(prefix(), "contract", hours(1), {}).has_value())
      << "facts kept for another key are forgotten";

  m_kept.keep(env_facts(), "contract", read_interest());
  lent.clear();
  lent.push_back(m_kept.lend(prefix(), "contract", hours(1), {}).value());
  m_kept.give_back(lent);
  EXPECT_FALSE(m_kept.lend(prefix(), "contract", milliseconds(0), {}).has_value());
  EXPECT_EQ(m_kept.size(), 0U);
}

// Facts kept while no watch runs (it was never started) are never lent:
// nothing would say they changed.
TEST_F(KeptFactsTest, WithoutAWatchNothingIsLent) {
  KeptFacts unwatched;
  unwatched.keep(env_facts(), "contract", read_interest());
  EXPECT_EQ(unwatched.size(), 1U);
  EXPECT_FALSE(unwatched.lend(prefix(), "contract", hours(1), {}).has_value());
}

TEST_F(KeptFactsTest, OtherMountsOrNoWatchKeepNothing) {
  m_kept.read_under("mounts as at the first scan");
  m_kept.keep(env_facts(), "contract", read_interest());
  m_kept.read_under("mounts as at the first scan");
  EXPECT_EQ(m_kept.size(), 1U) << "the same mounts keep what was read under them";
  m_kept.read_under("a mount made since");
  EXPECT_EQ(m_kept.size(), 0U);

  m_kept.keep(env_facts(), "contract", read_interest());
  m_kept.forget_all_but({"/somewhere/else"});
  EXPECT_EQ(m_kept.size(), 0U) << "an env no longer found is forgotten";

  m_kept.keep(env_facts(), "contract", read_interest());
  m_kept.stop_watching();
  EXPECT_EQ(m_kept.watch(), nullptr);
  EXPECT_FALSE(m_kept.lend(prefix(), "contract", hours(1), {}).has_value());
}

}  // namespace
}  // namespace envcontract::freshness
