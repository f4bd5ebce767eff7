#include "contracts/contract.hpp"

#include "common/json_text.hpp"
#include "common/sha256.hpp"

namespace envcontract::contracts {

std::string to_string(Severity severity) {
  return severity == Severity::required ? "required" : "advisory";
}

std::string to_string(ProbeStage stage) {
  switch (stage) {
    case ProbeStage::static_files:
      return "static";
    case ProbeStage::imports:
      return "imports";
    case ProbeStage::devices:
      return "devices";
    case ProbeStage::smoke:
      return "smoke";
  }
  return "static";
}

namespace {

Json env_requirement_json(const EnvRequirement& envs) {
  switch (envs.mode) {
    case EnvRequirement::Mode::any:
      return {{"require", "any"}};
    case EnvRequirement::Mode::all:
      return {{"require", "all"}};
    case EnvRequirement::Mode::named:
      break;
  }
  return {{"require", "named"}, {"names", envs.names}};
}

}  // namespace

Json to_json(const Contract& contract) {
  Json json;
  json["name"] = contract.name;
  json["display_name"] = contract.display_name;
  json["platform"] = contract.platform;
  json["description"] = contract.description;
  json["path"] = contract.path.string();
  json["forms"] = contract.forms;
  auto targets = Json::array();
  for (const auto& target : contract.targets) {
    targets.push_back(
        {{"name", target.name}, {"image", target.image}, {"origin", target.origin.to_string()}});
  }
  json["targets"] = targets;
  json["envs"] = env_requirement_json(contract.envs);
  json["detect"] = {{"device_nodes", contract.detect.device_nodes},
                    {"tools", contract.detect.tools}};
  auto checks = Json::array();
  for (const auto& check : contract.checks) {
    checks.push_back({{"id", check.id},
                      {"kind", check.kind},
                      {"stage", to_string(check.stage)},
                      {"severity", to_string(check.severity)},
                      {"description", check.description},
                      {"section", check.section},
                      {"origin", check.origin.to_string()},
                      {"params", to_json(check.params)}});
  }
  json["checks"] = checks;
  auto waivers = Json::array();
  for (const auto& waiver : contract.waivers) {
    waivers.push_back({{"check", waiver.check},
                       {"envs", waiver.envs},
                       {"reason", waiver.reason},
                       {"until", waiver.until.empty() ? Json(nullptr) : Json(waiver.until)},
                       {"origin", waiver.origin.to_string()}});
  }
  json["waivers"] = waivers;
  json["provision"] = contract.provision ? to_json(*contract.provision) : Json(nullptr);
  json["kept"] = contract.kept;
  return json;
}

std::string judged_sha256(const Contract& contract) {
  auto json = to_json(contract);
  json.erase("path");
  // Only the entries' own origins: a parameter may be named "origin" (a
  // distribution, a variable) and is judged.
  for (const char* entries : {"targets", "checks", "waivers"}) {
    for (auto& entry : json[entries]) {
      entry.erase("origin");
    }
  }
  return common::sha256_hex(common::json_text(json));
}

}  // namespace envcontract::contracts
