// fleet/host_address.cpp: hosts as operators write them in inventories and
// on the command line.
#include <gtest/gtest.h>

#include <string>

#include "fleet/host_address.hpp"

namespace envcontract::fleet {
namespace {

TEST(HostAddress, NamesAddressesPortsAndHttpUrls) {
  const auto plain = parse_host_address("node-17");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->host, "node-17");
  EXPECT_EQ(plain->port, default_agent_port);
  EXPECT_EQ(plain->base_url(), "http://node-17:9714");

  const auto ported = parse_host_address("node-17.lab.example:9800");
  ASSERT_TRUE(ported.has_value());
  EXPECT_EQ(ported->port, 9800);
  EXPECT_EQ(ported->base_url(), "http://node-17.lab.example:9800");

  const auto url = parse_host_address("http://10.0.0.5:9714/");
  ASSERT_TRUE(url.has_value());
  EXPECT_EQ(url->host, "10.0.0.5");
  EXPECT_EQ(url->text, "http://10.0.0.5:9714/") << "kept as given, for messages";
}

TEST(HostAddress, Ipv6InBracketsAndBackInUrls) {
  const auto v6 = parse_host_address("[fe80::1]:9800");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->host, "fe80::1");
  EXPECT_EQ(v6->base_url(), "http://[fe80::1]:9800");
  EXPECT_FALSE(parse_host_address("fe80::1").has_value()) << "without brackets, a port or not?";
}

TEST(HostAddress, WhatIsNotAHostIsRefused) {
  for (const std::string text : {"", "https://node-17", "HTTP://node-17", "node-17:0",
                                 "node-17:65536", "node-17:", "node_17", "-node", "node-",
                                 "node 17", "node-17/api", "user@node-17", "ftp://node"}) {
    EXPECT_FALSE(parse_host_address(text).has_value()) << text;
  }
  EXPECT_TRUE(parse_host_address("node-17:65535").has_value());
  EXPECT_TRUE(parse_host_address("n").has_value());
}

}  // namespace
}  // namespace envcontract::fleet
