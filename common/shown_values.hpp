#pragma once

#include <string>
#include <string_view>

// What reports may show of an environment variable's value. Reports are
// served to whoever reaches the agent (and through the fleet view), and
// envs' activation scripts and hosts set tokens and keys: only values that
// say where things are found are shown.
namespace envcontract::common {

// True for search paths, homes, prefixes and roots (names ending in PATH,
// HOME, PREFIX, ROOT or _DIR), LD_PRELOAD, VIRTUAL_ENV and a few CONDA_
// variables, unless the name also holds TOKEN, SECRET, PASSW, CREDENTIAL,
// AUTH or API_KEY.
bool variable_value_shown(std::string_view name);

// `text` with the credentials of every URL in it replaced by "***": the
// user information ("https://user:pass@host/", up to the last '@' before
// the path, as Python splits it) and anaconda's token path ("/t/TOKEN/").
std::string without_credentials(std::string text);

// The value as a report shows it: without credentials when the name's
// value may be shown, else "(set, N bytes; value not shown)".
std::string shown_variable_value(std::string_view name, const std::string& value);

}  // namespace envcontract::common
