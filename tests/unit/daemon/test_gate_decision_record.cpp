// daemon/gate_decision_record.cpp: what a CI job claims is kept bounded and
// printable; a decision's JSON and its outcome's words.
#include <gtest/gtest.h>

#include <string>

#include "daemon/gate_decision_record.hpp"

namespace envcontract {
namespace {

using daemon::claimed;
using daemon::GateDecisionRecord;

TEST(GateDecisionRecord, AClaimIsKeptAsGivenWhenShortAndPrintable) {
  EXPECT_EQ(claimed("github"), "github");
  EXPECT_EQ(claimed("job 42: the runner's image is new, ünïcode kept"),
            "job 42: the runner's image is new, ünïcode kept");
  EXPECT_EQ(claimed(""), "");
}

// Any local user may ask the agent: a claim is never more than 512 bytes as
// stored, even when escaping makes each of its bytes four.
TEST(GateDecisionRecord, AClaimIsBoundedAfterItIsMadePrintable) {
  EXPECT_EQ(claimed(std::string(600, 'a')), std::string(512, 'a'));
  const std::string escapes = claimed(std::string(600, '\x1b'));
  EXPECT_EQ(escapes.size(), 512U);
  EXPECT_EQ(escapes.substr(0, 8), "\\x1b\\x1b");
  EXPECT_EQ(escapes.find('\x1b'), std::string::npos) << "no raw escape reaches a terminal";
  // 510 bytes then two escapes: the second does not fit whole, and is not cut.
  const std::string tail = claimed(std::string(510, 'a') + "\r\n");
  EXPECT_EQ(tail, std::string(510, 'a'));
  const std::string one_fits = claimed(std::string(508, 'a') + "\r\n");
  EXPECT_EQ(one_fits, std::string(508, 'a') + "\\x0d");
}

// A cut at 512 bytes never leaves half a UTF-8 character behind.
TEST(GateDecisionRecord, AClaimIsNeverCutInsideACharacter) {
  std::string text = "a";
  for (int i = 0; i < 300; ++i) {
    text += "é";  // two bytes each
  }
  const std::string shown = claimed(text);
  EXPECT_EQ(shown.size(), 511U) << "a, then 255 whole characters";
  EXPECT_EQ(shown.substr(shown.size() - 2), "é");
}

TEST(GateDecisionRecord, OutcomesAndJudgesAreReadOnlyInTheirOwnWords) {
  EXPECT_EQ(daemon::gate_outcome_from("go"), GateDecisionRecord::Outcome::go);
  EXPECT_EQ(daemon::gate_outcome_from("drift"), GateDecisionRecord::Outcome::drift);
  EXPECT_EQ(daemon::gate_outcome_from("unknown"), GateDecisionRecord::Outcome::unknown);
  EXPECT_FALSE(daemon::gate_outcome_from("GO").has_value());
  EXPECT_FALSE(daemon::gate_outcome_from("").has_value());
  EXPECT_EQ(daemon::judged_by_from("agent"), GateDecisionRecord::JudgedBy::agent);
  EXPECT_EQ(daemon::judged_by_from("job"), GateDecisionRecord::JudgedBy::job);
  EXPECT_FALSE(daemon::judged_by_from("ci").has_value());
}

// A job is stopped when the outcome is not go and nobody bypassed it.
TEST(GateDecisionRecord, StoppedUnlessGoOrBypassed) {
  GateDecisionRecord record;
  record.outcome = GateDecisionRecord::Outcome::drift;
  EXPECT_TRUE(record.stopped());
  record.bypass = "hotfix approved by the on-call";
  EXPECT_FALSE(record.stopped());
  record.bypass.clear();
  record.outcome = GateDecisionRecord::Outcome::go;
  EXPECT_FALSE(record.stopped());
  record.outcome = GateDecisionRecord::Outcome::unknown;
  EXPECT_TRUE(record.stopped()) << "could not judge: not a go";
}

TEST(GateDecisionRecord, ItsJsonSaysNullForWhatWasNotClaimed) {
  GateDecisionRecord record;
  record.id = 7;
  record.at = "2026-12-06T10:00:00Z";
  record.job_id = "42";
  record.env = "/opt/envs/torch-fl";
  record.contract_name = "kunlunxin";
  record.outcome = GateDecisionRecord::Outcome::drift;
  record.judged_by = GateDecisionRecord::JudgedBy::job;
  const auto json = daemon::to_json(record);
  EXPECT_EQ(json["id"], 7);
  EXPECT_TRUE(json["job"]["ci"].is_null());
  EXPECT_EQ(json["job"]["id"], "42");
  EXPECT_TRUE(json["bypass"].is_null());
  EXPECT_EQ(json["outcome"], "drift");
  EXPECT_EQ(json["stopped"], true);
  EXPECT_EQ(json["judged_by"], "job");
  EXPECT_EQ(json["contract"]["name"], "kunlunxin");
}

}  // namespace
}  // namespace envcontract
