#pragma once

#include <string>

namespace envcontract::daemon {

// Logs to stderr at `level` (trace ... off). Under systemd (JOURNAL_STREAM
// set) lines carry no timestamp: the journal adds its own.
void configure_logging(const std::string& level);

}  // namespace envcontract::daemon
