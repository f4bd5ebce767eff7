#include "cli/gate_verb.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "command_line/command_line.hpp"
#include "common/json_text.hpp"
#include "contracts/contract_loader.hpp"
#include "contracts/values.hpp"
#include "fleet/gate_client.hpp"
#include "report/ci_output.hpp"
#include "report/junit.hpp"
#include "report/printable.hpp"
#include "report/report_json.hpp"
#include "report/report_table.hpp"

namespace envcontract::cli {

namespace {

constexpr const char* k_prefix = "fleetctl gate: ";

// What names the job when fleetctl runs in one (gate_client.hpp: gate_job).
std::map<std::string, std::string> ci_variables() {
  std::map<std::string, std::string> variables;
  for (const char* name :
       {"GITHUB_ACTIONS", "GITHUB_REPOSITORY", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB",
        "GITHUB_SERVER_URL", "GITLAB_CI", "CI_PROJECT_PATH", "CI_JOB_ID", "CI_JOB_URL"}) {
    if (const char* value = std::getenv(name); value != nullptr) {
      variables[name] = value;
    }
  }
  return variables;
}

// The contract a file holds, as judged; or nullopt after saying why not.
std::optional<std::string> contract_digest(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    std::cerr << k_prefix << "cannot read " << file << "\n";
    return std::nullopt;
  }
  const auto loaded = contracts::load_contract_text(text.str(), file, {});
  if (!loaded.contract) {
    std::cerr << k_prefix << file << " is not a valid contract:\n";
    for (const auto& diagnostic : loaded.diagnostics.sorted()) {
      std::cerr << diagnostic.to_string() << "\n";
    }
    return std::nullopt;
  }
  return contracts::judged_sha256(*loaded.contract);
}

}  // namespace

CLI::App* add_gate_verb(CLI::App& app, GateArguments& arguments) {
  auto* verb = app.add_subcommand(
      "gate", "Judge an env of a host now, as a CI job's gate would, and exit 0 go, 1 stop");
  verb->add_option("HOST", arguments.host, "the host")->required();
  verb->add_option("--env", arguments.env,
                   "the env's prefix on that host (default: every env its agent found, each of "
                   "which must comply)");
  verb->add_option("--contract", arguments.contract,
                   "the contract the job brings: the agent answers only when it holds the same "
                   "(default: the agent's)")
      ->check(CLI::ExistingFile);
  command_line::add_format_option(verb, arguments.output, {"table", "json", "junit"},
                                  "output format, before or after the verb");
  verb->add_option("--timeout", arguments.timeout,
                   "for the answer, which may probe the env again (default 10m)");
  verb->footer(
      "The agent reads the env's files again and runs its code again only when they changed "
      "(docs/ci.md); it records the decision with the job's CI variables.\n"
      "Exit status: 0 go, 1 the env breaks the contract, 2 cannot tell (another contract, an env "
      "the agent does not know, no answer).");
  return verb;
}

int run_gate(const GateArguments& arguments) {
  const auto host = fleet::parse_host_address(arguments.host);
  if (!host) {
    std::cerr << k_prefix << "'" << arguments.host
              << "' is not a host, host:port or http:// URL (the default port is "
              << fleet::default_agent_port << ")\n";
    return 2;
  }
  const auto timeout = contracts::parse_duration(arguments.timeout);
  if (!timeout) {
    std::cerr << k_prefix << "--timeout: " << timeout.error() << "\n";
    return 2;
  }
  fleet::GateQuery query;
  query.env = arguments.env;
  query.job = fleet::gate_job(ci_variables());
  if (!arguments.contract.empty()) {
    const auto digest = contract_digest(arguments.contract);
    if (!digest) {
      return 2;
    }
    query.contract_digest = *digest;
  }
  fleet::ClientOptions options;
  options.timeout = timeout.value();
  const auto verdict = fleet::ask_gate(*host, query, options);
  if (verdict.kind != fleet::GateVerdict::Kind::answered) {
    std::cerr << k_prefix << host->text << ": " << report::printable(verdict.why)
              << (verdict.kind == fleet::GateVerdict::Kind::refused
                      ? " (run envcontractd gate on that host to judge it under another contract)"
                      : "")
              << "\n";
    return 2;
  }
  const auto decision = report::gate_decision(verdict.report);
  if (arguments.output == "json") {
    std::cout << common::json_text({{"host", host->text},
                                    {"decision", report::to_string(decision.outcome)},
                                    {"why", decision.why},
                                    {"recorded_as", verdict.decision_id},
                                    {"probed", verdict.probed},
                                    {"reused", verdict.reused},
                                    {"report", report::to_json(verdict.report)}},
                                   2)
              << "\n";
  } else if (arguments.output == "junit") {
    std::cout << report::junit_xml({{host->text, &verdict.report, ""}});
  } else if (const char* github = std::getenv("GITHUB_ACTIONS");
             github != nullptr && std::string_view(github) == "true") {
    // In a job's log an env's strings must not become workflow commands.
    const std::string token = report::stop_commands_token();
    std::cout << report::github_annotations(verdict.report, decision, "")
              << "::stop-commands::" << token << "\n"
              << report::render_table(verdict.report, {true, false}) << "::" << token << "::\n"
              << k_prefix << report::printable(decision.why) << "\n";
  } else {
    std::cout << report::render_table(verdict.report, {true, report::colour_wanted(STDOUT_FILENO)})
              << k_prefix << report::printable(decision.why) << "\n";
  }
  std::cerr << k_prefix << host->text << " judged in " << static_cast<long long>(verdict.elapsed_ms)
            << " ms (" << verdict.probed << " env(s) probed, " << verdict.reused << " unchanged); "
            << (verdict.decision_id > 0
                    ? "decision recorded as #" + std::to_string(verdict.decision_id)
                    : std::string("the agent could not record the decision"))
            << "\n";
  return decision.exit_code();
}

}  // namespace envcontract::cli
