#include "contracts/contract_loader.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/json_text.hpp"
#include "common/spelling.hpp"
#include "contracts/check_parser.hpp"
#include "contracts/integration_tests.hpp"
#include "contracts/legacy_forms.hpp"
#include "contracts/mapping_reader.hpp"
#include "contracts/provision_recipe.hpp"
#include "contracts/values.hpp"
#include "contracts/yaml_document.hpp"

namespace envcontract::contracts {
namespace {

// Keys of a CI platform config that only matter to CI itself: accepted and
// kept so --print shows them, never judged.
const std::vector<std::string> k_ci_only_keys = {
    "runner_labels",   "container_volumes",   "container_options",        "integration_environment",
    "timeout_minutes", "wheel_artifact_name", "integration_wheel_source", "setup_script",
    "setup_platform"};

bool looks_like_platform_config(const YAML::Node& root) {
  if (find_child(root, "checks") || find_child(root, "schema_version")) {
    return false;
  }
  for (const char* key :
       {"torch_contract", "integration_tests", "setup_script", "setup_platform", "runner_labels"}) {
    if (find_child(root, key)) {
      return true;
    }
  }
  return false;
}

void read_targets(MappingReader& top, Contract& contract) {
  auto& ctx = top.ctx();
  auto add_target = [&](const YAML::Node& node, const std::string& name, std::string_view what) {
    const auto image = read_string(node, what, ctx);
    if (!image) {
      return;
    }
    const auto parsed = parse_image_reference(*image);
    if (!parsed) {
      ctx.error(node, std::string(what) + ": " + parsed.error());
      return;
    }
    contract.targets.push_back({name, *image, ctx.locate(node)});
  };
  if (const auto image = top.get("image")) {
    add_target(*image, "default", "'image'");
  }
  if (const auto image = top.get("ci_image")) {
    add_target(*image, "ci", "'ci_image'");
  }
  const auto targets = top.get("targets");
  if (!targets) {
    return;
  }
  if (!targets->IsSequence()) {
    ctx.error(*targets,
              "'targets' must be a list of {name, image}, got " + describe_node_type(*targets));
    return;
  }
  std::map<std::string, int> seen_lines;
  for (const auto& item : *targets) {
    MappingReader target(item, "target", ctx);
    const auto name = target.string("name", Need::required);
    const auto image = target.get("image", Need::required);
    target.reject_unknown_keys();
    if (!name || !image) {
      continue;
    }
    const auto [it, inserted] = seen_lines.emplace(*name, item.Mark().line + 1);
    if (!inserted) {
      ctx.error(item, "duplicate target name '" + *name + "' (first at line " +
                          std::to_string(it->second) + ")");
      continue;
    }
    add_target(*image, *name, "'image' of target '" + *name + "'");
  }
}

void read_env_requirement(MappingReader& top, Contract& contract) {
  const auto envs = top.get("envs");
  if (!envs) {
    return;
  }
  auto& ctx = top.ctx();
  YAML::Node require = *envs;
  std::optional<MappingReader> reader;
  if (envs->IsMap()) {
    reader.emplace(*envs, "'envs'", ctx);
    const auto node = reader->get("require", Need::required);
    reader->reject_unknown_keys();
    if (!node) {
      return;
    }
    require = *node;
  }
  const std::string expected =
      "'envs' must say which envs must comply: any, all, or a list of "
      "env names";
  if (require.IsScalar() && (require.Scalar() == "any" || require.Scalar() == "all")) {
    contract.envs.mode =
        require.Scalar() == "any" ? EnvRequirement::Mode::any : EnvRequirement::Mode::all;
  } else if (require.IsSequence() && require.size() > 0) {
    const auto names = read_string_list(require, "the env names of 'envs'", ctx);
    if (names) {
      contract.envs.mode = EnvRequirement::Mode::named;
      contract.envs.names = *names;
    }
  } else {
    ctx.error(require, expected + ", got " + describe_node_type(require));
  }
}

// Waivers name checks, so they are read after the checks, to point at typos.
void read_waivers(MappingReader& top, Contract& contract) {
  const auto waivers = top.get("waivers");
  if (!waivers) {
    return;
  }
  auto& ctx = top.ctx();
  if (!waivers->IsSequence()) {
    ctx.error(*waivers, "'waivers' must be a list of {check, reason, envs, until}, got " +
                            describe_node_type(*waivers));
    return;
  }
  std::vector<std::string> ids;
  for (const auto& check : contract.checks) {
    ids.push_back(check.id);
  }
  static const std::regex date(R"re(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))re");
  for (const auto& node : *waivers) {
    MappingReader reader(node, "waiver", ctx);
    if (!reader.is_mapping()) {
      continue;
    }
    Waiver waiver;
    waiver.origin = ctx.locate(node);
    const auto check = reader.string("check", Need::required);
    const auto reason = reader.string("reason", Need::required);
    waiver.envs = reader.string_list("envs").value_or(std::vector<std::string>{});
    if (const auto until = reader.string("until")) {
      if (std::regex_match(*until, date)) {
        waiver.until = *until;
      } else {
        ctx.error(*reader.get("until"),
                  "'until' of a waiver must be a date such as 2026-12-31, got '" + *until + "'");
      }
    }
    reader.reject_unknown_keys();
    if (check && std::find(ids.begin(), ids.end(), *check) == ids.end()) {
      ctx.error(*reader.get("check"),
                "waiver for unknown check '" + *check + "'" + common::did_you_mean(*check, ids));
      continue;
    }
    if (reason && reason->find_first_not_of(" \t") == std::string::npos) {
      ctx.error(*reader.get("reason"),
                "a waiver needs a reason (the ticket that tracks the fix, say)");
      continue;
    }
    if (check && reason) {
      waiver.check = *check;
      waiver.reason = *reason;
      contract.waivers.push_back(std::move(waiver));
    }
  }
}

void read_detection(MappingReader& top, Contract& contract) {
  const auto detect = top.get("detect");
  if (!detect) {
    return;
  }
  MappingReader reader(*detect, "'detect'", top.ctx());
  contract.detect.device_nodes =
      reader.string_list("device_nodes").value_or(std::vector<std::string>{});
  contract.detect.tools = reader.string_list("tools").value_or(std::vector<std::string>{});
  reader.reject_unknown_keys();
  for (const auto& glob : contract.detect.device_nodes) {
    if (!glob.starts_with("/dev/")) {
      top.ctx().error(*reader.get("device_nodes"),
                      "device node glob '" + glob + "' of 'detect' must be under /dev/");
    }
  }
}

// The devices a platform config's container is given (`--device=/dev/xpu0`,
// `--device /dev/davinci0:/dev/davinci0:rwm`, `--gpus all`) say which
// platform it is for: they feed `detect:` so that `contract: auto` can choose
// a CI config as it chooses our own contracts.
std::vector<std::string> container_device_nodes(const YAML::Node& options) {
  std::string text;
  if (options.IsScalar()) {
    text = options.Scalar();
  } else if (options.IsSequence()) {
    for (const auto& item : options) {
      text += (item.IsScalar() ? item.Scalar() : std::string()) + " ";
    }
  }
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    words.push_back(word);
  }
  // Nodes every kind of host may have say nothing of the platform; numbered
  // ones fold into one glob (davinci0..7: /dev/davinci[0-9]*), so that a
  // config listing eight devices does not outscore one naming the family.
  static const std::vector<std::string> generic = {"/dev/fuse",       "/dev/null", "/dev/zero",
                                                   "/dev/shm",        "/dev/dri",  "/dev/net",
                                                   "/dev/infiniband", "/dev/kvm"};
  std::vector<std::string> nodes;
  const auto add = [&](const std::string& spec) {
    std::string host = spec.substr(0, spec.find(':'));
    if (!host.starts_with("/dev/") ||
        std::any_of(generic.begin(), generic.end(), [&](const std::string& prefix) {
          return host == prefix || host.starts_with(prefix + "/");
        })) {
      return;
    }
    const auto digits = host.find_last_not_of("0123456789");
    if (digits != std::string::npos && digits + 1 < host.size()) {
      host = host.substr(0, digits + 1) + "[0-9]*";
    }
    if (std::find(nodes.begin(), nodes.end(), host) == nodes.end()) {
      nodes.push_back(host);
    }
  };
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i].starts_with("--device=")) {
      add(words[i].substr(9));
    } else if (words[i] == "--device" && i + 1 < words.size()) {
      add(words[++i]);
    } else if (words[i] == "--gpus" || words[i].starts_with("--gpus=")) {
      add("/dev/nvidia[0-9]*");
    }
  }
  return nodes;
}

