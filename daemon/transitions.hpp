#pragma once

#include "report/report.hpp"

namespace envcontract::daemon {

// What changed between two reports of one host that people want to be told
// about (docs/fleet.md, webhooks), as a JSON array of events:
//   {"kind": "host", "from": "compliant", "to": "drift"}
//   {"kind": "env", "env": NAME, "from": ..., "to": ..., "failing": [...]}
//       when an env starts or stops complying, appears or goes ("from" or
//       "to" null); "failing" lists its failing checks with their causes
//       and summaries;
//   {"kind": "hang", "env": NAME, "check": ID, "summary": ...}
//       when a check starts hanging.
// `previous` is null before the host's first report.
report::Json transitions(const report::Report* previous, const report::Report& current);

}  // namespace envcontract::daemon
