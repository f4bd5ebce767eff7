#include "contracts/integration_tests.hpp"

#include "contracts/mapping_reader.hpp"
#include "contracts/spelling.hpp"

namespace envcontract::contracts {

bool is_preflight_phase(const std::string& phase) {
  // Older configs have no phase: their entries are the preflight asserts.
  return phase.empty() || phase == "preflight";
}

std::optional<IntegrationEntry> parse_integration_entry(const YAML::Node& entry,
                                                        ParseContext& ctx) {
  MappingReader reader(entry, "integration test", ctx);
  if (!reader.is_mapping()) {
    return std::nullopt;
  }
  IntegrationEntry parsed;
  const auto name = reader.string("name", Need::required);
  const auto command = reader.string("command", Need::required);
  parsed.name = name.value_or("");
  parsed.id = reader.string("id").value_or("");
  parsed.phase = reader.string("phase").value_or("");
  parsed.failure_policy = reader.string("failure_policy").value_or("");
  parsed.command = command.value_or("");
  if (const auto environment = reader.get("environment")) {
    if (!environment->IsMap()) {
      ctx.error(*environment,
                "'environment' of integration test must map variable names to "
                "values, got " +
                    describe_node_type(*environment));
    } else {
      for (const auto& pair : *environment) {
        const auto key = read_string(pair.first, "a variable name", ctx);
        const auto value = read_string(pair.second, "a variable's value", ctx);
        if (key && value) {
          parsed.environment.emplace_back(*key, *value);
        }
      }
    }
  }
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
  std::vector<std::string> names;
  for (const auto& entry : *tests) {
    for (const char* key : {"id", "name"}) {
      const std::string value = scalar_child(entry, key);
      if (value.empty()) {
        continue;
      }
      if (value == selector) {
        return parse_integration_entry(entry, config_ctx);
      }
      names.push_back(value);
    }
  }
  std::string listing;
  for (const auto& name : names) {
    listing += (listing.empty() ? "" : ", ") + ("'" + name + "'");
  }
  ctx.error(selector_node, "no integration test with id or name '" + selector + "' in " +
                               config_path.string() + did_you_mean(selector, names) + "; it has " +
                               (listing.empty() ? "none" : listing));
  return std::nullopt;
}

}  // namespace envcontract::contracts