void read_native_checks(MappingReader& top, CheckParser& parser) {
  const auto checks = top.get("checks");
  if (!checks) {
    return;
  }
  if (!checks->IsSequence()) {
    top.ctx().error(*checks, "'checks' must be a list of checks, each with a 'kind', got " +
                                 describe_node_type(*checks));
    return;
  }
  for (const auto& item : *checks) {
    parser.parse(item, "checks");
  }
}

void read_schema_version(MappingReader& top) {
  const auto version = top.get("schema_version");
  if (version && !(version->IsScalar() && version->Scalar() == "1")) {
    top.ctx().error(*version, "unsupported schema_version " + describe_node_type(*version) +
                                  ": this envcontract reads schema_version 1");
  }
}

// The contract's name, description, targets, env requirement, detection
// and provisioning recipe.
void read_identity(MappingReader& top, const std::filesystem::path& path, Contract& contract) {
  read_schema_version(top);
  contract.name = top.string("name").value_or(path.stem().string());
  contract.display_name = top.string("display_name").value_or("");
  contract.platform = top.string("platform").value_or("");
  contract.description = top.string("description").value_or("");
  read_targets(top, contract);
  read_env_requirement(top, contract);
  read_detection(top, contract);
  contract.provision = read_provision_recipe(top);
}

