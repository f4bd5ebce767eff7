#include "report/report_table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "report/evidence_text.hpp"
#include "report/report_json.hpp"

namespace envcontract::report {
namespace {

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
  const CheckReport* detail = nullptr;  // the check, for -v
};

bool shown_as_failing(const CheckReport& check) {
  return check.status == contracts::CheckStatus::fail ||
         check.status == contracts::CheckStatus::error;
}

void add_check_rows(const std::string& env, const std::string& verdict,
                    const std::vector<CheckReport>& checks, std::vector<Row>& rows) {
  bool first = true;
  for (const auto& check : checks) {
    if (!shown_as_failing(check)) {
      continue;
    }
    std::string cause = check.diagnosis ? check.diagnosis->cause : "";
    if (check.severity == contracts::Severity::advisory) {
      cause += " (advisory)";
    }
    rows.push_back({first ? env : "", first ? verdict : "", check.id, cause,
                    check.diagnosis ? check.diagnosis->summary : "", &check});
    first = false;
  }
  if (first && !verdict.empty()) {  // an env that fails nothing still gets its line
    rows.push_back({env, verdict, "", "", verdict == "compliant" ? "complies" : "", nullptr});
  }
}

void write_detail(std::ostream& out, const CheckReport& check, std::size_t indent) {
  const std::string pad(indent, ' ');
  if (check.diagnosis && !check.diagnosis->evidence.empty()) {
    out << pad << "evidence:\n" << evidence_text(check.diagnosis->evidence, pad + "  ");
  }
  if (check.diagnosis && !check.diagnosis->remedy.empty()) {
    out << pad << "remedy:   " << check.diagnosis->remedy << "\n";
  }
  if (check.since && !check.since->empty()) {
    out << pad << "since:    " << *check.since << (check.flapping ? " (flapping)" : "") << "\n";
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

}  // namespace

bool colour_wanted(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  return ::isatty(fd) != 0 && (no_colour == nullptr || *no_colour == '\0');
}

std::string render_table(const Report& unsafe_report, const TableStyle& style) {
  // Every string of a report may come from env output or a remote host.
  const Report report = printable_report(unsafe_report);
  std::ostringstream out;
  const std::string compliant_list = joined(report.compliant_envs);
  out << report.host << ": " << painted_verdict(to_string(report.verdict), style)
      << "; compliant envs: " << (compliant_list.empty() ? "none" : compliant_list) << "; contract "
      << report.contract.name << " (scanned " << report.scanned_at << ")\n";
  for (const auto& reason : report.reasons) {
    out << "  " << reason << "\n";
  }

  for (const auto& container : report.containers) {
    const auto& image = container.image;
    const std::string envs = joined(container.envs);
    out << "  container " << container.name << ": "
        << (!container.problem || container.problem->empty()
                ? "image " +
                      (image.value.empty() ? "unknown (" + image.problem + ")" : image.value) +
                      "; envs: " + (envs.empty() ? "none" : envs)
                : "not scanned: " + *container.problem)
        << "\n";
  }

  std::vector<Row> rows;
  for (const auto& target : report.targets) {
    add_check_rows("[target " + target.name + "]", "", target.checks, rows);
  }
  for (const auto& container : report.containers) {
    for (const auto& target : container.targets) {
      add_check_rows("[container " + container.name + "]", "", target.checks, rows);
    }
  }
  // An env of a container target is named with its container already.
  for (const auto& env : report.envs) {
    add_check_rows(env.name, contracts::to_string(env.verdict), env.checks, rows);
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
  for (const auto& problem : report.problems) {
    out << "warning: " << problem.path << ": " << problem.problem << "\n";
  }
  return out.str();
}

}  // namespace envcontract::report
