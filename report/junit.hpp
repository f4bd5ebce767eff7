#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace envcontract::report {

// One host's answer for JUnit: its report, or why there is none.
struct JunitHost {
  std::string name;      // as the operator wrote it: a host, or this host's name
  const Report* report;  // nullptr when the host could not be asked or judged
  std::string error;     // why there is no report
};

// Reports as JUnit XML, the format CI systems read: one <testsuite> per env
// (named "host/env") and one for each host's targets, one <testcase> per
// check. A failing check is a <failure> whose message is the diagnosis'
// summary and whose text holds cause, evidence and remedy; a check that could
// not be judged is an <error>, a skipped one <skipped>. A host without a
// report is a suite with one <error> saying why.
std::string junit_xml(const std::vector<JunitHost>& hosts);

}  // namespace envcontract::report
