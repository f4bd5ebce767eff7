#include "contracts/check_params.hpp"

namespace envcontract::contracts {
namespace {

using Json = nlohmann::ordered_json;

// A string parameter appears only when set: "" means "not constrained".
void put_text(Json& json, const char* key, const std::string& value) {
  if (!value.empty()) {
    json[key] = value;
  }
}

template <typename Value>
Json named(const NamedList<Value>& list) {
  Json json = Json::object();
  for (const auto& [name, value] : list) {
    if constexpr (std::is_same_v<Value, std::string>) {
      json[name] = value;
    } else {
      json[name] = to_json(value);
    }
  }
  return json;
}

Json toolkit(const ToolkitRule& rule) {
  Json json = {{"mode", to_string(rule.mode)}};
  if (rule.mode == ToolkitRule::Mode::exact) {
    json["value"] = rule.version;
  }
  return json;
}

Json of(const TorchParams& p) {
  Json json = Json::object();
  put_text(json, "version", p.version);
  put_text(json, "base", p.base);
  put_text(json, "local", p.local);
  if (p.cuda) {
    json["cuda"] = toolkit(*p.cuda);
  }
  if (p.hip) {
    json["hip"] = toolkit(*p.hip);
  }
  json["forbidden_paths"] = p.forbidden_paths;
  json["forbidden_path_parts"] = p.forbidden_path_parts;
  json["required_paths"] = p.required_paths;
  json["after_import"] = p.after_import;
  return json;
}

Json of(const TritonParams& p) {
  Json json = Json::object();
  put_text(json, "provider", p.provider);
  if (!p.provider_version.empty()) {
    json["provider_version"] = to_json(p.provider_version);
  }
  put_text(json, "version_prefix", p.version_prefix);
  json["backends"] = p.backends;
  json["forbid_distributions"] = p.forbid_distributions;
  return json;
}

Json of(const PythonParams& p) {
  return {{"version", to_json(p.version)}};
}

Json of(const DistributionsParams& p) {
  return {{"pins", named(p.pins)}, {"absent", p.absent}};
}

Json of(const ModulesParams& p) {
  return {{"present", p.present}, {"absent", p.absent}};
}

Json of(const ImportsParams& p) {
  return {{"modules", p.modules}, {"ordered", p.ordered}, {"timeout_ms", p.timeout.count()}};
}

Json of(const FilesParams& p) {
  return {{"exist", p.exist}, {"absent", p.absent}};
}

Json of(const LibrariesParams& p) {
  return {{"present", p.present}, {"absent", p.absent}};
}

Json of(const LinkageParams& p) {
  return {{"library", p.library},
          {"must_not_need", p.must_not_need},
          {"must_need", p.must_need},
          {"transitive", p.transitive}};
}

Json of(const DeviceNodesParams& p) {
  return {{"glob", p.glob}, {"count", p.count.to_json()}};
}

Json of(const EnvironmentParams& p) {
  return {{"activation", to_string(p.activation)},
          {"equals", named(p.equals)},
          {"set", p.set},
          {"unset", p.unset}};
}

Json of(const SearchPathParams& p) {
  return {{"variable", p.variable},
          {"activation", to_string(p.activation)},
          {"starts_with", p.starts_with},
          {"must_not_contain", p.must_not_contain}};
}

Json of(const ToolsParams& p) {
  return {{"on_path", p.on_path}};
}

Json of(const GlibcParams& p) {
  return {{"min_version", p.min_version}};
}

Json of(const DevicesParams& p) {
  return {{"expression", p.expression},
          {"imports", p.imports},
          {"count", p.count.to_json()},
          {"timeout_ms", p.timeout.count()}};
}

Json of(const SmokeParams& p) {
  Json json = {{"code", p.code}};
  put_text(json, "expect_output", p.expect_output);
  json["timeout_ms"] = p.timeout.count();
  return json;
}

Json of(const CommandParams& p) {
  Json json = {{"run", p.run}, {"expect_exit", p.expect_exit}};
  put_text(json, "expect_output", p.expect_output);
  json["timeout_ms"] = p.timeout.count();
  return json;
}

Json of(const IntegrationTestParams& p) {
  Json json = {{"from", p.from},
               {"test", p.test},
               {"timeout_ms", p.timeout.count()},
               {"entry", to_json(p.entry)}};
  put_text(json, "workdir", p.workdir);
  put_text(json, "needs_checkout", p.needs_checkout);
  return json;
}

}  // namespace

std::string to_string(ActivationMode mode) {
  return mode == ActivationMode::bare ? "bare" : "activated";
}

std::string to_string(ToolkitRule::Mode mode) {
  switch (mode) {
    case ToolkitRule::Mode::none:
      return "none";
    case ToolkitRule::Mode::required:
      return "required";
    case ToolkitRule::Mode::any:
      return "any";
    case ToolkitRule::Mode::exact:
      return "exact";
  }
  return "none";
}

Json to_json(const IntegrationEntry& entry) {
  return {{"name", entry.name},
          {"id", entry.id},
          {"phase", entry.phase},
          {"failure_policy", entry.failure_policy},
          {"command", entry.command},
          {"environment", named(entry.environment)},
          {"integration_environment", named(entry.runner_environment)}};
}

Json to_json(const CheckParams& params) {
  return std::visit([](const auto& p) { return of(p); }, params);
}

}  // namespace envcontract::contracts
