#include "cli/fleetctl.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/fleet_render.hpp"
#include "cli/gate_verb.hpp"
#include "command_line/command_line.hpp"
#include "common/json_fields.hpp"
#include "common/json_text.hpp"
#include "common/shown_path.hpp"
#include "contracts/validate_files.hpp"
#include "contracts/values.hpp"
#include "fleet/prometheus_fleet.hpp"
#include "report/printable.hpp"
#include "report/report_json.hpp"

namespace envcontract::cli {
namespace {

using fleet::ClientOptions;
using fleet::default_agent_port;
using fleet::distinct_hosts;
using fleet::fetch_reports;
using fleet::fleet_exit_status;
using fleet::get_json;
using fleet::HostAddress;
using fleet::parse_host_address;
using fleet::read_inventory;
using fleet::reports_from_prometheus;
using fleet::request;

constexpr const char* k_exit_codes =
    "Exit status: 0 every host complies, 1 drift somewhere, 2 error (bad arguments, an "
    "unreachable host, an answer that is not a report, a host its agent could not judge or is "
    "still judging in its first scan).";

struct Common {
  std::string output = "table";
  bool verbose = false;
  std::string timeout = "10s";
  unsigned concurrency = 16;
};

// `reports`: the verb prints reports, whose table -v makes detailed; other
// verbs have no -v rather than one that changes nothing.
void add_common(CLI::App* verb, Common& common, const std::vector<std::string>& formats,
                bool reports) {
  command_line::add_format_option(verb, common.output, formats,
                                  "output format, before or after the verb (--format is the same "
                                  "option)");
  if (reports) {
    verb->add_flag("-v,--verbose", common.verbose,
                   "with the table: evidence, remedy and since under each failing check");
  }
  verb->add_option("--timeout", common.timeout,
                   "per host and request: connect, send, answer (default 10s)");
}

// How long `check` waits for an agent that has accepted the connection and
// sends nothing (docs/fleetctl.md).
constexpr std::chrono::milliseconds k_agent_silence{4'000};

// Parses --timeout; prints the problem and returns nullopt when it is bad.
std::optional<ClientOptions> client_options(const Common& common) {
  const auto parsed = contracts::parse_duration(common.timeout);
  if (!parsed) {
    std::cerr << "fleetctl: --timeout: " << parsed.error() << "\n";
    return std::nullopt;
  }
  ClientOptions options;
  options.timeout = parsed.value();
  return options;
}

report::TableStyle table_style(const Common& common) {
  return {common.verbose, report::colour_wanted(STDOUT_FILENO)};
}

std::optional<HostAddress> host_argument(const std::string& text) {
  auto address = parse_host_address(text);
  if (!address) {
    std::cerr << "fleetctl: '" << text
              << "' is not a host, host:port or http:// URL (the default port is "
              << default_agent_port << ")\n";
  }
  return address;
}

// Prints the hosts' reports in the chosen format and returns the exit status.
int print_reports(const std::vector<HostReport>& hosts, const Common& common,
                  JunitDetail junit_detail = JunitDetail::every_check) {
  if (common.output == "junit") {
    std::cout << fleet_junit(hosts, junit_detail);
  } else if (common.output == "json") {
    if (hosts.size() == 1 && hosts.front().report) {
      std::cout << common::json_text(report::to_json(*hosts.front().report), 2) << "\n";
    } else {
      std::cout << common::json_text(fleet_json(hosts), 2) << "\n";
    }
  } else if (hosts.size() == 1) {
    const auto& host = hosts.front();
    if (host.report) {
      std::cout << report::render_table(*host.report, table_style(common));
    } else {
      std::cerr << "fleetctl: " << host.address.text << ": " << host.error << "\n";
    }
  } else {
    std::cout << fleet_table(hosts, table_style(common));
  }
  return fleet_exit_status(hosts);
}

// --- check -------------------------------------------------------------------

struct CheckArguments {
  Common common;
  std::vector<std::string> hosts;
  std::string inventory;
  std::string prometheus;
  std::string job = "envcontract";
};

// The fleet from Prometheus: the same summary as from an inventory.
int run_check_prometheus(const CheckArguments& arguments, const ClientOptions& options) {
  auto address = parse_host_address(arguments.prometheus);
  if (!address) {
    std::cerr << "fleetctl: --prometheus '" << arguments.prometheus
              << "' is not an http:// address such as http://prometheus:9090\n";
    return 2;
  }
  // No port given: Prometheus' own, not the agents'.
  const auto& text = arguments.prometheus;
  const auto scheme = text.find("://");
  auto authority = text.substr(scheme == std::string::npos ? 0 : scheme + 3);
  authority = authority.substr(0, authority.find('/'));
  const auto bracket = authority.rfind(']');
  const auto colon = authority.rfind(':');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    address->port = 9090;
  }
  ClientOptions asking_prometheus = options;
  asking_prometheus.server = "Prometheus";
  const auto hosts = reports_from_prometheus(*address, arguments.job, asking_prometheus);
  if (!hosts) {
    std::cerr << "fleetctl: " << hosts.error() << "\n";
    return 2;
  }
  if (hosts->empty()) {
    std::cerr << "fleetctl: Prometheus at " << address->base_url() << " scrapes no target of job '"
              << arguments.job << "' (--job names the scrape job of the agents)\n";
    return 2;
  }
  // The fleet's table and JSON even for one host: Prometheus holds summaries,
  // not whole reports.
  if (arguments.common.output == "table") {
    std::cout << fleet_table(*hosts, table_style(arguments.common));
  } else if (arguments.common.output == "json") {
    std::cout << common::json_text(fleet_json(*hosts), 2) << "\n";
  } else {
    std::cout << fleet_junit(*hosts, JunitDetail::failing_checks);
  }
  return fleet_exit_status(*hosts);
}

int run_check(const CheckArguments& arguments) {
  const auto options = client_options(arguments.common);
  if (!options) {
    return 2;
  }
  if (!arguments.prometheus.empty()) {
    if (!arguments.hosts.empty() || !arguments.inventory.empty()) {
      std::cerr << "fleetctl check: --prometheus lists the hosts itself: give no HOST or "
                   "--inventory with it\n";
      return 2;
    }
    return run_check_prometheus(arguments, *options);
  }
  std::vector<HostAddress> hosts;
  for (const auto& text : arguments.hosts) {
    auto address = host_argument(text);
    if (!address) {
      return 2;
    }
    hosts.push_back(std::move(*address));
  }
  if (!arguments.inventory.empty()) {
    const auto listed = read_inventory(arguments.inventory);
    if (!listed) {
      std::cerr << "fleetctl: " << listed.error() << "\n";
      return 2;
    }
    hosts.insert(hosts.end(), listed->begin(), listed->end());
  }
  if (hosts.empty()) {
    std::cerr << "fleetctl check: name at least one HOST, or --inventory FILE\n";
    return 2;
  }
  std::vector<std::string> repeated;
  hosts = distinct_hosts(hosts, repeated);
  for (const auto& repeat : repeated) {
    std::cerr << "fleetctl: note: " << repeat << " is named twice; it is checked once\n";
  }
  // An agent serves the report it holds: one that stays silent for seconds
  // is stopped or stuck, and the others' answers do not wait for --timeout.
  ClientOptions asking_agents = *options;
  asking_agents.silence = std::min(asking_agents.timeout, k_agent_silence);
  // An inventory is a fleet: its JUnit is the one Prometheus gives of it.
  return print_reports(
      fetch_reports(hosts, asking_agents, arguments.common.concurrency), arguments.common,
      arguments.inventory.empty() ? JunitDetail::every_check : JunitDetail::failing_checks);
}

// --- history -----------------------------------------------------------------

struct HistoryArguments {
  Common common;
  std::string host;
  std::string env;
  std::string target;
  std::string check;
  std::string since;
  unsigned limit = 0;
};

std::string url_encoded(const std::string& text) {
  std::ostringstream out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out << c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out << hex;
    }
  }
  return out.str();
}

