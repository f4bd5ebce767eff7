#include "contracts/check_kind.hpp"

#include <type_traits>

#include "contracts/kinds.hpp"

namespace envcontract::contracts {

namespace {

template <typename T>
using Exactly = std::type_identity_t<T>;  // not deduced: nullptr stays allowed

// A registry entry whose parser, request and judge all work on `Params`: the
// compiler holds them to the same type, so a judge never meets another
// kind's parameters.
template <typename Params>
CheckKind make_kind(std::string_view name, ProbeStage stage, std::string_view summary,
                    Params (*parse)(MappingReader&, const KindContext&),
                    void (*request)(const Check&, const Exactly<Params>&, facts::ProbeRequest&),
                    void (*judge)(const Check&, const Exactly<Params>&, const EnvFactsView&,
                                  CheckResult&),
                    KindTraits traits = {}) {
  CheckKind kind{name, stage, summary, {}, {}, {}, traits};
  kind.parse = [parse](MappingReader& reader, const KindContext& context) -> CheckParams {
    return parse(reader, context);
  };
  if (request != nullptr) {
    kind.request = [request](const Check& check, facts::ProbeRequest& probe_request) {
      request(check, check.parameters<Params>(), probe_request);
    };
  }
  kind.judge = [judge](const Check& check, const EnvFactsView& facts, CheckResult& result) {
    judge(check, check.parameters<Params>(), facts, result);
  };
  return kind;
}

}  // namespace

const std::vector<CheckKind>& check_kinds() {
  using S = ProbeStage;
  using namespace kinds;
  static const std::vector<CheckKind> k_kinds = {
      make_kind("torch", S::static_files,
                "torch build identity: version, base, local segment, CUDA/HIP, where torch "
                "resolves",
                parse_torch, request_torch, judges::torch,
                {.plan_package = KindTraits::PlanPackage::torch}),
      make_kind("triton", S::static_files,
                "which distribution provides triton, its version and backends", parse_triton,
                nullptr, judges::triton, {.plan_package = KindTraits::PlanPackage::triton}),
      make_kind("python", S::static_files, "the interpreter's version", parse_python, nullptr,
                judges::python, {.plan_package = KindTraits::PlanPackage::interpreter}),
      make_kind("distributions", S::static_files,
                "installed distributions match pins or are absent", parse_distributions, nullptr,
                judges::distributions),
      make_kind("modules", S::static_files,
                "modules present or absent, found without importing them", parse_modules, nullptr,
                judges::modules),
      make_kind("imports", S::imports, "modules import successfully, in the given order",
                parse_imports, request_imports, judges::imports, {.is_import = true}),
      make_kind("files", S::static_files, "files that must exist or must not", parse_files,
                request_files, judges::files),
      make_kind("libraries", S::static_files,
                "shared libraries the env's loader path must (not) resolve", parse_libraries,
                request_libraries, judges::libraries, {.reads_activation = true}),
      make_kind("linkage", S::static_files, "libraries a shared library must (not) need",
                parse_linkage, nullptr, judges::linkage),
      make_kind("device_nodes", S::static_files, "device nodes matching a glob, with a count",
                parse_device_nodes, request_device_nodes, judges::device_nodes),
      make_kind("environment", S::static_files, "variables after activation: equal, set or unset",
                parse_environment, nullptr, judges::environment, {.reads_activation = true}),
      make_kind("search_path", S::static_files,
                "a search path variable starts with given dirs, avoids given roots",
                parse_search_path, nullptr, judges::search_path, {.reads_activation = true}),
      make_kind("tools", S::static_files, "executables found on the activated PATH", parse_tools,
                request_tools, judges::tools, {.reads_activation = true}),
      make_kind("glibc", S::static_files, "minimum C library version", parse_glibc, nullptr,
                judges::glibc),
      make_kind("devices", S::devices, "device count from a Python expression", parse_devices,
                request_devices, judges::devices, {.repeats_import_failure = true}),
      make_kind("smoke", S::smoke, "a Python snippet that must finish in time", parse_smoke,
                request_smoke, judges::smoke, {.repeats_import_failure = true}),
      make_kind("command", S::smoke, "a shell command with expected exit code and output",
                parse_command, request_command, judges::command),
      make_kind("integration_test", S::smoke, "a platform config's preflight integration test",
                parse_integration_test, request_integration_test, judges::integration_test),
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

const KindTraits& kind_traits(std::string_view name) {
  static const KindTraits k_unknown;
  const auto* kind = find_check_kind(name);
  return kind != nullptr ? kind->traits : k_unknown;
}

bool runs_env_code(const CheckKind& kind) {
  return kind.stage != ProbeStage::static_files || kind.traits.reads_activation;
}

facts::ProbeRequest probe_request(const std::vector<Check>& checks) {
  facts::ProbeRequest request;
  for (const auto& check : checks) {
    const CheckKind* kind = find_check_kind(check.kind);
    if (kind != nullptr && kind->request) {
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
