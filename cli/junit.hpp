#pragma once

#include <string>
#include <vector>

#include "cli/fleet.hpp"

namespace envcontract::cli {

// Reports as JUnit XML, the format CI systems read: one <testsuite> per env
// (named "host/env") and one for each host's targets, one <testcase> per
// check. A failing check is a <failure> whose message is the diagnosis'
// summary and whose text holds cause, evidence and remedy; a check that could
// not be judged is an <error>, a skipped one <skipped>. A host without a
// report is a suite with one <error> saying why.
std::string junit_xml(const std::vector<HostReport>& hosts);

}  // namespace envcontract::cli