int run_history(const HistoryArguments& arguments) {
  const auto options = client_options(arguments.common);
  const auto host = host_argument(arguments.host);
  if (!options || !host) {
    return 2;
  }
  std::string query;
  const auto add = [&](const char* key, const std::string& value) {
    if (!value.empty()) {
      query += (query.empty() ? "?" : "&") + std::string(key) + "=" + url_encoded(value);
    }
  };
  add("env", arguments.env);
  add("target", arguments.target);
  add("check", arguments.check);
  add("since", arguments.since);
  add("limit", arguments.limit > 0 ? std::to_string(arguments.limit) : "");
  const auto answer = get_json(*host, "/api/v1/history" + query, *options);
  if (!answer || !answer->contains("transitions") || !(*answer)["transitions"].is_array()) {
    std::cerr << "fleetctl: " << host->text << ": "
              << (answer ? "the answer has no transitions" : answer.error()) << "\n";
    return 2;
  }
  if (arguments.common.output == "json") {
    std::cout << common::json_text(*answer, 2) << "\n";
  } else {
    std::cout << history_table((*answer)["transitions"], table_style(arguments.common));
  }
  return 0;
}

// --- diff --------------------------------------------------------------------

struct DiffArguments {
  Common common;
  std::string a;
  std::string b;
};

