#pragma once

#include <filesystem>
#include <string>

#include "common/result.hpp"
#include "daemon/agent_config.hpp"

namespace envcontract::daemon {

// "http://HOST:PORT/" of a server bound to `address` on `port` (an IPv6
// host in brackets).
std::string served_url(const ListenAddress& address, int port);

// Writes `url` and a newline to `file` for scripts waiting for the server,
// through a rename so that a reader never sees half a line. Returns the file
// written (none given: nothing written, an empty path), or why it could not
// be, naming the file and what to do; nothing is left behind then.
common::Result<std::filesystem::path> write_ready_file(const std::filesystem::path& file,
                                                       const std::string& url);

// The last start-up step of a server: the ready file written
// (write_ready_file), then READY=1 told to systemd. Returns the file, or why
// it could not be written (systemd is then told nothing).
common::Result<std::filesystem::path> announce_ready(const std::filesystem::path& file,
                                                     const std::string& url);

}  // namespace envcontract::daemon
