// libFuzzer target: any bytes as an agent's report, as fleetctl reads it
// from a host it does not control: every rendering (table, JSON, JUnit,
// fleet summary, diff, history) must cope with whatever the bounded reader
// lets through.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/fleet_render.hpp"
#include "common/json_text.hpp"
#include "fleet/fleet_view.hpp"
#include "fleet/host_reports.hpp"
#include "report/ci_output.hpp"
#include "report/evidence_text.hpp"
#include "report/report_json.hpp"
#include "report/report_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace envcontract;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Read as fleetctl reads an answer: within its bounds, or not at all.
  auto parsed = fleet::parse_answer(text, fleet::ClientOptions{});
  if (!parsed) {
    return 0;
  }
  const auto& json = *parsed;
  // Read as a report whatever it holds; written back, it reads the same.
  const auto read = report::report_from_json(json);
  if (report::to_json(report::report_from_json(report::to_json(read))) != report::to_json(read)) {
    __builtin_trap();
  }
  fleet::HostReport host;
  host.report = read;
  const std::vector<fleet::HostReport> hosts = {host};
  report::TableStyle style;
  (void)report::gate_decision(read);
  (void)report::render_table(read, style);
  (void)report::render_table(read, {true, false});  // -v: evidence as lines
  (void)report::evidence_text(json, "  ");
  (void)cli::fleet_table(hosts, style);
  (void)cli::fleet_summary(hosts);
  (void)common::json_text(cli::fleet_json(hosts));
  (void)cli::fleet_junit(hosts, cli::JunitDetail::every_check);
  (void)cli::fleet_junit(hosts, cli::JunitDetail::failing_checks);
  // The same answer as what is last known of a host that is down, under filters.
  fleet::HostReport down;
  down.last_known = fleet::report_summary(read);
  fleet::FleetFilter filter;
  filter.platform = "Kunlunxin";
  filter.cause = "hang";
  (void)common::json_text(fleet::fleet_view({host, down}, filter, "fuzz", {}));
  (void)fleet::fleet_exit_status(hosts);
  const auto diff = cli::diff_reports(json, cli::Json::object());
  (void)cli::diff_table(diff, "a", "b");
  (void)cli::diff_is_empty(diff);
  if (json.is_object() && json.contains("transitions")) {
    (void)cli::history_table(json["transitions"], style);
  }
  return 0;
}
