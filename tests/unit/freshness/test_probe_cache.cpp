// Whether an env's cached probe is reused: the same fingerprint, within the
// reprobe interval; and the fingerprint of an env whose facts were kept.
#include "freshness/probe_cache.hpp"

#include <gtest/gtest.h>

namespace envcontract::freshness {
namespace {

using std::chrono::seconds;

ProbeCache::Entry probed(std::string fingerprint, std::chrono::steady_clock::time_point when) {
  ProbeCache::Entry entry;
  entry.fingerprint = std::move(fingerprint);
  entry.probed_at = "2026-12-06T00:00:00Z";
  entry.when = when;
  return entry;
}

TEST(ProbeCache, AProbeIsReusedUnderItsFingerprintWithinTheInterval) {
  const auto now = std::chrono::steady_clock::now();
  ProbeCache cache;
  cache.put("/envs/a", probed("f1", now));
  EXPECT_TRUE(cache.reusable("/envs/a", "f1", now + seconds(59), seconds(60)).has_value());
  EXPECT_FALSE(cache.reusable("/envs/a", "f1", now + seconds(60), seconds(60)).has_value())
      << "devices come and go without a file changing: probed again after the interval";
  EXPECT_FALSE(cache.reusable("/envs/a", "f2", now, seconds(60)).has_value());
  EXPECT_FALSE(cache.reusable("/envs/a", "f1", now, seconds(0)).has_value())
      << "a zero interval probes every env at every scan";
  EXPECT_FALSE(cache.reusable("/envs/b", "f1", now, seconds(60)).has_value());
}

TEST(ProbeCache, AKeptEnvKeepsItsFingerprintAndOnlyAKeptOne) {
  ProbeCache cache;
  cache.put("/envs/a", probed("f1", std::chrono::steady_clock::now()));
  facts::EnvFacts env;
  env.env.prefix = "/envs/a";
  EXPECT_EQ(cache.kept_fingerprint(env), "") << "facts read again: the fingerprint is taken anew";
  env.kept = true;
  EXPECT_EQ(cache.kept_fingerprint(env), "f1");
  env.env.prefix = "/envs/b";
  EXPECT_EQ(cache.kept_fingerprint(env), "");
}

TEST(ProbeCache, EnvsNotSeenAreForgotten) {
  const auto now = std::chrono::steady_clock::now();
  ProbeCache cache;
  cache.put("/envs/a", probed("f1", now));
  cache.put("/envs/b", probed("f2", now));
  cache.forget_all_but({"/envs/b"});
  EXPECT_FALSE(cache.find("/envs/a").has_value());
  EXPECT_TRUE(cache.find("/envs/b").has_value());
  cache.forget("/envs/b");
  EXPECT_FALSE(cache.find("/envs/b").has_value());
}

// A refusal rests on whom the env runs as and who may write it, which the
// fingerprint does not cover: made anew each scan, so that an env becomes
// runnable as soon as its user exists or its permissions are mended.
TEST(ProbeCache, ARefusalIsNotKept) {
  const auto now = std::chrono::steady_clock::now();
  ProbeCache cache;
  cache.put("/envs/a", probed("f1", now));
  auto refused = probed("f1", now);
  refused.dynamic.refused = facts::CodeRefusal{facts::CodeRefusal::Kind::run_as_unavailable,
                                               "none of this env's code runs: no user 'svc'"};
  cache.put("/envs/a", refused);
  EXPECT_FALSE(cache.find("/envs/a").has_value()) << "and the probe kept before is forgotten";
  EXPECT_FALSE(cache.reusable("/envs/a", "f1", now, std::chrono::hours(1)).has_value());
}

}  // namespace
}  // namespace envcontract::freshness
