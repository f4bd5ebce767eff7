#include "contracts/check_kind.hpp"

#include "contracts/kinds.hpp"

namespace envcontract::contracts {

const std::vector<CheckKind>& check_kinds() {
  using S = ProbeStage;
  static const std::vector<CheckKind> k_kinds = {
      {"torch", S::static_files,
       "torch build identity: version, base, local segment, CUDA/HIP, where torch resolves",
       kinds::parse_torch, kinds::request_torch, judges::torch},
      {"triton", S::static_files, "which distribution provides triton, its version and backends",
       kinds::parse_triton, nullptr, judges::triton},
      {"python", S::static_files, "the interpreter's version", kinds::parse_python, nullptr,
       judges::python},
      {"distributions", S::static_files, "installed distributions match pins or are absent",
       kinds::parse_distributions, nullptr, judges::distributions},
      {"modules", S::static_files, "modules present or absent, found without importing them",
       kinds::parse_modules, nullptr, judges::modules},
      {"imports", S::imports, "modules import successfully, in the given order",
       kinds::parse_imports, kinds::request_imports, judges::imports},
      {"files", S::static_files, "files that must exist or must not", kinds::parse_files,
       kinds::request_files, judges::files},
      {"libraries", S::static_files, "shared libraries the env's loader path must (not) resolve",
       kinds::parse_libraries, kinds::request_libraries, judges::libraries},
      {"linkage", S::static_files, "libraries a shared library must (not) need",
       kinds::parse_linkage, nullptr, judges::linkage},
      {"device_nodes", S::static_files, "device nodes matching a glob, with a count",
       kinds::parse_device_nodes, kinds::request_device_nodes, judges::device_nodes},
      {"environment", S::static_files, "variables after activation: equal, set or unset",
       kinds::parse_environment, nullptr, judges::environment},
      {"search_path", S::static_files,
       "a search path variable starts with given dirs, avoids given roots",
       kinds::parse_search_path, nullptr, judges::search_path},
      {"tools", S::static_files, "executables found on the activated PATH", kinds::parse_tools,
       kinds::request_tools, judges::tools},
      {"glibc", S::static_files, "minimum C library version", kinds::parse_glibc, nullptr,
       judges::glibc},
      {"devices", S::devices, "device count from a Python expression", kinds::parse_devices,
       kinds::request_devices, judges::devices},
      {"smoke", S::smoke, "a Python snippet that must finish in time", kinds::parse_smoke,
       kinds::request_smoke, judges::smoke},
      {"command", S::smoke, "a shell command with expected exit code and output",
       kinds::parse_command, kinds::request_command, judges::command},
      {"integration_test", S::smoke, "a platform config's preflight integration test",
       kinds::parse_integration_test, kinds::request_integration_test, judges::integration_test},
  };
  return k_kinds;
}

const CheckKind* find_check_kind(std::string_view name) {
  for (const auto& kind : check_kinds()) {
    if (kind.name == name) {
      return &kind;
    }
  }
  return nullptr;
}

facts::ProbeRequest probe_request(const std::vector<Check>& checks) {
  facts::ProbeRequest request;
  for (const auto& check : checks) {
    const CheckKind* kind = find_check_kind(check.kind);
    if (kind != nullptr && kind->request != nullptr) {
      kind->request(check, request);
    }
  }
  return request;
}

std::vector<std::string> check_kind_names() {
  std::vector<std::string> names;
  for (const auto& kind : check_kinds()) {
    names.emplace_back(kind.name);
  }
  return names;
}

}  // namespace envcontract::contracts
