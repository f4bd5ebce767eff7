#pragma once

#include "contracts/env_facts.hpp"
#include "contracts/judgement.hpp"

// The judges of the registry's kinds, grouped by theme in judges_*.cpp. Each
// fills `result` (status, expected, actual, diagnosis); check_kind.cpp wires
// them to their kinds.
namespace envcontract::contracts::judges {

void torch(const Check& check, const TorchParams& params, const EnvFactsView& facts,
           CheckResult& result);
void triton(const Check& check, const TritonParams& params, const EnvFactsView& facts,
            CheckResult& result);
void python(const Check& check, const PythonParams& params, const EnvFactsView& facts,
            CheckResult& result);
void distributions(const Check& check, const DistributionsParams& params, const EnvFactsView& facts,
                   CheckResult& result);
void modules(const Check& check, const ModulesParams& params, const EnvFactsView& facts,
             CheckResult& result);
void files(const Check& check, const FilesParams& params, const EnvFactsView& facts,
           CheckResult& result);
void linkage(const Check& check, const LinkageParams& params, const EnvFactsView& facts,
             CheckResult& result);
void environment(const Check& check, const EnvironmentParams& params, const EnvFactsView& facts,
                 CheckResult& result);
void search_path(const Check& check, const SearchPathParams& params, const EnvFactsView& facts,
                 CheckResult& result);
void imports(const Check& check, const ImportsParams& params, const EnvFactsView& facts,
             CheckResult& result);
void devices(const Check& check, const DevicesParams& params, const EnvFactsView& facts,
             CheckResult& result);
void smoke(const Check& check, const SmokeParams& params, const EnvFactsView& facts,
           CheckResult& result);
void command(const Check& check, const CommandParams& params, const EnvFactsView& facts,
             CheckResult& result);
void integration_test(const Check& check, const IntegrationTestParams& params,
                      const EnvFactsView& facts, CheckResult& result);
void libraries(const Check& check, const LibrariesParams& params, const EnvFactsView& facts,
               CheckResult& result);
void device_nodes(const Check& check, const DeviceNodesParams& params, const EnvFactsView& facts,
                  CheckResult& result);
void tools(const Check& check, const ToolsParams& params, const EnvFactsView& facts,
           CheckResult& result);
void glibc(const Check& check, const GlibcParams& params, const EnvFactsView& facts,
           CheckResult& result);

// Why torch did not import in the identity stage `identity`: the crash with
// its signal and stderr tail, the hang with its threads, or the import error
// explained from the linkage facts (a missing library, an ABI near miss).
// The check it belongs to fails for all but probe errors (CheckStatus in `status`).
Diagnosis torch_import_failure(const EnvFactsView& facts, const facts::StageResult& identity,
                               CheckStatus& status);

// Why the libraries under `directory` cannot load, from the linkage facts:
// a missing library, an ABI near miss, an undefined symbol, one per library.
std::vector<Diagnosis> linkage_problems_under(const EnvFactsView& facts,
                                              const std::string& directory);

// Helpers shared by the judges.
void fail(CheckResult& result, std::string cause, std::string summary, Json evidence,
          std::string remedy);
void pass(CheckResult& result);
// An `error` (probe_error): the facts this check needs were not gathered,
// e.g. `what` = "xpu-smi was not looked up in this env". Never a pass.
void not_gathered(CheckResult& result, const std::string& what);

}  // namespace envcontract::contracts::judges
