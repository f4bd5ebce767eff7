#include "daemon/connection_admission.hpp"

#include <gtest/gtest.h>

#include <string>

namespace envcontract::daemon {
namespace {

ConnectionBounds bounds(std::size_t total, std::size_t per_client, std::size_t reserve) {
  ConnectionBounds result;
  result.total = total;
  result.per_client = per_client;
  result.health_reserve = reserve;
  return result;
}

TEST(ConnectionAdmission, DefaultsAreAQuarterPerClientAndEightForHealthChecks) {
  const auto agent = ConnectionBounds::of(256, 0);
  EXPECT_EQ(agent.total, 256U);
  EXPECT_EQ(agent.per_client, 64U);
  EXPECT_EQ(agent.health_reserve, 8U);
  const auto chosen = ConnectionBounds::of(256, 10);
  EXPECT_EQ(chosen.per_client, 10U);
  const auto small = ConnectionBounds::of(12, 0);
  EXPECT_EQ(small.per_client, 3U);
  EXPECT_EQ(small.health_reserve, 3U);
  const auto one = ConnectionBounds::of(0, 0);
  EXPECT_EQ(one.total, 1U);
  EXPECT_EQ(one.per_client, 1U);
  EXPECT_EQ(one.health_reserve, 0U);
}

TEST(ConnectionAdmission, OneAddressHoldsItsShareAndNoMore) {
  ConnectionAdmission admission(bounds(16, 4, 2));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(admission.admit("127.0.0.2"), Admission::serve);
  }
  EXPECT_EQ(admission.admit("127.0.0.2"), Admission::refused_client);
  EXPECT_EQ(admission.admit("127.0.0.1"), Admission::serve);
  EXPECT_EQ(admission.open(), 5U);
  admission.release("127.0.0.2");
  EXPECT_EQ(admission.admit("127.0.0.2"), Admission::serve);
}

TEST(ConnectionAdmission, TheReserveGoesToClientsHoldingNoOtherConnection) {
  ConnectionAdmission admission(bounds(8, 8, 3));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(admission.admit("10.0.0.1"), Admission::serve);
  }
  // The rest are the reserve: not for a client that can ask on its own.
  EXPECT_EQ(admission.admit("10.0.0.1"), Admission::refused_full);
  EXPECT_EQ(admission.admit("10.0.0.2"), Admission::health_only);
  EXPECT_EQ(admission.admit("10.0.0.2"), Admission::refused_full);
  EXPECT_EQ(admission.admit("10.0.0.3"), Admission::health_only);
  EXPECT_EQ(admission.admit("10.0.0.4"), Admission::health_only);
  EXPECT_EQ(admission.admit("10.0.0.5"), Admission::refused_full);
  EXPECT_EQ(admission.open(), 8U);
  admission.release("10.0.0.3");
  EXPECT_EQ(admission.admit("10.0.0.5"), Admission::health_only);
  // The reserve is the last 3 of the 8, whoever holds the first 5.
  for (int i = 0; i < 3; ++i) {
    admission.release("10.0.0.1");
  }
  EXPECT_EQ(admission.admit("10.0.0.6"), Admission::health_only);
  admission.release("10.0.0.1");
  admission.release("10.0.0.1");
  EXPECT_EQ(admission.open(), 4U);
  EXPECT_EQ(admission.admit("10.0.0.7"), Admission::serve);
}

TEST(ConnectionAdmission, ReleasingWhatWasNeverAdmittedChangesNothing) {
  ConnectionAdmission admission(bounds(2, 2, 0));
  EXPECT_EQ(admission.admit("a"), Admission::serve);
  admission.release("b");
  EXPECT_EQ(admission.open(), 1U);
  EXPECT_EQ(admission.admit("a"), Admission::serve);
  EXPECT_EQ(admission.admit("c"), Admission::refused_full);
}

}  // namespace
}  // namespace envcontract::daemon