int run_diff(const DiffArguments& arguments) {
  const auto options = client_options(arguments.common);
  const auto a = host_argument(arguments.a);
  const auto b = host_argument(arguments.b);
  if (!options || !a || !b) {
    return 2;
  }
  const auto reports = fetch_reports({*a, *b}, *options, 2);
  for (const auto& host : reports) {
    if (!host.report) {
      std::cerr << "fleetctl: " << host.address.text << ": " << host.error << "\n";
      return 2;
    }
  }
  const auto diff =
      diff_reports(report::to_json(*reports[0].report), report::to_json(*reports[1].report));
  if (arguments.common.output == "json") {
    std::cout << common::json_text({{"a", a->text}, {"b", b->text}, {"differences", diff}}, 2)
              << "\n";
  } else {
    std::cout << diff_table(diff, a->text, b->text);
  }
  return diff_is_empty(diff) ? 0 : 1;
}

// --- scan --------------------------------------------------------------------

struct ScanArguments {
  Common common;
  std::string host;
  std::string token_file;
  std::string wait_timeout = "30m";
  bool no_wait = false;
};

// The bearer token: --token-file, else the file $FLEETCTL_TOKEN_FILE names,
// else the token itself in $FLEETCTL_TOKEN. Both variables set is ambiguous.
std::optional<std::string> read_token(const ScanArguments& arguments) {
  const auto variable = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  };
  std::string file = arguments.token_file;
  if (file.empty()) {
    file = variable("FLEETCTL_TOKEN_FILE");
    if (!file.empty() && !variable("FLEETCTL_TOKEN").empty()) {
      std::cerr << "fleetctl: both FLEETCTL_TOKEN and FLEETCTL_TOKEN_FILE are set: unset one "
                   "(or give --token-file, which wins over both)\n";
      return std::nullopt;
    }
    if (file.empty()) {
      return variable("FLEETCTL_TOKEN");
    }
  }
  std::ifstream in(file);
  if (!in) {
    std::cerr << "fleetctl: cannot read the token file " << common::shown_path(file) << "\n";
    return std::nullopt;
  }
  std::string token;
  std::getline(in, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
    token.pop_back();
  }
  return token;
}

