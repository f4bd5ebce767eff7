#pragma once

#include "contracts/check_kind.hpp"

// The parsers of the registry's kinds, one per kind, grouped by theme in
// kinds_*.cpp. Only check_kind.cpp, which builds the registry, calls them.
namespace envcontract::contracts::kinds {

TorchParams parse_torch(MappingReader& reader, const KindContext& context);
TritonParams parse_triton(MappingReader& reader, const KindContext& context);

PythonParams parse_python(MappingReader& reader, const KindContext& context);
DistributionsParams parse_distributions(MappingReader& reader, const KindContext& context);
ModulesParams parse_modules(MappingReader& reader, const KindContext& context);
ImportsParams parse_imports(MappingReader& reader, const KindContext& context);

FilesParams parse_files(MappingReader& reader, const KindContext& context);
LibrariesParams parse_libraries(MappingReader& reader, const KindContext& context);
LinkageParams parse_linkage(MappingReader& reader, const KindContext& context);
DeviceNodesParams parse_device_nodes(MappingReader& reader, const KindContext& context);

EnvironmentParams parse_environment(MappingReader& reader, const KindContext& context);
SearchPathParams parse_search_path(MappingReader& reader, const KindContext& context);
ToolsParams parse_tools(MappingReader& reader, const KindContext& context);
GlibcParams parse_glibc(MappingReader& reader, const KindContext& context);

DevicesParams parse_devices(MappingReader& reader, const KindContext& context);
SmokeParams parse_smoke(MappingReader& reader, const KindContext& context);
CommandParams parse_command(MappingReader& reader, const KindContext& context);
IntegrationTestParams parse_integration_test(MappingReader& reader, const KindContext& context);

// What a kind asks probes to gather (kind_requests.cpp); kinds that read
// only what every scan gathers have none.
void request_imports(const Check& check, const ImportsParams& params, facts::ProbeRequest& request);
void request_torch(const Check& check, const TorchParams& params, facts::ProbeRequest& request);
void request_devices(const Check& check, const DevicesParams& params, facts::ProbeRequest& request);
void request_smoke(const Check& check, const SmokeParams& params, facts::ProbeRequest& request);
void request_command(const Check& check, const CommandParams& params, facts::ProbeRequest& request);
void request_integration_test(const Check& check, const IntegrationTestParams& params,
                              facts::ProbeRequest& request);
void request_libraries(const Check& check, const LibrariesParams& params,
                       facts::ProbeRequest& request);
void request_files(const Check& check, const FilesParams& params, facts::ProbeRequest& request);
void request_device_nodes(const Check& check, const DeviceNodesParams& params,
                          facts::ProbeRequest& request);
void request_tools(const Check& check, const ToolsParams& params, facts::ProbeRequest& request);

}  // namespace envcontract::contracts::kinds
