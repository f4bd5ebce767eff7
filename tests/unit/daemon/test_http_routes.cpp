// Routing, Host checks and log escaping of the HTTP side, without a server.
#include "daemon/http_routes.hpp"

#include <gtest/gtest.h>

#include <set>

namespace envcontract::daemon {
namespace {

using Outcome = RouteMatch::Outcome;

TEST(HttpRoutes, FixedPathsTheirMethodsAndHead) {
  EXPECT_EQ(match_route("GET", "/healthz").endpoint, Endpoint::healthz);
  EXPECT_EQ(match_route("HEAD", "/api/v1/report").outcome, Outcome::found);
  EXPECT_EQ(match_route("POST", "/api/v1/scan").endpoint, Endpoint::scan);
  const auto wrong = match_route("GET", "/api/v1/scan");
  EXPECT_EQ(wrong.outcome, Outcome::wrong_method);
  EXPECT_EQ(wrong.allowed, "POST");
  EXPECT_EQ(match_route("DELETE", "/api/v1/report").allowed, "GET");
  EXPECT_EQ(match_route("GET", "/api/v2/everything").outcome, Outcome::not_found);
  EXPECT_EQ(match_route("GET", "/healthz/").outcome, Outcome::not_found);
  EXPECT_EQ(match_route("GET", "/app.js").argument, "/app.js");
}

TEST(HttpRoutes, EnvNamesMayHoldSlashes) {
  const auto venv = match_route("GET", "/api/v1/envs/project/.venv");
  EXPECT_EQ(venv.outcome, Outcome::found);
  EXPECT_EQ(venv.endpoint, Endpoint::env);
  EXPECT_EQ(venv.argument, "project/.venv");
  EXPECT_EQ(match_route("GET", "/api/v1/envs/").outcome, Outcome::not_found);
}

TEST(HttpRoutes, ScanTicketsAreDigits) {
  EXPECT_EQ(match_route("GET", "/api/v1/scans/42").argument, "42");
  EXPECT_EQ(match_route("GET", "/api/v1/scans/4x2").outcome, Outcome::not_found);
  EXPECT_EQ(match_route("GET", "/api/v1/scans/" + std::string(16, '9')).outcome,
            Outcome::not_found);
  EXPECT_EQ(match_route("GET", "/api/v1/scans/").outcome, Outcome::not_found);
}

TEST(HttpRoutes, ProvisioningTakesPostsAndJobsAreDigits) {
  EXPECT_EQ(match_route("POST", "/api/v1/provision").endpoint, Endpoint::provision);
  EXPECT_EQ(match_route("POST", "/api/v1/promote").endpoint, Endpoint::promote);
  EXPECT_EQ(match_route("GET", "/api/v1/provision").allowed, "POST");
  EXPECT_EQ(match_route("GET", "/api/v1/plan").endpoint, Endpoint::plan);
  EXPECT_EQ(match_route("GET", "/api/v1/provisions").endpoint, Endpoint::provisions);
  const auto job = match_route("GET", "/api/v1/provisions/7");
  EXPECT_EQ(job.endpoint, Endpoint::provision_job);
  EXPECT_EQ(job.argument, "7");
  EXPECT_EQ(match_route("POST", "/api/v1/provisions/7").allowed, "GET");
  EXPECT_EQ(match_route("GET", "/api/v1/provisions/7a").outcome, Outcome::not_found);
}

// The 404 answer's list names every endpoint there is, each as it is
// routed: its method and its path (a placeholder standing for a value).
TEST(HttpRoutes, TheEndpointListNamesEveryEndpoint) {
  std::set<Endpoint> listed;
  for (const auto& entry : endpoint_list()) {
    const auto space = entry.find(' ');
    ASSERT_NE(space, std::string::npos) << entry;
    std::string path = entry.substr(space + 1, entry.find(' ', space + 1) - space - 1);
    for (const std::string placeholder : {"{name}", "{id}"}) {
      if (const auto at = path.find(placeholder); at != std::string::npos) {
        path.replace(at, placeholder.size(), "7");
      }
    }
    const auto match = match_route(entry.substr(0, space), path);
    EXPECT_EQ(match.outcome, Outcome::found) << entry;
    listed.insert(match.endpoint);
  }
  EXPECT_EQ(listed.size(), static_cast<std::size_t>(Endpoint::asset) + 1)
      << "an endpoint is missing from endpoint_list()";
}

TEST(HttpRoutes, LongPathsAreAnsweredWithoutRecursion) {
  const std::string path = "/api/v1/envs/" + std::string(1 << 20, 'a');
  EXPECT_EQ(match_route("GET", path).argument.size(), std::size_t{1} << 20);
  EXPECT_EQ(match_route("GET", "/api/v1/scans/" + std::string(1 << 20, '1')).outcome,
            Outcome::not_found);
}

TEST(HttpRoutes, HostsTheAgentAnswersFor) {
  const auto policy = make_host_policy("127.0.0.1", {"Agent.Fleet.Example"});
  EXPECT_TRUE(host_allowed("", policy));
  EXPECT_TRUE(host_allowed("127.0.0.1:9714", policy));
  EXPECT_TRUE(host_allowed("10.1.2.3", policy));
  EXPECT_TRUE(host_allowed("[::1]:9714", policy));
  EXPECT_TRUE(host_allowed("localhost:9714", policy));
  EXPECT_TRUE(host_allowed("LOCALHOST.", policy));
  EXPECT_TRUE(host_allowed("agent.fleet.example:9714", policy));
  EXPECT_FALSE(host_allowed("attacker.example", policy));
  EXPECT_FALSE(host_allowed("attacker.example:9714", policy));
  EXPECT_FALSE(host_allowed("localhost.attacker.example", policy));
  EXPECT_FALSE(host_allowed("127.0.0.1.nip.io", policy));
  EXPECT_FALSE(host_allowed("localhost:97x4", policy));
  EXPECT_FALSE(host_allowed("[::1", policy));
  EXPECT_FALSE(host_allowed(std::string(100000, 'a'), policy));
}

TEST(HttpRoutes, LogTextIsEscapedAndBounded) {
  EXPECT_EQ(printable("GET /x\x1b[31m\nERROR\t\\ \xff"), "GET /x\\x1b[31m\\nERROR\\t\\\\ \\xff");
  EXPECT_EQ(printable(std::string(10, 'a'), 4), "aaaa...(10 bytes)");
}

}  // namespace
}  // namespace envcontract::daemon
