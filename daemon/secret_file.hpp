#pragma once

#include <filesystem>
#include <string>

#include "common/result.hpp"

namespace envcontract::daemon {

// A secret kept in a file of its own (the API token, a webhook's HMAC key):
// the file must be private to the agent's user, since a secret others can
// read protects nothing, and hold one value on one line. `what` names it in
// errors ("token file", "webhook secret file").
common::Result<std::string> read_secret_file(const std::filesystem::path& path,
                                             const std::string& what);

}  // namespace envcontract::daemon
