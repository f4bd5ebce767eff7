#include "report/report_table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "common/json_fields.hpp"
#include "common/json_text.hpp"
#include "report/evidence_text.hpp"
#include "report/printable.hpp"

namespace envcontract::report {
namespace {

using common::array_field;
using common::string_field;

std::string paint(const std::string& text, const char* code, const TableStyle& style) {
  return style.colour ? std::string("\x1b[") + code + "m" + text + "\x1b[0m" : text;
}

std::string painted_verdict(const std::string& verdict, const TableStyle& style) {
  const char* code = verdict == "compliant" ? "32" : verdict == "drift" ? "31" : "33";
  return paint(verdict, code, style);
}

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

struct Row {
  std::string env;
  std::string verdict;
  std::string check;
  std::string cause;
  std::string summary;
  const Json* detail = nullptr;  // the check, for -v
};

void add_check_rows(const std::string& env, const std::string& verdict, const Json& checks,
                    std::vector<Row>& rows) {
  bool first = true;
  for (const auto& check : checks) {
    const std::string status = string_field(check, "status");
    if (status != "fail" && status != "error") {
      continue;
    }
    const Json& diagnosis = check.contains("diagnosis") ? check.at("diagnosis") : Json::object();
    std::string cause = string_field(diagnosis, "cause");
    if (string_field(check, "severity") == "advisory") {
      cause += " (advisory)";
    }
    rows.push_back({first ? env : "", first ? verdict : "", string_field(check, "id"), cause,
                    string_field(diagnosis, "summary"), &check});
    first = false;
  }
  if (first && !verdict.empty()) {  // an env that fails nothing still gets its line
    rows.push_back({env, verdict, "", "", verdict == "compliant" ? "complies" : "", nullptr});
  }
}

void write_detail(std::ostream& out, const Json& check, std::size_t indent) {
  const std::string pad(indent, ' ');
  const Json& diagnosis = check.contains("diagnosis") ? check.at("diagnosis") : Json::object();
  if (diagnosis.is_object() && diagnosis.contains("evidence") &&
      !diagnosis.at("evidence").empty()) {
    out << pad << "evidence:\n" << evidence_text(diagnosis.at("evidence"), pad + "  ");
  }
  const std::string remedy = string_field(diagnosis, "remedy");
  if (!remedy.empty()) {
    out << pad << "remedy:   " << remedy << "\n";
  }
  const std::string since = string_field(check, "since");
  if (!since.empty()) {
    out << pad << "since:    " << since
        << (check.contains("flapping") && check.at("flapping") == true ? " (flapping)" : "")
        << "\n";
  }
}

}  // namespace

bool colour_wanted(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  return ::isatty(fd) != 0 && (no_colour == nullptr || *no_colour == '\0');
}

std::string render_table(const Json& unsafe_report, const TableStyle& style) {
  // Every string of a report may come from env output or a remote host.
  const Json report = printable_json(unsafe_report);
  std::ostringstream out;
  const auto& compliant = array_field(report, "compliant_envs");
  std::string compliant_list;
  for (const auto& name : compliant) {
    if (name.is_string()) {
      compliant_list += (compliant_list.empty() ? "" : ", ") + name.get<std::string>();
    }
  }
  const Json& contract = report.contains("contract") ? report.at("contract") : Json::object();
  out << string_field(report, "host") << ": "
      << painted_verdict(string_field(report, "verdict"), style)
      << "; compliant envs: " << (compliant_list.empty() ? "none" : compliant_list) << "; contract "
      << string_field(contract, "name") << " (scanned " << string_field(report, "scanned_at")
      << ")\n";
  for (const auto& reason : array_field(report, "reasons")) {
    out << "  " << (reason.is_string() ? reason.get<std::string>() : "") << "\n";
  }

  for (const auto& container : array_field(report, "containers")) {
    const Json& image = container.contains("image") ? container.at("image") : Json::object();
    const std::string problem = string_field(container, "problem");
    std::string envs;
    for (const auto& name : array_field(container, "envs")) {
      envs += (envs.empty() ? "" : ", ") + (name.is_string() ? name.get<std::string>() : "");
    }
    out << "  container " << string_field(container, "name") << ": "
        << (problem.empty() ? "image " +
                                  (string_field(image, "value").empty()
                                       ? "unknown (" + string_field(image, "problem") + ")"
                                       : string_field(image, "value")) +
                                  "; envs: " + (envs.empty() ? "none" : envs)
                            : "not scanned: " + problem)
        << "\n";
  }

  std::vector<Row> rows;
  for (const auto& target : array_field(report, "targets")) {
    add_check_rows("[target " + string_field(target, "name") + "]", "",
                   array_field(target, "checks"), rows);
  }
  for (const auto& container : array_field(report, "containers")) {
    for (const auto& target : array_field(container, "targets")) {
      add_check_rows("[container " + string_field(container, "name") + "]", "",
                     array_field(target, "checks"), rows);
    }
  }
  // An env of a container target is named with its container already.
  for (const auto& env : array_field(report, "envs")) {
    add_check_rows(string_field(env, "name"), string_field(env, "verdict"),
                   array_field(env, "checks"), rows);
  }
  std::size_t env_width = 3;
  std::size_t verdict_width = 7;
  std::size_t check_width = 5;
  std::size_t cause_width = 5;
  for (const auto& row : rows) {
    env_width = std::max(env_width, row.env.size());
    verdict_width = std::max(verdict_width, row.verdict.size());
    check_width = std::max(check_width, row.check.size());
    cause_width = std::max(cause_width, row.cause.size());
  }
  out << "\n"
      << padded("ENV", env_width + 2) << padded("VERDICT", verdict_width + 2)
      << padded("CHECK", check_width + 2) << padded("CAUSE", cause_width + 2) << "SUMMARY\n";
  for (const auto& row : rows) {
    // Pad before painting: escape codes have no width on screen.
    const std::string verdict_cell = padded(row.verdict, verdict_width + 2);
    out << padded(row.env, env_width + 2)
        << (row.verdict.empty()
                ? verdict_cell
                : painted_verdict(row.verdict, style) + verdict_cell.substr(row.verdict.size()))
        << padded(row.check, check_width + 2) << padded(row.cause, cause_width + 2) << row.summary
        << "\n";
    if (style.verbose && row.detail != nullptr) {
      write_detail(out, *row.detail, env_width + verdict_width + 4);
    }
  }
  for (const auto& problem : array_field(report, "problems")) {
    out << "warning: " << string_field(problem, "path") << ": " << string_field(problem, "problem")
        << "\n";
  }
  return out.str();
}

}  // namespace envcontract::report
