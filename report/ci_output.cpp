#include "report/ci_output.hpp"

#include <cctype>
#include <cstdio>
#include <random>
#include <vector>

namespace envcontract::report {

namespace {

using contracts::CheckStatus;

bool is_required(const CheckReport& check) {
  return check.severity == contracts::Severity::required;
}

// Checks that keep a job from starting: required ones that fail or could
// not be judged.
bool stops_the_job(const CheckReport& check) {
  return is_required(check) &&
         (check.status == CheckStatus::fail || check.status == CheckStatus::error);
}

std::string env_label(const EnvReport& env) {
  return env.name.empty() ? env.prefix : env.name;
}

std::string contract_name(const Report& report) {
  return report.contract.name.empty() ? "the contract" : report.contract.name;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

struct Annotation {
  const char* level;  // error, warning
  std::string title;
  std::string message;
};

Annotation annotation_of(const std::string& where, const CheckReport& check) {
  const contracts::Diagnosis& diagnosis = diagnosis_of(check);
  const std::string& id = check.id;
  const std::string summary =
      diagnosis.summary.empty() ? "check " + id + " did not pass" : diagnosis.summary;
  const std::string& remedy = diagnosis.remedy;
  if (check.status == CheckStatus::fail) {
    return {is_required(check) ? "error" : "warning",
            "envcontract: " + where + ": " + id + (is_required(check) ? "" : " (advisory)"),
            summary + (remedy.empty() ? "" : "\nWhat to do: " + remedy)};
  }
  return {"warning", "envcontract: " + where + ": " + id + " could not be judged",
          summary + (remedy.empty() ? "" : "\nWhat to do: " + remedy)};
}

std::string command(const Annotation& annotation) {
  return std::string("::") + annotation.level + " title=" + github_property(annotation.title) +
         "::" + github_data(annotation.message) + "\n";
}

std::string cell(const std::string& text) {
  return text.empty() ? " " : markdown_text(text);
}

void table_of(std::string& out, const std::string& where, const std::vector<CheckReport>& checks) {
  out += "| " + markdown_text(where) + " | status | cause | summary | what to do |\n";
  out += "|---|---|---|---|---|\n";
  for (const auto& check : checks) {
    const contracts::Diagnosis& diagnosis = diagnosis_of(check);
    out += "| " + cell(check.id) + " | " + cell(contracts::to_string(check.status)) + " | " +
           cell(diagnosis.cause) + " | " + cell(diagnosis.summary) + " | " +
           cell(diagnosis.remedy) + " |\n";
  }
  out += "\n";
}

}  // namespace

std::string stop_commands_token() {
  std::random_device random;
  std::string token = "envcontract-";
  for (int i = 0; i < 4; ++i) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(random()));
    token += hex;
  }
  return token;
}

const char* to_string(GateDecision::Outcome outcome) {
  switch (outcome) {
    case GateDecision::Outcome::go:
      return "go";
    case GateDecision::Outcome::drift:
      return "drift";
    case GateDecision::Outcome::unknown:
      break;
  }
  return "unknown";
}

GateDecision gate_decision(const Report& report) {
  std::vector<std::string> compliant;
  std::vector<std::string> drifting;
  std::vector<std::string> unjudged;
  for (const auto& env : report.envs) {
    (env.verdict == contracts::EnvVerdict::compliant ? compliant
     : env.verdict == contracts::EnvVerdict::drift   ? drifting
                                                     : unjudged)
        .push_back(env_label(env));
  }
  std::vector<std::string> broken_targets;
  for (const auto& target : report.targets) {
    for (const auto& check : target.checks) {
      if (check.status == CheckStatus::fail && is_required(check)) {
        broken_targets.push_back(target.name + "'s " + check.id);
      }
    }
  }
  const std::string contract = contract_name(report);
  using Outcome = GateDecision::Outcome;
  if (!broken_targets.empty()) {
    return {Outcome::drift, joined(broken_targets) + " breaks " + contract};
  }
  // Every env judged must comply: one that complies beside one that does
  // not proves nothing of the env the job will use (and anyone who can make
  // a directory where discovery looks could add one).
  if (!drifting.empty()) {
    return {Outcome::drift,
            joined(drifting) + (drifting.size() == 1 ? " breaks " : " break ") + contract};
  }
  if (!unjudged.empty()) {
    return {Outcome::unknown, joined(unjudged) + " could not be judged against " + contract};
  }
  if (!compliant.empty()) {
    return {Outcome::go, joined(compliant) + (compliant.size() == 1 ? " complies" : " comply") +
                             " with " + contract};
  }
  return {Outcome::unknown, "no env was found to judge against " + contract};
}