int run_scan(const ScanArguments& arguments) {
  auto options = client_options(arguments.common);
  const auto host = host_argument(arguments.host);
  const auto token = read_token(arguments);
  const auto wait = contracts::parse_duration(arguments.wait_timeout);
  if (!wait) {
    std::cerr << "fleetctl: --wait-timeout: " << wait.error() << "\n";
    return 2;
  }
  if (!options || !host || !token) {
    return 2;
  }
  if (arguments.no_wait && arguments.common.output == "junit") {
    std::cerr << "fleetctl scan: --no-wait prints no report, so no JUnit: use -o table or json\n";
    return 2;
  }
  options->token = *token;
  const auto posted = request(*host, "POST", "/api/v1/scan", *options);
  auto parsed = fleet::parse_answer(posted.body, *options);
  const Json body = parsed ? std::move(parsed).value() : Json();
  if (posted.status != 202 || !body.is_object() || !body.contains("id") ||
      !body["id"].is_number_integer()) {
    const std::string said =
        parsed ? report::printable(common::string_field(body, "error")) : parsed.error();
    std::string why = posted.status == 0 ? posted.error
                                         : "HTTP " + std::to_string(posted.status) +
                                               (said.empty() ? std::string() : ": " + said);
    if (posted.status == 401) {
      why +=
          " (give the agent's token: --token-file FILE, $FLEETCTL_TOKEN_FILE or $FLEETCTL_TOKEN)";
    }
    std::cerr << "fleetctl: " << host->text << ": cannot start a scan: " << why << "\n";
    return 2;
  }
  const auto id = body["id"].get<std::int64_t>();
  if (arguments.no_wait) {
    if (arguments.common.output == "json") {
      std::cout << common::json_text({{"host", host->text}, {"scan_id", id}, {"state", "queued"}},
                                     2)
                << "\n";
    } else {
      std::cout << "scan " << id << " queued on " << host->text << "\n";
    }
    return 0;
  }
  // A live line on a terminal; off one (a CI log), a line per state change,
  // so a long scan still says what it waits for.
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  const auto deadline = started + wait.value();
  std::string state;
  std::string reported;
  for (;;) {
    const auto ticket = get_json(*host, "/api/v1/scans/" + std::to_string(id), *options);
    if (!ticket) {
      std::cerr << (progress ? "\n" : "") << "fleetctl: " << host->text << ": " << ticket.error()
                << "\n";
      return 2;
    }
    // An answer from a host we do not control: any JSON at all.
    state = ticket->is_object() ? common::string_field(*ticket, "state") : "";
    if (state.empty()) {
      std::cerr << (progress ? "\n" : "") << "fleetctl: " << host->text
                << ": the scan's ticket has no state; is this an envcontract agent?\n";
      return 2;
    }
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started)
            .count();
    if (progress) {
      std::cerr << "\rscan " << id << " on " << host->text << ": " << state << " (" << seconds
                << " s)   " << std::flush;
    } else if (state != reported) {
      std::cerr << "scan " << id << " on " << host->text << ": " << state << " (" << seconds
                << " s)\n";
      reported = state;
    }
    if (state == "done" || state == "failed") {
      if (progress) {
        std::cerr << "\n";
      }
      if (state == "failed") {
        std::cerr << "fleetctl: " << host->text << ": the scan failed: "
                  << report::printable(common::string_field(*ticket, "error")) << "\n";
        return 2;
      }
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << (progress ? "\n" : "") << "fleetctl: " << host->text << ": scan " << id
                << " still " << state << " after " << arguments.wait_timeout << "\n";
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return print_reports(fetch_reports({*host}, *options, 1), arguments.common);
}

CLI::App* add_check_verb(CLI::App& app, CheckArguments& check) {
  auto* verb = app.add_subcommand(
      "check", "Fetch and print hosts' reports: one host in full, many as a fleet summary");
  verb->add_option("HOST", check.hosts, "hosts to ask");
  verb->add_option("--inventory", check.inventory, "file of hosts, one per line (# comments)")
      ->check(CLI::ExistingFile);
  verb->add_option("--prometheus", check.prometheus,
                   "the fleet as this Prometheus scrapes it (http://HOST:9090): every agent "
                   "of --job, with its verdict, envs and failing checks' causes");
  verb->add_option("--job", check.job,
                   "the scrape job of the agents in Prometheus' config (default envcontract)");
  add_common(verb, check.common, {"table", "json", "junit"}, true);
  verb->add_option("--concurrency", check.common.concurrency, "hosts asked at once (default 16)");
  verb->footer(
      "Formats: table (one host: summary line, then env x failing check; many hosts: a line "
      "each and the fleet summary), json (one host: its report; many: {hosts, summary}), "
      "junit (a testsuite per env, a testcase per check).\n" +
      std::string(k_exit_codes));
  return verb;
}

CLI::App* add_history_verb(CLI::App& app, HistoryArguments& history) {
  auto* verb = app.add_subcommand("history", "Show how a host's checks changed over time");
  verb->add_option("HOST", history.host, "the host")->required();
  verb->add_option("--env", history.env, "only this env");
  verb->add_option("--target", history.target, "only this target");
  verb->add_option("--check", history.check,
                   "only this check id (@verdict: the env's or host's verdict)");
  verb->add_option("--since", history.since,
                   "only changes since this time (RFC 3339 or a date: 2026-11-24)");
  verb->add_option("--limit", history.limit, "at most this many rows (default 1000)")
      ->check(CLI::Range(1U, 10000U));
  add_common(verb, history.common, {"table", "json"}, false);
  verb->footer("Exit status: 0 shown, 2 error.");
  return verb;
}

CLI::App* add_diff_verb(CLI::App& app, DiffArguments& diff) {
  auto* verb = app.add_subcommand(
      "diff", "What differs between two hosts: contract, image, envs and their checks");
  verb->add_option("A", diff.a, "first host")->required();
  verb->add_option("B", diff.b, "second host")->required();
  add_common(verb, diff.common, {"table", "json"}, false);
  verb->footer("Exit status: 0 no difference, 1 differences, 2 error.");
  return verb;
}

CLI::App* add_scan_verb(CLI::App& app, ScanArguments& scan) {
  auto* verb =
      app.add_subcommand("scan", "Start a scan on a host, wait for it and print the report");
  verb->add_option("HOST", scan.host, "the host")->required();
  verb->add_option("--token-file", scan.token_file,
                   "file holding the agent's bearer token (default: the file "
                   "$FLEETCTL_TOKEN_FILE names, else the token itself in $FLEETCTL_TOKEN)");
  verb->add_option("--wait-timeout", scan.wait_timeout,
                   "how long to wait for the scan (default 30m)");
  verb->add_flag("--no-wait", scan.no_wait, "queue the scan and return");
  add_common(verb, scan.common, {"table", "json", "junit"}, true);
  verb->footer(
      "Progress goes to stderr: a live line on a terminal, a line per state change off one.\n" +
      std::string(k_exit_codes));
  return verb;
}

struct ValidateArguments {
  std::vector<std::string> files;
  bool print = false;
};

// `contract validate`, the one verb of `contract`.
CLI::App* add_contract_verbs(CLI::App& app, ValidateArguments& validate) {
  auto* contract_verb = app.add_subcommand("contract", "Work with contract files");
  contract_verb->require_subcommand(1);
  // Not the hosts' footer it would inherit: contract verbs ask no host.
  contract_verb->footer("Exit status: 0 all valid, 1 any invalid, 2 usage error.");
  auto* verb = contract_verb->add_subcommand(
      "validate", "Check contract files as the agent does; print 'ok' or every error");
  verb->add_option("FILE", validate.files,
                   "contract files (YAML), or directories of them (CI configs too)")
      ->required()
      ->check(CLI::ExistingPath);
  verb->add_flag("--print", validate.print,
                 "print the normalised contract as JSON (exactly one FILE)");
  verb->footer("Exit status: 0 all valid, 1 any invalid, 2 usage error.");
  return verb;
}

int run_validate(const ValidateArguments& validate) {
  if (validate.print && validate.files.size() != 1) {
    std::cerr << "fleetctl contract validate: --print takes exactly one FILE\n";
    return 2;
  }
  const std::vector<std::filesystem::path> paths(validate.files.begin(), validate.files.end());
  return contracts::validate_files(paths,
                                   validate.print ? contracts::ValidateOutput::normalized_json
                                                  : contracts::ValidateOutput::verdicts,
                                   std::cout, std::cerr);
}

}  // namespace