// The checks of every form the file holds: our own, a platform config's
// environment_check, torch_contract and integration_tests.
void read_check_forms(MappingReader& top, CheckParser& parser, const std::filesystem::path& path,
                      const LoadOptions& options, Contract& contract) {
  if (top.has("checks") || top.has("schema_version")) {
    contract.forms.push_back("native");
  }
  read_native_checks(top, parser);
  if (const auto section = top.get("environment_check")) {
    contract.forms.push_back("environment_check");
    translate_environment_check(*section, parser);
  }
  if (const auto torch_contract = top.get("torch_contract")) {
    translate_torch_contract(*torch_contract, parser);
  }
  if (const auto tests = top.get("integration_tests")) {
    NamedList<std::string> runner_environment;
    if (const auto environment = top.get("integration_environment")) {
      runner_environment = read_environment_map(*environment, "integration_environment", top.ctx());
    }
    translate_integration_tests(*tests, path.filename().string(), runner_environment,
                                options.run_tests, parser);
    contract.kept["integration_tests"] = yaml_to_json(*tests);
  }
}

// What a CI platform config holds beyond checks: the devices its container
// is given (to detect the platform by), its time-out, its CI keys, kept for
// --print.
void read_platform_config_keys(MappingReader& top, Contract& contract) {
  if (contract.detect.device_nodes.empty() && contract.detect.tools.empty()) {
    if (const auto container = top.get("container_options")) {
      contract.detect.device_nodes = container_device_nodes(*container);
    }
  }
  // CI stops a job after this many minutes: "sixty" or 0 is a broken config.
  top.integer("timeout_minutes", Need::optional, 1, 7 * 24 * 60);
}

void keep_ci_keys(MappingReader& top, bool platform_config, Contract& contract) {
  for (const auto& key : k_ci_only_keys) {
    if (const auto value = top.get(key)) {
      contract.kept[key] = yaml_to_json(*value);
    }
  }
  if (contract.platform.empty() && contract.kept.contains("setup_platform")) {
    contract.platform = contract.kept["setup_platform"].is_string()
                            ? contract.kept["setup_platform"].get<std::string>()
                            : "";
  }
  // A platform config grows CI keys we have never seen: keep them, warn. Our
  // own schema is strict, so a typo there never silently disables a check.
  if (platform_config) {
    for (const auto& [key, value] : top.unknown_entries()) {
      contract.kept[key] = yaml_to_json(value);
    }
  }
}

