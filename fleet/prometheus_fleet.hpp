#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fleet/fleet_view.hpp"
#include "fleet/host_reports.hpp"

// The fleet as Prometheus last scraped it: the agents' /metrics series,
// read back through Prometheus' HTTP query API, turned into one summary
// report per agent, so that the fleet table, JSON and JUnit are those of
// `fleetctl check --inventory`. Prometheus holds the state; nothing here keeps any.
namespace envcontract::fleet {

// The PromQL instant queries asked, (name, query) in the order asked, for the
// agents of scrape job `job`.
std::vector<std::pair<std::string, std::string>> fleet_queries(const std::string& job);

// The hosts from the queries' answers (the `data.result` vector of each, by
// the names of fleet_queries): one per `instance` of the job's `up` series.
// A host that Prometheus cannot scrape is unavailable, with its last verdict
// when Prometheus still holds one; the others get a report made of their
// series: verdict, contract, image, and each env with its failing checks
// and their causes.
std::vector<HostReport> reports_from_samples(const std::map<std::string, Json>& results,
                                             const std::string& prometheus);

// Asks Prometheus (an http:// address) every query of fleet_queries; an
// answer that is not Prometheus' is an error naming the query.
common::Result<std::vector<HostReport>> reports_from_prometheus(const HostAddress& prometheus,
                                                                const std::string& job,
                                                                const ClientOptions& options);

// The range queries of the fleet's compliance over time, (name, query):
// hosts per verdict, and hosts down; of the hosts that match `filter` at
// each step (a verdict filter keeps that verdict's count alone).
std::vector<std::pair<std::string, std::string>> compliance_queries(const std::string& job,
                                                                    const FleetFilter& filter);

// Compliance over time from the range queries' answers (their `data.result`
// matrices, by the names of compliance_queries), one point per step from
// `start` to `end` (Unix seconds).
ComplianceHistory history_from_samples(const std::map<std::string, Json>& results, long start,
                                       long end, int step_seconds);

// Asks Prometheus for the compliance over the last `range`, in `points`
// steps, of the hosts that match `filter`; when the data begins later than
// the range, over the time it covers.
common::Result<ComplianceHistory> history_from_prometheus(const HostAddress& prometheus,
                                                          const std::string& job,
                                                          const FleetFilter& filter,
                                                          std::chrono::seconds range, int points,
                                                          const ClientOptions& options);

}  // namespace envcontract::fleet
