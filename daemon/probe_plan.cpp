#include "daemon/probe_plan.hpp"

#include "common/json_text.hpp"

#include <algorithm>

namespace envcontract::daemon {
namespace {

void append_unique(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) {
    list.push_back(item);
  }
}

std::chrono::milliseconds timeout_of(const contracts::Check& check) {
  return std::chrono::milliseconds(check.params.value("timeout_ms", 60'000));
}

}  // namespace

probes::ProbePlan plan_from_contract(const contracts::Contract* contract) {
  probes::ProbePlan plan;
  if (contract == nullptr) {
    return plan;
  }
  for (const auto& check : contract->checks) {
    if (check.kind == "imports") {
      for (const auto& module : check.params["modules"]) {
        append_unique(plan.imports, module.get<std::string>());
      }
      plan.imports_timeout = std::max(plan.imports_timeout, timeout_of(check));
    } else if (check.kind == "torch" &&
               !check.params.value("after_import", contracts::Json::array()).empty()) {
      append_unique(plan.imports, "torch");
      for (const auto& module : check.params["after_import"]) {
        append_unique(plan.imports, module.get<std::string>());
      }
      plan.torch_after_imports = true;
    } else if (check.kind == "devices") {
      std::vector<std::string> imports;
      for (const auto& module : check.params["imports"]) {
        imports.push_back(module.get<std::string>());
      }
      plan.devices.push_back(
          {check.id, check.params.value("expression", ""), imports, timeout_of(check)});
    } else if (check.kind == "smoke") {
      plan.smokes.push_back({check.id, check.params.value("code", ""), timeout_of(check)});
    } else if (check.kind == "command") {
      plan.commands.push_back({check.id, check.params.value("run", ""), {}, timeout_of(check)});
    } else if (check.kind == "integration_test") {
      // value() returns copies: keep them alive while iterating.
      const contracts::Json entry = check.params.value("entry", contracts::Json::object());
      const contracts::Json environment = entry.value("environment", contracts::Json::object());
      std::map<std::string, std::string> extra;
      for (const auto& [name, value] : environment.items()) {
        extra[name] = value.is_string() ? value.get<std::string>() : common::json_text(value);
      }
      plan.commands.push_back(
          {check.id, entry.value("command", ""), std::move(extra), timeout_of(check)});
    }
  }
  return plan;
}

std::vector<std::string> library_names_from_contract(const contracts::Contract& contract) {
  std::vector<std::string> names;
  for (const auto& check : contract.checks) {
    if (check.kind != "libraries") {
      continue;
    }
    for (const char* key : {"present", "absent"}) {
      for (const auto& name : check.params.value(key, contracts::Json::array())) {
        append_unique(names, name.get<std::string>());
      }
    }
  }
  return names;
}

}  // namespace envcontract::daemon