// --print says of each integration test whether it runs, and as which check.
void annotate_integration_tests(Contract& contract) {
  auto tests = contract.kept.find("integration_tests");
  if (tests == contract.kept.end() || !tests->is_array()) {
    return;
  }
  for (auto& entry : *tests) {
    if (!entry.is_object()) {
      continue;
    }
    IntegrationEntry named;
    // As the loader read them: YAML scalars, whatever JSON made of them.
    const auto scalar_text = [&](const char* key) {
      const auto found = entry.find(key);
      return found == entry.end() || found->is_null() || found->is_structured() ? std::string()
             : found->is_string() ? found->get<std::string>()
                                  : common::json_text(*found);
    };
    named.id = scalar_text("id");
    named.name = scalar_text("name");
    named.phase = scalar_text("phase");
    named.failure_policy = scalar_text("failure_policy");
    const std::string id = integration_check_id(named);
    const bool runs =
        std::any_of(contract.checks.begin(), contract.checks.end(), [&](const Check& check) {
          return check.parameters_if<IntegrationTestParams>() != nullptr && check.id == id;
        });
    entry["check_id"] = id;
    entry["runs"] = runs;
    // What CI makes of it when the file leaves them out.
    entry["runner_phase"] = runner_phase(named);
    entry["runner_failure_policy"] = runner_failure_policy(named);
  }
}

}  // namespace

LoadResult load_contract_text(const std::string& text, const std::filesystem::path& path,
                              const LoadOptions& options) {
  LoadResult result;
  ParseContext ctx(path.string(), result.diagnostics);
  const auto root = load_yaml_text(text, ctx);
  if (!root) {
    return result;
  }
  MappingReader top(*root, "the contract", ctx);
  if (!top.is_mapping()) {
    return result;
  }
  Contract contract;
  contract.path = path;
  const bool platform_config = looks_like_platform_config(*root);
  read_identity(top, path, contract);
  CheckParser parser(ctx, KindContext{path.parent_path(), options.checkout});
  read_check_forms(top, parser, path, options, contract);
  if (platform_config) {
    contract.forms.push_back("platform_config");
  }
  if (!options.run_tests.empty() && !top.has("integration_tests")) {
    ctx.error(*root,
              "the agent's run_integration_tests names tests to run, but this contract has "
              "no integration_tests: remove run_integration_tests, or name the CI "
              "platform config as the contract");
  }
  if (platform_config) {
    read_platform_config_keys(top, contract);
  }
  keep_ci_keys(top, platform_config, contract);
  contract.checks = parser.take_checks();
  const bool judges_torch =
      std::any_of(contract.checks.begin(), contract.checks.end(),
                  [](const Check& check) { return check.parameters_if<TorchParams>() != nullptr; });
  if (platform_config && !top.has("torch_contract") && !judges_torch) {
    ctx.warning(*root,
                "nothing in this platform config judges the torch build (no 'torch_contract', "
                "no torch check): add torch_contract: {base_version: ...}, or judge it in a "
                "contract of your own");
  }
  annotate_integration_tests(contract);
  read_waivers(top, contract);
  top.reject_unknown_keys(platform_config ? DiagnosticLevel::warning : DiagnosticLevel::error);
  if (contract.checks.empty() && contract.targets.empty() && !result.diagnostics.has_errors()) {
    ctx.error(*root,
              "the contract checks nothing: add 'checks:' (see docs/contracts.md), an "
              "'environment_check:' section, or a target image");
  }
  if (!result.diagnostics.has_errors()) {
    result.contract = std::move(contract);
  }
  return result;
}

LoadResult load_contract_file(const std::filesystem::path& path, const LoadOptions& options) {
  LoadResult result;
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    result.diagnostics.error({path.string(), 0, 0}, "is a directory, not a contract file");
    return result;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    result.diagnostics.error({path.string(), 0, 0},
                             "cannot read the contract; check that the file exists and is "
                             "readable");
    return result;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_contract_text(text.str(), path, options);
}

}  // namespace envcontract::contracts
