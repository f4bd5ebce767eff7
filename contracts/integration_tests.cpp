#include "contracts/integration_tests.hpp"

#include "common/sha256.hpp"
#include "common/spelling.hpp"
#include "contracts/mapping_reader.hpp"
#include "contracts/values.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

namespace envcontract::contracts {

bool is_preflight_phase(const std::string& phase) {
  return phase == "preflight";
}

std::string runner_phase(const IntegrationEntry& entry) {
  if (!entry.phase.empty()) {
    return entry.phase;
  }
  std::string name = entry.name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* marker : {"check ", "availability", "isolated", "environment"}) {
    if (name.find(marker) != std::string::npos) {
      return "preflight";
    }
  }
  return "functional";
}

std::string runner_failure_policy(const IntegrationEntry& entry) {
  if (!entry.failure_policy.empty()) {
    return entry.failure_policy;
  }
  return runner_phase(entry) == "functional" ? "continue-after-failure" : "fail-fast";
}

namespace {

std::string slug_of(const std::string& text) {
  std::string slug;
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0) {
      slug += static_cast<char>(std::tolower(c));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') {
    slug.pop_back();
  }
  // A text without ASCII letters or digits gets a slug of its hash, so two
  // such names stay two ids (the runner numbers them, which moves).
  return slug.empty() ? "integration-test-" + common::sha256_hex(text).substr(0, 8) : slug;
}

}  // namespace

std::string integration_check_id(const IntegrationEntry& entry) {
  if (!entry.id.empty()) {
    return is_check_id(entry.id) ? entry.id : slug_of(entry.id);
  }
  return slug_of(entry.name);
}

NamedList<std::string> read_environment_map(const YAML::Node& node, const std::string& what,
                                            ParseContext& ctx) {
  NamedList<std::string> variables;
  if (!node.IsMap()) {
    ctx.error(node,
              "'" + what + "' must map variable names to values, got " + describe_node_type(node));
    return variables;
  }
  static const std::regex name_pattern("[A-Za-z_][A-Za-z0-9_]*");
  for (const auto& pair : node) {
    const auto key = read_string(pair.first, "a variable name", ctx);
    const auto value = read_string(pair.second, "a variable's value", ctx);
    if (key && !std::regex_match(*key, name_pattern)) {
      ctx.error(pair.first, "'" + *key + "' in '" + what +
                                "' is not a variable name (letters, digits and '_', not "
                                "starting with a digit)");
      continue;
    }
    if (key && value) {
      variables.emplace_back(*key, *value);
    }
  }
  return variables;
}

std::vector<std::string> repository_paths(const std::string& command) {
  // Conservative on purpose: a false match skips a check, so only a bare
  // word made of path characters counts (`tests/integration/ops/`,
  // `./run.sh`), never one with quotes, redirections, brackets or variables
  // (`2>/dev/null`, `"print(1/2)"`, `'s/a/b/'`, `"$MODEL_PATH"`).
  static const std::regex path_word(
      R"re((\./|\.\./)?[A-Za-z0-9_.][A-Za-z0-9_.+-]*(/[A-Za-z0-9_.+-]+)*/?)re");
  std::vector<std::string> paths;
  std::string word;
  const auto flush = [&] {
    if (word.size() < 3 || word.size() > 512) {
      word.clear();
      return;
    }
    if (word.find('/') != std::string::npos && std::regex_match(word, path_word)) {
      paths.push_back(word);
    }
    word.clear();
  };
  for (const char c : command) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      flush();
    } else {
      word += c;
    }
  }
  flush();
  return paths;
}

