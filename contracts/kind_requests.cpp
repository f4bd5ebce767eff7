// What each kind asks probes to gather in every env, beyond what every scan
// gathers: the registry's `request` column (check_kind.cpp). The agent builds
// its probe plan from these alone.
#include <algorithm>
#include <filesystem>

#include "contracts/integration_tests.hpp"
#include "contracts/kinds.hpp"

namespace envcontract::contracts::kinds {

void request_imports(const Check&, const ImportsParams& params, facts::ProbeRequest& request) {
  for (const auto& module : params.modules) {
    request.add_import(module);
  }
  request.imports_timeout = std::max(request.imports_timeout, params.timeout);
}

void request_torch(const Check&, const TorchParams& params, facts::ProbeRequest& request) {
  request.torch_identity = true;
  if (params.after_import.empty()) {
    return;
  }
  request.add_import("torch");
  for (const auto& module : params.after_import) {
    request.add_import(module);
  }
  request.torch_after_imports = true;
}

void request_devices(const Check& check, const DevicesParams& params,
                     facts::ProbeRequest& request) {
  request.devices.push_back({check.id, params.expression, params.imports, params.timeout});
}

void request_smoke(const Check& check, const SmokeParams& params, facts::ProbeRequest& request) {
  request.smokes.push_back({check.id, params.code, params.timeout});
}

void request_command(const Check& check, const CommandParams& params,
                     facts::ProbeRequest& request) {
  facts::ProbeRequest::Command command;
  command.id = check.id;
  command.run = params.run;
  command.timeout = params.timeout;
  request.commands.push_back(std::move(command));
}

void request_integration_test(const Check& check, const IntegrationTestParams& params,
                              facts::ProbeRequest& request) {
  // Without a checkout, a command that needs one is not run: its judge says so.
  if (!params.needs_checkout.empty() ||
      (params.workdir.empty() && !repository_paths(params.entry.command).empty())) {
    return;
  }
  facts::ProbeRequest::Command command;
  command.id = check.id;
  command.run = params.entry.command;
  command.timeout = params.timeout;
  command.ci_runner = true;
  command.layers.assign(params.entry.runner_environment.begin(),
                        params.entry.runner_environment.end());
  command.layers.insert(command.layers.end(), params.entry.environment.begin(),
                        params.entry.environment.end());
  command.workdir = params.workdir;
  // "ci/x.yml" and "./ci/x.yml" are one config, so one fail-fast group.
  command.group = std::filesystem::path(params.from).lexically_normal().string();
  command.fail_fast = runner_failure_policy(params.entry) == "fail-fast";
  request.commands.push_back(std::move(command));
}

void request_libraries(const Check&, const LibrariesParams& params, facts::ProbeRequest& request) {
  for (const auto* names : {&params.present, &params.absent}) {
    for (const auto& name : *names) {
      request.add_library_name(name);
    }
  }
}

void request_files(const Check&, const FilesParams& params, facts::ProbeRequest& request) {
  for (const auto* patterns : {&params.exist, &params.absent}) {
    for (const auto& pattern : *patterns) {
      request.add_path_pattern(pattern);
    }
  }
}

void request_device_nodes(const Check&, const DeviceNodesParams& params,
                          facts::ProbeRequest& request) {
  request.add_device_glob(params.glob);
}

void request_tools(const Check&, const ToolsParams& params, facts::ProbeRequest& request) {
  for (const auto& name : params.on_path) {
    request.add_tool(name);
  }
}

}  // namespace envcontract::contracts::kinds
