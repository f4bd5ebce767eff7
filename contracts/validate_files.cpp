#include "contracts/validate_files.hpp"

#include <ostream>

#include "common/json_text.hpp"
#include "contracts/contract_loader.hpp"

namespace envcontract::contracts {

int validate_files(const std::vector<std::filesystem::path>& files, ValidateOutput output,
                   std::ostream& out, std::ostream& err) {
  int exit_code = 0;
  for (const auto& file : files) {
    const auto result = load_contract_file(file);
    for (const auto& diagnostic : result.diagnostics.sorted()) {
      err << diagnostic.to_string() << "\n";
    }
    if (!result.contract) {
      err << file.string() << ": invalid (" << result.diagnostics.error_count()
          << (result.diagnostics.error_count() == 1 ? " error" : " errors") << ")\n";
      exit_code = 1;
      continue;
    }
    if (output == ValidateOutput::normalized_json) {
      out << common::json_text(contracts::to_json(*result.contract), 2) << "\n";
    } else {
      out << file.string() << ": ok\n";
    }
  }
  return exit_code;
}

}  // namespace envcontract::contracts
