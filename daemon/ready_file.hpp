#pragma once

#include <filesystem>
#include <string>

#include "daemon/agent_config.hpp"

namespace envcontract::daemon {

// "http://HOST:PORT/" of a server bound to `address` on `port` (an IPv6
// host in brackets).
std::string served_url(const ListenAddress& address, int port);

// Writes `url` and a newline to `file` for scripts waiting for the server,
// through a rename so that a reader never sees half a line. No file: nothing.
void write_ready_file(const std::filesystem::path& file, const std::string& url);

}  // namespace envcontract::daemon
