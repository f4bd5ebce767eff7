#pragma once

#include <memory>

#include "daemon/http_api.hpp"
#include "fleet/fleet_source.hpp"

namespace envcontract::daemon {

// The fleet view's routes (docs/api.md, "Fleet mode"): the page, its JSON
// (`/api/v1/fleet`), one host's report fetched from its agent on demand,
// and /healthz. Hosts are only those the source lists: the view never asks
// an address a request names.
class FleetService {
 public:
  FleetService(std::unique_ptr<fleet::FleetSource> source, fleet::ClientOptions agent_client,
               std::string version);
  PlainResponse answer(const PlainRequest& request);

 private:
  PlainResponse fleet(const PlainRequest& request);
  PlainResponse host_report(const std::string& host);
  fleet::ComplianceHistory filtered_history(const fleet::FleetFilter& filter,
                                            const report::Json& view);
  static PlainResponse asset(const std::string& path);

  std::unique_ptr<fleet::FleetSource> m_source;
  fleet::ClientOptions m_agent_client;
  std::string m_version;
};

}  // namespace envcontract::daemon
