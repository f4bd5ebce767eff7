#include "daemon/http_routes.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace envcontract::daemon {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool all_digits(std::string_view text) {
  return !text.empty() && text.size() <= 15 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct Fixed {
  std::string_view path;
  std::string_view method;
  Endpoint endpoint;
};

constexpr std::array k_fixed = {
    Fixed{"/healthz", "GET", Endpoint::healthz},
    Fixed{"/metrics", "GET", Endpoint::metrics},
    Fixed{"/api/v1/report", "GET", Endpoint::report},
    Fixed{"/api/v1/history", "GET", Endpoint::history},
    Fixed{"/api/v1/contract", "GET", Endpoint::contract},
    Fixed{"/api/v1/compliance", "GET", Endpoint::compliance},
    Fixed{"/api/v1/plan", "GET", Endpoint::plan},
    Fixed{"/api/v1/provisions", "GET", Endpoint::provisions},
    Fixed{"/api/v1/provision", "POST", Endpoint::provision},
    Fixed{"/api/v1/promote", "POST", Endpoint::promote},
    Fixed{"/api/v1/scan", "POST", Endpoint::scan},
    Fixed{"/api/v1/gate", "POST", Endpoint::gate},
    Fixed{"/api/v1/gate/record", "POST", Endpoint::gate_record},
    Fixed{"/api/v1/gate/decisions", "GET", Endpoint::gate_decisions},
    Fixed{"/", "GET", Endpoint::asset},
    Fixed{"/index.html", "GET", Endpoint::asset},
    Fixed{"/dom.js", "GET", Endpoint::asset},
    Fixed{"/app.js", "GET", Endpoint::asset},
    Fixed{"/style.css", "GET", Endpoint::asset},
};

RouteMatch matched(std::string_view method, std::string_view wanted, Endpoint endpoint,
                   std::string argument) {
  RouteMatch match;
  match.endpoint = endpoint;
  match.argument = std::move(argument);
  const std::string effective = method == "HEAD" ? "GET" : std::string(method);
  if (effective == wanted) {
    match.outcome = RouteMatch::Outcome::found;
  } else {
    match.outcome = RouteMatch::Outcome::wrong_method;
    match.allowed = std::string(wanted);
  }
  return match;
}

}  // namespace

RouteMatch match_route(std::string_view method, std::string_view path) {
  for (const auto& fixed : k_fixed) {
    if (path == fixed.path) {
      return matched(method, fixed.method, fixed.endpoint,
                     fixed.endpoint == Endpoint::asset ? std::string(path) : "");
    }
  }
  // Env names are directory names and may be "project/.venv": everything
  // after the prefix is the name.
  constexpr std::string_view envs = "/api/v1/envs/";
  if (path.starts_with(envs) && path.size() > envs.size()) {
    return matched(method, "GET", Endpoint::env, std::string(path.substr(envs.size())));
  }
  constexpr std::string_view jobs = "/api/v1/provisions/";
  if (path.starts_with(jobs) && all_digits(path.substr(jobs.size()))) {
    return matched(method, "GET", Endpoint::provision_job, std::string(path.substr(jobs.size())));
  }
  constexpr std::string_view scans = "/api/v1/scans/";
  if (path.starts_with(scans) && all_digits(path.substr(scans.size()))) {
    return matched(method, "GET", Endpoint::scan_ticket, std::string(path.substr(scans.size())));
  }
  return {};
}

const std::vector<std::string>& endpoint_list() {
  // tests/unit/daemon/test_http_routes.cpp checks that it names every endpoint.
  static const std::vector<std::string> endpoints = {"GET /healthz",
                                                     "GET /api/v1/report",
                                                     "GET /api/v1/envs/{name}",
                                                     "GET /api/v1/history",
                                                     "GET /api/v1/contract",
                                                     "GET /api/v1/compliance",
                                                     "GET /api/v1/plan",
                                                     "GET /api/v1/provisions",
                                                     "POST /api/v1/provision",
                                                     "POST /api/v1/promote",
                                                     "GET /api/v1/provisions/{id}",
                                                     "POST /api/v1/scan",
                                                     "GET /api/v1/scans/{id}",
                                                     "POST /api/v1/gate",
                                                     "POST /api/v1/gate/record",
                                                     "GET /api/v1/gate/decisions",
                                                     "GET /metrics",
                                                     "GET / (the dashboard)"};
  return endpoints;
}

HostPolicy make_host_policy(const std::string& listen_host,
                            const std::vector<std::string>& configured) {
  HostPolicy policy;
  policy.names = {"localhost", "localhost.localdomain", "ip6-localhost"};
  if (!listen_host.empty()) {
    policy.names.push_back(lower(listen_host));
  }
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0 && name[0] != '\0') {
    policy.names.push_back(lower(name.data()));
  }
  for (const auto& extra : configured) {
    policy.names.push_back(lower(extra));
  }
  return policy;
}

namespace {

bool is_ipv4_literal(std::string_view host) {
  int parts = 0;
  std::size_t start = 0;
  while (start <= host.size()) {
    const auto dot = host.find('.', start);
    const auto part = host.substr(start, dot == std::string_view::npos ? host.npos : dot - start);
    if (part.empty() || part.size() > 3 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    ++parts;
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  return parts == 4;
}

}  // namespace

bool host_allowed(std::string_view host_header, const HostPolicy& policy) {
  if (host_header.empty()) {
    return true;  // HTTP/1.0 without Host: no browser sends that
  }
  std::string_view host = host_header;
  if (host.front() == '[') {
    // An IPv6 literal, which no DNS name can stand for.
    return host.find(']') != std::string_view::npos;
  }
  if (const auto colon = host.rfind(':'); colon != std::string_view::npos) {
    const auto port = host.substr(colon + 1);
    if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
    host = host.substr(0, colon);
  }
  if (!host.empty() && host.back() == '.') {
    host.remove_suffix(1);  // "localhost." is localhost
  }
  if (is_ipv4_literal(host)) {
    return true;
  }
  const std::string name = lower(host);
  return std::find(policy.names.begin(), policy.names.end(), name) != policy.names.end();
}

std::string printable(std::string_view text, std::size_t max_bytes) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (const char raw : text.substr(0, max_bytes)) {
    const auto c = static_cast<unsigned char>(raw);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += k_hex[c >> 4];
      out += k_hex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_bytes) {
    out += "...(" + std::to_string(text.size()) + " bytes)";
  }
  return out;
}

}  // namespace envcontract::daemon