std::optional<IntegrationEntry> parse_integration_entry(
    const YAML::Node& entry, const NamedList<std::string>& runner_environment, ParseContext& ctx) {
  MappingReader reader(entry, "integration test", ctx);
  if (!reader.is_mapping()) {
    return std::nullopt;
  }
  IntegrationEntry parsed;
  const auto name = reader.string("name", Need::required);
  const auto command = reader.string("command", Need::required);
  parsed.name = name.value_or("");
  parsed.id = reader.string("id").value_or("");
  // A misspelt phase would make a preflight vanish, a misspelt policy change
  // what a failure means: both are errors, never a silent default.
  const auto one_of = [&](const char* key, const std::vector<std::string>& values) {
    const auto value = reader.string(key);
    if (!value) {
      return std::string();
    }
    if (std::find(values.begin(), values.end(), *value) == values.end()) {
      std::string allowed;
      for (const auto& known : values) {
        allowed += (allowed.empty() ? "" : ", ") + known;
      }
      ctx.error(*reader.get(key), "unknown " + std::string(key) + " '" + *value + "'" +
                                      common::did_you_mean(*value, values) + "; it is one of " +
                                      allowed);
      return std::string();
    }
    return *value;
  };
  parsed.phase = one_of("phase", k_integration_phases);
  parsed.failure_policy = one_of("failure_policy", k_failure_policies);
  // The runner refuses these, so CI never runs such a config.
  if (const auto id = reader.get("id"); id && parsed.id.empty()) {
    ctx.error(*id, "'id' of integration test must be a non-empty string");
  } else if (parsed.id.find_first_of("\r\n") != std::string::npos) {
    ctx.error(*id, "'id' of integration test must be a single line");
  }
  if (parsed.name.find_first_of("\r\n") != std::string::npos) {
    ctx.error(*reader.get("name"),
              "'name' of integration test must be a single line (the CI runner refuses it)");
  }
  parsed.command = command.value_or("");
  if (const auto environment = reader.get("environment")) {
    parsed.environment = read_environment_map(*environment, "environment", ctx);
  }
  parsed.runner_environment = runner_environment;
  // Test entries grow CI-only keys over time; keep loading them.
  reader.reject_unknown_keys(DiagnosticLevel::warning);
  if (!name || !command) {
    return std::nullopt;
  }
  return parsed;
}

std::optional<IntegrationEntry> find_integration_entry(const std::filesystem::path& config_path,
                                                       const std::string& selector,
                                                       const YAML::Node& selector_node,
                                                       ParseContext& ctx) {
  ParseContext config_ctx(config_path.string(), ctx.diagnostics());
  const auto root = load_yaml_file(config_path, config_ctx);
  if (!root) {
    ctx.error(selector_node,
              "cannot load integration test '" + selector + "' from " + config_path.string());
    return std::nullopt;
  }
  const auto tests = find_child(*root, "integration_tests");
  if (!tests || !tests->IsSequence()) {
    ctx.error(selector_node, config_path.string() + " has no 'integration_tests' list");
    return std::nullopt;
  }
  NamedList<std::string> runner_environment;
  if (const auto environment = find_child(*root, "integration_environment")) {
    runner_environment = read_environment_map(*environment, "integration_environment", config_ctx);
  }
  // By id, by name, or by the id the loader gives an entry without one.
  std::vector<std::string> names;
  for (const auto& entry : *tests) {
    IntegrationEntry named;
    named.id = scalar_child(entry, "id");
    named.name = scalar_child(entry, "name");
    // An empty selector names no entry (an entry without an id has id "").
    if (!selector.empty() && (selector == named.id || selector == named.name ||
                              selector == integration_check_id(named))) {
      return parse_integration_entry(entry, runner_environment, config_ctx);
    }
    for (const auto* value : {&named.id, &named.name}) {
      if (!value->empty()) {
        names.push_back(*value);
      }
    }
  }
  std::string listing;
  for (const auto& name : names) {
    listing += (listing.empty() ? "" : ", ") + ("'" + name + "'");
  }
  ctx.error(selector_node, "no integration test with id or name '" + selector + "' in " +
                               config_path.string() + common::did_you_mean(selector, names) +
                               "; it has " + (listing.empty() ? "none" : listing));
  return std::nullopt;
}

}  // namespace envcontract::contracts
