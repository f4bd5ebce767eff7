#pragma once

#include <string>
#include <utility>
#include <vector>

#include "process/process_runner.hpp"

namespace envcontract::probes {

// `text` with $NAME and ${NAME} replaced by their values in `environment`, as
// Python's os.path.expandvars does: names of letters, digits and '_'; an unset
// one is left as written, so a mistake shows in the command's output rather
// than as an empty string.
std::string expand_variables(const std::string& text, const facts::Environment& environment);

// `layers` applied over `base` in order, each value expanded against the
// environment built so far (integration_environment, then an entry's own
// `environment`, as the CI runner applies them).
facts::Environment layered_environment(
    facts::Environment base, const std::vector<std::pair<std::string, std::string>>& layers);

// The argv the CI runner uses for a command: bash without profile or rc
// files, stopping at the first failing line, unset variable or failing pipe.
std::vector<std::string> ci_runner_argv(const std::string& command);

}  // namespace envcontract::probes
