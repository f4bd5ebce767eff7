// libFuzzer target: any bytes as the probe program's result file, which env
// code can write into.
#include <cstddef>
#include <cstdint>
#include <string>

#include "probes/probe_report.hpp"
#include "probes/small_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto report = envcontract::probes::parse_probe_report(text);
  for (const auto& record : report.records) {
    for (const char* key : {"type", "module", "error", "value", "ok"}) {
      (void)envcontract::probes::text_field(record, key);
    }
  }
  return 0;
}
