// A reader that did not finish in time, in one sentence and in JSON: what
// it read, where it blocked, and whether it was started at all.
#include "facts/host.hpp"

#include <gtest/gtest.h>

namespace envcontract::facts {
namespace {

Stall blocked() {
  Stall stall;
  stall.what = "the facts of env victim";
  stall.last_path = "/srv/envs/victim/lib/python3.10/site-packages/torch";
  stall.system_call = "openat";
  stall.kernel_wait = "fuse_wait_answer";
  stall.deadline = std::chrono::seconds(30);
  stall.since = "2026-12-06T07:00:00Z";
  return stall;
}

TEST(HostFacts, AStallSaysWhereItsReaderBlocked) {
  EXPECT_EQ(blocked().message(),
            "the facts of env victim did not finish within 30 s: its reader is blocked in the "
            "kernel (openat, asleep in fuse_wait_answer), reading "
            "/srv/envs/victim/lib/python3.10/site-packages/torch: a filesystem there does not "
            "answer (a FUSE server, a dead network mount)");
  Stall slow = blocked();
  slow.running = true;
  EXPECT_EQ(slow.message(),
            "the facts of env victim did not finish within 30 s: its reader is still working, "
            "reading /srv/envs/victim/lib/python3.10/site-packages/torch: a filesystem there is "
            "very slow, or the env very large")
      << "a running reader is not said to sleep in the kernel";
}

TEST(HostFacts, AStallThatStartedNoReaderSaysWhy) {
  Stall earlier = blocked();
  earlier.from_earlier = true;
  EXPECT_EQ(earlier.message().rfind("the facts of env victim not read: the reader started at "
                                    "2026-12-06T07:00:00Z is still blocked",
                                    0),
            0U)
      << earlier.message();
  Stall crowded = blocked();
  crowded.too_many = true;
  EXPECT_EQ(crowded.message(),
            "the facts of env victim not read: " + std::to_string(k_max_blocked_readers) +
                " readers of this agent are blocked already (filesystems "
                "that do not answer)");
  Stall same = blocked();
  same.same_filesystem = "/srv/envs";
  EXPECT_NE(same.message().find("not started: it is on /srv/envs"), std::string::npos);
}

TEST(HostFacts, AFactErrorCarriesItsStallAsFields) {
  FactError error{FactError::Stage::reading, blocked().message(), blocked()};
  const Json json = to_json(error);
  EXPECT_EQ(json["stage"], "reading");
  EXPECT_EQ(json["stalled"]["system_call"], "openat");
  EXPECT_EQ(json["stalled"]["deadline_s"], 30);
  EXPECT_EQ(json["stalled"]["from_earlier_scan"], false);
  Stall unknown = blocked();
  unknown.kernel_wait.clear();
  EXPECT_EQ(to_json(FactError{FactError::Stage::reading, "", unknown})["stalled"]["kernel_wait"],
            nullptr)
      << "unknown is null, not an empty string";
  EXPECT_FALSE(to_json(FactError{FactError::Stage::static_facts, "no such file", std::nullopt})
                   .contains("stalled"));
}

TEST(HostFacts, AnImageTagSaysWhereItWasRead) {
  EXPECT_EQ(to_json(ImageTag{"harbor.example/flagos:2.2.0", "file /etc/flagos-image", ""}),
            Json({{"value", "harbor.example/flagos:2.2.0"},
                  {"source", "file /etc/flagos-image"},
                  {"problem", ""}}));
}

}  // namespace
}  // namespace envcontract::facts
