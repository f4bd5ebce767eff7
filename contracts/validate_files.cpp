#include "contracts/validate_files.hpp"

#include <algorithm>
#include <ostream>

#include "common/json_text.hpp"
#include "common/printable.hpp"
#include "contracts/contract_loader.hpp"

namespace envcontract::contracts {

std::vector<std::filesystem::path> contract_files(const std::vector<std::filesystem::path>& paths,
                                                  std::ostream& err, int& exit_code) {
  std::vector<std::filesystem::path> files;
  for (const auto& path : paths) {
    std::error_code error;
    if (!std::filesystem::is_directory(path, error)) {
      files.push_back(path);
      continue;
    }
    // A directory stands for its contracts and CI configs, in name order.
    std::vector<std::filesystem::path> found;
    for (std::filesystem::directory_iterator entry(path, error), end; !error && entry != end;
         entry.increment(error)) {
      const auto extension = entry->path().extension();
      if ((extension == ".yaml" || extension == ".yml") && entry->is_regular_file(error)) {
        found.push_back(entry->path());
      }
    }
    if (error || found.empty()) {
      err << common::printable(path.string()) << ": "
          << (error ? "cannot read the directory: " + error.message()
                    : std::string("holds no .yaml or .yml file"))
          << "\n";
      exit_code = 1;
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

int validate_files(const std::vector<std::filesystem::path>& paths, ValidateOutput output,
                   std::ostream& out, std::ostream& err) {
  int exit_code = 0;
  std::error_code error;
  if (output == ValidateOutput::normalized_json && paths.size() == 1 &&
      std::filesystem::is_directory(paths.front(), error)) {
    err << common::printable(paths.front().string())
        << ": --print shows one contract: name a file, not a directory\n";
    return 2;
  }
  for (const auto& file : contract_files(paths, err, exit_code)) {
    const auto result = load_contract_file(file);
    // Contracts come from checkouts anyone may write: what they say (keys,
    // values quoted in messages) never drives the terminal.
    for (const auto& diagnostic : result.diagnostics.sorted()) {
      err << common::printable(diagnostic.to_string()) << "\n";
    }
    if (!result.contract) {
      err << common::printable(file.string()) << ": invalid (" << result.diagnostics.error_count()
          << (result.diagnostics.error_count() == 1 ? " error" : " errors") << ")\n";
      exit_code = 1;
      continue;
    }
    if (output == ValidateOutput::normalized_json) {
      out << common::json_text(contracts::to_json(*result.contract), 2) << "\n";
    } else {
      out << common::printable(file.string()) << ": ok\n";
    }
  }
  return exit_code;
}

}  // namespace envcontract::contracts
