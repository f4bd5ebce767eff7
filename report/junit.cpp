#include "report/junit.hpp"

#include <memory>
#include <sstream>

#include "common/json_text.hpp"

namespace envcontract::report {
namespace {

// Escapes for attributes and text; drops characters XML 1.0 cannot carry
// (control characters from a crashed process's output, say).
std::string xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      // A line break stays in the value as a character reference: no value
      // (an env's import error, a test's output) can start a line of its
      // own where the XML is printed, such as a CI log that would take it
      // for a workflow command.
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if (byte >= 0x20 || c == '\t') {
          out += c;
        }
    }
  }
  return out;
}

struct Suite {
  std::string name;
  std::string host;
  int tests = 0;
  int failures = 0;
  int errors = 0;
  int skipped = 0;
  std::ostringstream cases;
};

void add_case(Suite& suite, const std::string& classname, const CheckReport& check) {
  using contracts::CheckStatus;
  const contracts::Diagnosis& diagnosis = diagnosis_of(check);
  ++suite.tests;
  suite.cases << "    <testcase classname=\"" << xml(classname) << "\" name=\"" << xml(check.id)
              << "\" time=\"0\"";
  std::string body;
  if (check.status == CheckStatus::fail || check.status == CheckStatus::error) {
    body = "cause: " + diagnosis.cause + "\nsummary: " + diagnosis.summary +
           "\nevidence: " + common::json_text(diagnosis.evidence) + "\nremedy: " + diagnosis.remedy;
    if (check.since && !check.since->empty()) {
      body += "\nsince: " + *check.since;
    }
  }
  if (check.status == CheckStatus::fail) {
    ++suite.failures;
    suite.cases << ">\n      <failure message=\"" << xml(diagnosis.summary) << "\" type=\""
                << xml(diagnosis.cause) << "\">" << xml(body) << "</failure>\n    </testcase>\n";
  } else if (check.status == CheckStatus::error) {
    ++suite.errors;
    suite.cases << ">\n      <error message=\"" << xml(diagnosis.summary) << "\" type=\""
                << xml(diagnosis.cause) << "\">" << xml(body) << "</error>\n    </testcase>\n";
  } else if (check.status == CheckStatus::skip || check.status == CheckStatus::waived) {
    ++suite.skipped;
    suite.cases << ">\n      <skipped message=\""
                << xml(contracts::to_string(check.status) + ": " + diagnosis.summary)
                << "\"/>\n    </testcase>\n";
  } else {
    suite.cases << "/>\n";
  }
}

void write_suite(std::ostream& out, const Suite& suite) {
  out << "  <testsuite name=\"" << xml(suite.name) << "\" hostname=\"" << xml(suite.host)
      << "\" tests=\"" << suite.tests << "\" failures=\"" << suite.failures << "\" errors=\""
      << suite.errors << "\" skipped=\"" << suite.skipped << "\" time=\"0\">\n"
      << suite.cases.str() << "  </testsuite>\n";
}

}  // namespace

std::string junit_xml(const std::vector<JunitHost>& hosts) {
  std::vector<std::unique_ptr<Suite>> suites;
  for (const auto& host : hosts) {
    const std::string& name = host.name;
    if (host.report == nullptr) {
      auto suite = std::make_unique<Suite>();
      suite->name = name;
      suite->host = name;
      suite->tests = 1;
      suite->errors = 1;
      suite->cases << "    <testcase classname=\"" << xml(name)
                   << "\" name=\"report\" time=\"0\">\n      <error message=\"" << xml(host.error)
                   << "\" type=\"unavailable\"/>\n    </testcase>\n";
      suites.push_back(std::move(suite));
      continue;
    }
    const auto& report = *host.report;
    for (const auto& target : report.targets) {
      auto suite = std::make_unique<Suite>();
      suite->name = name + "/target:" + target.name;
      suite->host = name;
      for (const auto& check : target.checks) {
        add_case(*suite, suite->name, check);
      }
      suites.push_back(std::move(suite));
    }
    for (const auto& env : report.envs) {
      auto suite = std::make_unique<Suite>();
      suite->name = name + "/" + env.name;
      suite->host = name;
      for (const auto& check : env.checks) {
        add_case(*suite, suite->name, check);
      }
      suites.push_back(std::move(suite));
    }
  }
  int tests = 0;
  int failures = 0;
  int errors = 0;
  int skipped = 0;
  for (const auto& suite : suites) {
    tests += suite->tests;
    failures += suite->failures;
    errors += suite->errors;
    skipped += suite->skipped;
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"envcontract\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\"0\">\n";
  for (const auto& suite : suites) {
    write_suite(out, *suite);
  }
  out << "</testsuites>\n";
  return out.str();
}

}  // namespace envcontract::report
