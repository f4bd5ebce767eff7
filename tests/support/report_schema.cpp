#include "tests/support/report_schema.hpp"

#include <filesystem>

#include "common/json_text.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

namespace envcontract::testing {

std::optional<std::string> report_schema_violations(const nlohmann::ordered_json& document) {
  return schema_violations(document, "report.schema.json");
}

std::optional<std::string> schema_violations(const nlohmann::ordered_json& document,
                                             const std::string& schema_in_docs) {
  // Debian's interpreter, where python3-jsonschema lives (not a pyenv one).
  const std::string python = "/usr/bin/python3";
  if (!std::filesystem::exists(python) ||
      run_command({python, "-c", "import jsonschema"}).exit_code != 0) {
    return std::nullopt;
  }
  TempDir dir;
  const auto file = dir.write("report.json", common::json_text(document, 2));
  const auto result =
      run_command({python, ENVCONTRACT_SOURCE_DIR "/tests/support/validate_json.py",
                   std::string(ENVCONTRACT_SOURCE_DIR "/docs/") + schema_in_docs, file.string()});
  if (result.exit_code != 0 && result.out.empty()) {
    return "validator failed: " + result.err;
  }
  return result.out;
}

}  // namespace envcontract::testing
