#pragma once

#include "contracts/check_kind.hpp"

// The parsers of the registry's kinds, one per kind, grouped by theme in
// kinds_*.cpp. Only check_kind.cpp, which builds the registry, calls them.
namespace envcontract::contracts::kinds {

void parse_torch(MappingReader& reader, Json& params, const KindContext& context);
void parse_triton(MappingReader& reader, Json& params, const KindContext& context);

void parse_python(MappingReader& reader, Json& params, const KindContext& context);
void parse_distributions(MappingReader& reader, Json& params, const KindContext& context);
void parse_modules(MappingReader& reader, Json& params, const KindContext& context);
void parse_imports(MappingReader& reader, Json& params, const KindContext& context);

void parse_files(MappingReader& reader, Json& params, const KindContext& context);
void parse_libraries(MappingReader& reader, Json& params, const KindContext& context);
void parse_linkage(MappingReader& reader, Json& params, const KindContext& context);
void parse_device_nodes(MappingReader& reader, Json& params, const KindContext& context);

void parse_environment(MappingReader& reader, Json& params, const KindContext& context);
void parse_search_path(MappingReader& reader, Json& params, const KindContext& context);
void parse_tools(MappingReader& reader, Json& params, const KindContext& context);
void parse_glibc(MappingReader& reader, Json& params, const KindContext& context);

void parse_devices(MappingReader& reader, Json& params, const KindContext& context);
void parse_smoke(MappingReader& reader, Json& params, const KindContext& context);
void parse_command(MappingReader& reader, Json& params, const KindContext& context);
void parse_integration_test(MappingReader& reader, Json& params, const KindContext& context);

// What a kind asks probes to gather (kind_requests.cpp); kinds that read
// only what every scan gathers have none.
void request_imports(const Check& check, facts::ProbeRequest& request);
void request_torch(const Check& check, facts::ProbeRequest& request);
void request_devices(const Check& check, facts::ProbeRequest& request);
void request_smoke(const Check& check, facts::ProbeRequest& request);
void request_command(const Check& check, facts::ProbeRequest& request);
void request_integration_test(const Check& check, facts::ProbeRequest& request);
void request_libraries(const Check& check, facts::ProbeRequest& request);
void request_files(const Check& check, facts::ProbeRequest& request);
void request_device_nodes(const Check& check, facts::ProbeRequest& request);
void request_tools(const Check& check, facts::ProbeRequest& request);

}  // namespace envcontract::contracts::kinds