std::string github_annotations(const Report& report, const GateDecision& decision,
                               const std::string& bypass) {
  std::string out;
  // First: GitHub shows the first few annotations of a step only.
  if (!bypass.empty() && decision.outcome != GateDecision::Outcome::go) {
    out += command({"warning", "envcontract gate bypassed",
                    "the job starts although " + decision.why + ": " + bypass});
  }
  if (decision.outcome == GateDecision::Outcome::go) {
    out += command({"notice", "envcontract", decision.why});
  } else {
    for (const auto& target : report.targets) {
      for (const auto& check : target.checks) {
        if (check.status == CheckStatus::fail && stops_the_job(check)) {
          out += command(annotation_of("target " + target.name, check));
        }
      }
    }
    // What stops the job, then what is only advised.
    for (const bool required : {true, false}) {
      for (const auto& env : report.envs) {
        for (const auto& check : env.checks) {
          if (required ? stops_the_job(check)
                       : !is_required(check) && check.status == CheckStatus::fail) {
            out += command(annotation_of(env_label(env), check));
          }
        }
      }
    }
    if (report.envs.empty()) {
      out += command({"error", "envcontract", decision.why});
    }
  }
  // A target that could not be judged does not stop the job; it is said.
  for (const auto& target : report.targets) {
    for (const auto& check : target.checks) {
      if (check.status == CheckStatus::error) {
        out += command(annotation_of("target " + target.name, check));
      }
    }
  }
  return out;
}

std::string markdown_summary(const Report& report, const GateDecision& decision,
                             const std::string& bypass) {
  using Outcome = GateDecision::Outcome;
  const char* headline = decision.outcome == Outcome::go ? "go"
                         : decision.outcome == Outcome::drift
                             ? "stopped: the env breaks the contract"
                             : "stopped: cannot tell";
  std::string out = "### envcontract gate: ";
  out += !bypass.empty() && decision.outcome != Outcome::go ? "bypassed" : headline;
  out += "\n\n" + markdown_text(decision.why) + "\n\n";
  if (!bypass.empty() && decision.outcome != Outcome::go) {
    out += "Bypassed: " + markdown_text(bypass) + "\n\n";
  }
  const std::string& host = report.host;
  const std::string& path = report.contract.path;
  out += "Contract " + markdown_text(contract_name(report)) +
         (path.empty() ? "" : " (" + markdown_text(path) + ")") +
         (host.empty() ? "" : ", host " + markdown_text(host)) + "\n\n";
  for (const auto& target : report.targets) {
    table_of(out, "target " + target.name, target.checks);
  }
  for (const auto& env : report.envs) {
    out += "**" + markdown_text(env_label(env)) +
           "**: " + markdown_text(contracts::to_string(env.verdict)) + " (" +
           markdown_text(env.prefix) + ")\n\n";
    table_of(out, "check", env.checks);
  }
  return out;
}

std::string gitlab_section(const std::string& name, const std::string& header,
                           const std::string& body, long long started, long long ended) {
  // GitLab's markers (docs.gitlab.com, "Custom collapsible sections"): the
  // ANSI "erase line" hides them where the log is shown.
  const std::string erase = "\033[0K";
  return erase + "section_start:" + std::to_string(started) + ":" + name + "[collapsed=true]\r" +
         erase + header + "\n" + body + erase + "section_end:" + std::to_string(ended) + ":" +
         name + "\r" + erase + "\n";
}

std::string github_data(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case '\r':
        out += "%0D";
        break;
      case '\n':
        out += "%0A";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string github_property(std::string_view text) {
  std::string out;
  for (const char c : github_data(text)) {
    if (c == ':') {
      out += "%3A";
    } else if (c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

std::string markdown_text(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (byte < 0x20 || byte == 0x7f) {
      continue;  // control characters show nothing a reader needs
    } else if (std::ispunct(byte) != 0) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace envcontract::report