int run_fleetctl(int argc, char** argv) {
  CLI::App app{"fleetctl: asks envcontract agents whether their hosts match their contracts"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(ENVCONTRACT_VERSION));
  app.footer(
      "HOST is name, name:port or http://name:port (default port 9714).\n"
      "Colour only on a terminal, never with NO_COLOR set.\n" +
      std::string(k_exit_codes));

  std::string leading_output;
  app.add_option("-o,--output,--format", leading_output,
                 "output format, before or after the verb (-o json check HOST)");

  CheckArguments check;
  auto* check_verb = add_check_verb(app, check);
  HistoryArguments history;
  auto* history_verb = add_history_verb(app, history);
  DiffArguments diff;
  auto* diff_verb = add_diff_verb(app, diff);
  ScanArguments scan;
  auto* scan_verb = add_scan_verb(app, scan);
  GateArguments gate;
  auto* gate_verb = add_gate_verb(app, gate);
  ValidateArguments validate;
  auto* validate_verb = add_contract_verbs(app, validate);

  const auto line = command_line::read_command_line("fleetctl", app, argc, argv);
  if (!line.problem.empty()) {
    std::cerr << line.problem << "\n";
    return 2;
  }
  if (const auto status = command_line::parse_command_line(app, line)) {
    return *status;
  }
  if (check_verb->parsed()) {
    return run_check(check);
  }
  if (history_verb->parsed()) {
    return run_history(history);
  }
  if (diff_verb->parsed()) {
    return run_diff(diff);
  }
  if (scan_verb->parsed()) {
    return run_scan(scan);
  }
  if (gate_verb->parsed()) {
    return run_gate(gate);
  }
  if (validate_verb->parsed()) {
    return run_validate(validate);
  }
  return 2;
}

}  // namespace envcontract::cli
