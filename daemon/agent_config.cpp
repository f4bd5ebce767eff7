#include "daemon/agent_config.hpp"

#include <algorithm>
#include <regex>

#include "contracts/mapping_reader.hpp"
#include "contracts/values.hpp"
#include "daemon/container_config.hpp"

namespace envcontract::daemon {
namespace {

using contracts::MappingReader;
using contracts::Need;

std::optional<std::chrono::milliseconds> read_duration(MappingReader& reader,
                                                       std::string_view key) {
  const auto node = reader.get(key);
  if (!node) {
    return std::nullopt;
  }
  if (!node->IsScalar()) {
    reader.ctx().error(*node, "'" + std::string(key) + "' must be a duration such as '5m', got " +
                                  contracts::describe_node_type(*node));
    return std::nullopt;
  }
  const auto parsed = contracts::parse_duration(node->Scalar());
  if (!parsed) {
    reader.ctx().error(*node, "'" + std::string(key) + "': " + parsed.error());
    return std::nullopt;
  }
  return parsed.value();
}

void read_image_tag(MappingReader& top, AgentConfig& config) {
  const auto node = top.get("image_tag");
  if (!node) {
    return;
  }
  MappingReader reader(*node, "'image_tag'", top.ctx());
  if (!reader.is_mapping()) {
    return;  // reported by the reader
  }
  using Kind = discovery::ImageTagSource::Kind;
  int given = 0;
  for (const auto& [key, kind] :
       {std::pair{"file", Kind::file}, std::pair{"env", Kind::environment},
        std::pair{"command", Kind::command}}) {
    if (const auto value = reader.string(key)) {
      config.image = {kind, *value};
      ++given;
    }
  }
  if (given != 1) {
    top.ctx().error(*node, "'image_tag' takes exactly one of file, env or command");
  }
  reader.reject_unknown_keys();
}

void read_flapping(MappingReader& top, AgentConfig& config) {
  const auto node = top.get("flapping");
  if (!node) {
    return;
  }
  MappingReader reader(*node, "'flapping'", top.ctx());
  if (const auto changes = reader.integer("changes", Need::optional, 1, 1000)) {
    config.flapping.changes = static_cast<int>(*changes);
  }
  if (const auto window = read_duration(reader, "window")) {
    config.flapping.window = std::chrono::duration_cast<std::chrono::seconds>(*window);
  }
  reader.reject_unknown_keys();
}

void read_probe_limits(MappingReader& top, AgentConfig& config) {
  const auto node = top.get("probe_limits");
  if (!node) {
    return;
  }
  MappingReader reader(*node, "'probe_limits'", top.ctx());
  auto& limits = config.probe_limits;
  // 0 lifts a limit.
  if (const auto v = reader.integer("memory_mb", Need::optional, 0, 1 << 24)) {
    limits.memory_bytes = static_cast<std::uint64_t>(*v) << 20;
  }
  if (const auto v = reader.integer("cpu_seconds", Need::optional, 0, 86400)) {
    limits.cpu_seconds = static_cast<std::uint64_t>(*v);
  }
  if (const auto v = reader.integer("open_files", Need::optional, 0, 1 << 20)) {
    limits.open_files = static_cast<std::uint64_t>(*v);
  }
  if (const auto v = reader.integer("processes", Need::optional, 0, 1 << 20)) {
    limits.processes = static_cast<std::uint64_t>(*v);
  }
  reader.reject_unknown_keys();
}

void read_provisioning(MappingReader& top, AgentConfig& config) {
  const auto node = top.get("provisioning");
  if (!node) {
    return;
  }
  MappingReader reader(*node, "'provisioning'", top.ctx());
  if (!reader.is_mapping()) {
    return;  // reported by the reader
  }
  auto& provisioning = config.provisioning;
  provisioning.enabled = reader.boolean("enabled").value_or(provisioning.enabled);
  if (const auto user = reader.string("user")) {
    if (*user == "root" || *user == "0") {
      top.ctx().error(*reader.get("user"),
                      "provisioning never runs as root: name an unprivileged user");
    }
    provisioning.user = *user;
  }
  if (const auto dir = reader.string("envs_dir")) {
    if (!dir->starts_with("/")) {
      top.ctx().error(*reader.get("envs_dir"), "'envs_dir' must be an absolute directory");
    }
    provisioning.envs_dir = *dir;
  }
  if (const auto on_failure = reader.string("on_failure")) {
    if (*on_failure != "keep" && *on_failure != "remove") {
      top.ctx().error(*reader.get("on_failure"),
                      "'on_failure' is keep (the half-built env stays, marked failed) or "
                      "remove, got '" +
                          *on_failure + "'");
    }
    provisioning.remove_on_failure = *on_failure == "remove";
  }
  if (const auto dirs = reader.string_list("python_dirs")) {
    provisioning.python_dirs.assign(dirs->begin(), dirs->end());
  }
  if (const auto timeout = read_duration(reader, "step_timeout")) {
    provisioning.step_timeout = *timeout;
  }
  reader.reject_unknown_keys();
}

// webhooks: a list of {url, secret_file, timeout, retry_delay, attempts};
// the URL's form and the secret are checked when the agent starts.
void read_webhooks(MappingReader& top, AgentConfig& config) {
  const auto node = top.get("webhooks");
  if (!node) {
    return;
  }
  if (!node->IsSequence()) {
    top.ctx().error(*node, "'webhooks' must be a list of {url, secret_file}, got " +
                               contracts::describe_node_type(*node));
    return;
  }
  config.webhooks.clear();
  for (const auto& item : *node) {
    MappingReader reader(item, "a webhook", top.ctx());
    if (!reader.is_mapping()) {
      continue;
    }
    WebhookTarget target;
    const auto url = reader.string("url", Need::required);
    const auto secret = reader.string("secret_file", Need::required);
    if (url) {
      if (const auto split = split_webhook_url(*url); !split) {
        top.ctx().error(*reader.get("url"), split.error());
      }
      target.url = *url;
    }
    if (secret) {
      target.secret_file = *secret;
    }
    if (const auto v = read_duration(reader, "timeout")) {
      target.timeout = *v;
    }
    if (const auto v = read_duration(reader, "retry_delay")) {
      target.retry_delay = *v;
    }
    if (const auto v = reader.integer("attempts", Need::optional, 1, 20)) {
      target.attempts = static_cast<int>(*v);
    }
    reader.reject_unknown_keys();
    if (url && secret) {
      config.webhooks.push_back(std::move(target));
    }
  }
}

std::vector<std::filesystem::path> paths(const std::vector<std::string>& texts) {
  return {texts.begin(), texts.end()};
}

}  // namespace

contracts::Diagnostics read_agent_config(const std::filesystem::path& path, AgentConfig& config) {
  contracts::Diagnostics diagnostics;
  contracts::ParseContext ctx(path.string(), diagnostics);
  const auto document = contracts::load_yaml_file(path, ctx);
  if (document && !document->IsNull()) {
    MappingReader top(*document, "the agent config (docs/agent.md)", ctx);
    if (top.is_mapping()) {
      if (auto v = top.string("contract"))
        config.contract = *v;
      if (auto v = top.string("contracts_dir"))
        config.contracts_dir = *v;
      if (auto v = top.string("detect_root"))
        config.detect_root = *v;
      if (auto v = top.string_list("roots"))
        config.roots = paths(*v);
      if (auto v = top.string_list("prefixes"))
        config.prefixes = paths(*v);
      ContainerSettings containers{config.containers, config.container_discovery};
      read_containers(top, containers);
      config.containers = std::move(containers.containers);
      config.container_discovery = std::move(containers.discovery);
      if (auto v = top.string("listen")) {
        if (!parse_listen_address(*v)) {
          ctx.error(*top.get("listen"),
                    "'listen' must be HOST:PORT such as 127.0.0.1:9714, got '" + *v + "'");
        }
        config.listen = *v;
      }
      if (auto v = top.string("database"))
        config.database = *v;
      read_image_tag(top, config);
      if (auto v = read_duration(top, "interval"))
        config.interval = *v;
      if (auto v = read_duration(top, "reprobe_interval"))
        config.reprobe_interval = *v;
      config.watch_file_changes =
          top.boolean("watch_file_changes").value_or(config.watch_file_changes);
      if (auto v = read_duration(top, "contract_poll"))
        config.contract_poll = *v;
      if (auto v = top.integer("concurrency", Need::optional, 0, 256)) {
        config.concurrency = static_cast<unsigned>(*v);
      }
      if (auto v = top.string("token_file"))
        config.token_file = *v;
      if (auto v = top.string("log_level")) {
        static const std::vector<std::string> levels = {"trace", "debug",    "info", "warn",
                                                        "error", "critical", "off"};
        if (std::find(levels.begin(), levels.end(), *v) == levels.end()) {
          ctx.error(*top.get("log_level"),
                    "'log_level' must be one of trace, debug, info, warn, error, critical, off");
        }
        config.log_level = *v;
      }
      read_flapping(top, config);
      if (auto v = top.integer("http_threads", Need::optional, 1, 512)) {
        config.http_threads = static_cast<unsigned>(*v);
      }
      if (auto v = top.integer("http_max_connections", Need::optional, 1, 4096)) {
        config.http_max_connections = static_cast<std::size_t>(*v);
      }
      if (auto v = top.integer("http_max_connections_per_client", Need::optional, 0, 4096)) {
        config.http_max_connections_per_client = static_cast<std::size_t>(*v);
      }
      if (auto v = top.string_list("http_allowed_hosts"))
        config.http_allowed_hosts = *v;
      if (auto v = top.string("checkout")) {
        if (!v->starts_with("/")) {
          ctx.error(*top.get("checkout"),
                    "'checkout' must be an absolute directory (a checkout of the repository "
                    "whose platform configs the contract names)");
        }
        config.checkout = *v;
      }
      if (auto v = top.string_list("run_integration_tests"))
        config.run_integration_tests = *v;
      if (auto v = read_duration(top, "http_timeout"))
        config.http_timeout = *v;
      if (auto v = read_duration(top, "http_idle_thread_life"))
        config.http_idle_thread_life = *v;
      if (auto v = top.string("run_root_envs_as")) {
        if (v->empty()) {
          ctx.error(*top.get("run_root_envs_as"),
                    "'run_root_envs_as' must be dynamic (a uid of its own for each "
                    "root-owned env), a user's name, or root (to run root-owned envs' code as "
                    "root)");
        }
        config.run_root_envs_as = *v;
      }
      read_probe_limits(top, config);
      read_webhooks(top, config);
      read_provisioning(top, config);
      if (auto v = read_duration(top, "env_deadline"))
        config.env_deadline = *v;
      if (auto v = read_duration(top, "reading_deadline"))
        config.reading_deadline = *v;
      if (auto v = read_duration(top, "scan_deadline"))
        config.scan_deadline = *v;
      if (auto v = top.integer("history_retention_days", Need::optional, 1, 36500)) {
        config.store.retention = std::chrono::hours(24 * *v);
      }
      top.reject_unknown_keys();
    }
  }
  return diagnostics;
}

std::optional<ListenAddress> parse_listen_address(const std::string& text) {
  static const std::regex pattern(R"re((\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5}))re");
  std::smatch match;
  if (!std::regex_match(text, match, pattern)) {
    return std::nullopt;
  }
  const int port = std::stoi(match[2]);
  if (port > 65535) {
    return std::nullopt;
  }
  std::string host = match[1];
  if (host.front() == '[') {
    host = host.substr(1, host.size() - 2);
  }
  return ListenAddress{host, port};
}

}  // namespace envcontract::daemon
