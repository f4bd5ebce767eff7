// What each kind asks probes to gather in every env, beyond what every scan
// gathers: the registry's `request` column (check_kind.cpp). The agent builds
// its probe plan from these alone.
#include "common/json_text.hpp"
#include "contracts/kinds.hpp"

namespace envcontract::contracts::kinds {
namespace {

std::chrono::milliseconds timeout_of(const Check& check) {
  return std::chrono::milliseconds(check.params.value("timeout_ms", 60'000));
}

// The strings of params[key] (parsers made them strings; a missing key is none).
std::vector<std::string> strings(const Check& check, const char* key) {
  std::vector<std::string> items;
  const auto found = check.params.find(key);
  if (found != check.params.end() && found->is_array()) {
    for (const auto& item : *found) {
      if (item.is_string()) {
        items.push_back(item.get<std::string>());
      }
    }
  }
  return items;
}

}  // namespace

void request_imports(const Check& check, facts::ProbeRequest& request) {
  for (const auto& module : strings(check, "modules")) {
    request.add_import(module);
  }
  request.imports_timeout = std::max(request.imports_timeout, timeout_of(check));
}

void request_torch(const Check& check, facts::ProbeRequest& request) {
  const auto after = strings(check, "after_import");
  if (after.empty()) {
    return;
  }
  request.add_import("torch");
  for (const auto& module : after) {
    request.add_import(module);
  }
  request.torch_after_imports = true;
}

void request_devices(const Check& check, facts::ProbeRequest& request) {
  request.devices.push_back({check.id, check.params.value("expression", ""),
                             strings(check, "imports"), timeout_of(check)});
}

void request_smoke(const Check& check, facts::ProbeRequest& request) {
  request.smokes.push_back({check.id, check.params.value("code", ""), timeout_of(check)});
}

void request_command(const Check& check, facts::ProbeRequest& request) {
  request.commands.push_back({check.id, check.params.value("run", ""), {}, timeout_of(check)});
}

void request_integration_test(const Check& check, facts::ProbeRequest& request) {
  // value() returns copies: keep them alive while iterating.
  const Json entry = check.params.value("entry", Json::object());
  const Json environment = entry.value("environment", Json::object());
  std::map<std::string, std::string> extra;
  for (const auto& [name, value] : environment.items()) {
    extra[name] = value.is_string() ? value.get<std::string>() : common::json_text(value);
  }
  request.commands.push_back(
      {check.id, entry.value("command", ""), std::move(extra), timeout_of(check)});
}

void request_libraries(const Check& check, facts::ProbeRequest& request) {
  for (const char* key : {"present", "absent"}) {
    for (const auto& name : strings(check, key)) {
      request.add_library_name(name);
    }
  }
}

void request_files(const Check& check, facts::ProbeRequest& request) {
  for (const char* key : {"exist", "absent"}) {
    for (const auto& pattern : strings(check, key)) {
      request.add_path_pattern(pattern);
    }
  }
}

void request_device_nodes(const Check& check, facts::ProbeRequest& request) {
  request.add_device_glob(check.params.value("glob", ""));
}

void request_tools(const Check& check, facts::ProbeRequest& request) {
  for (const auto& name : strings(check, "on_path")) {
    request.add_tool(name);
  }
}

}  // namespace envcontract::contracts::kinds
