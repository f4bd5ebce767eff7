// libFuzzer target: any bytes as the probe program's result file, which env
// code can write into. Its records are typed where they are read, and their
// JSON form is what reports and the facts verb print.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json_text.hpp"
#include "probes/probe_report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto report = envcontract::probes::parse_probe_report(text);
  for (const auto& record : report.records) {
    (void)envcontract::common::json_text(envcontract::facts::to_json(record));
  }
  return 0;
}
