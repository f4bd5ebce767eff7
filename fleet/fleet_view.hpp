#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "fleet/host_reports.hpp"

// What the fleet page and `/api/v1/fleet` show (docs/fleet.md): one row per
// host (verdict, contract, platform, image, drifting envs, top causes, last
// scan, up or down), the failing checks and causes counted across the
// hosts shown, and compliance over time. Made of HostReports, whether they
// came from Prometheus or from agents asked directly.
namespace envcontract::fleet {

// Which hosts to show; an empty field matches every host.
struct FleetFilter {
  std::string verdict;   // compliant, drift, error, pending or unavailable
  std::string cause;     // a diagnosis cause ("cuda_build") of a failing check
  std::string check;     // a failing check's id
  std::string platform;  // the contract's platform

  Json to_json() const;
};

// The filter of a request's query parameters (verdict, cause, check,
// platform); an unknown verdict or parameter is an error that names the
// allowed ones.
common::Result<FleetFilter> parse_fleet_filter(
    const std::multimap<std::string, std::string>& params);

// One moment of the fleet's compliance: how many hosts had each verdict.
struct CompliancePoint {
  std::string time;  // RFC 3339
  int compliant = 0;
  int drift = 0;
  int error = 0;
  int down = 0;  // unavailable: not answering, or no verdict
};

struct ComplianceHistory {
  int step_seconds = 0;
  std::vector<CompliancePoint> points;  // oldest first
  std::string problem;                  // why there is none (Prometheus refused the query)
  std::string scope;                    // which hosts it counts, in words ("" : all)
};

// Whether a filter's value matches a host's: the same letters whatever
// their case ("ASCEND" is the ascend platform).
bool same_value(const std::string& wanted, const std::string& value);

// Whether a host is one `filter` shows: its state now, and its platform,
// failing checks and causes (for a host that is down, as last known).
bool host_matches(const HostReport& host, const FleetFilter& filter);

// The counts of one set of hosts, as a point in time.
CompliancePoint count_verdicts(const std::vector<HostReport>& hosts, const std::string& time);

// The fleet as `/api/v1/fleet` answers it (docs/api.md): `source` says where
// the hosts came from; the counts, checks and causes are those of the
// hosts that match `filter`; `platforms`, `checks_known` and `causes_known`
// list every value of the unfiltered fleet, for the page's filters.
Json fleet_view(const std::vector<HostReport>& hosts, const FleetFilter& filter,
                const std::string& source, const ComplianceHistory& history);

// A history as the view's JSON writes it: step_seconds, points, and its
// problem and scope when it has them.
Json history_json(const ComplianceHistory& history);

// A host's row of the view (exposed for tests).
Json host_row(const HostReport& host);

}  // namespace envcontract::fleet
