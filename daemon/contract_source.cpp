#include "daemon/contract_source.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/sha256.hpp"
#include "common/shown_path.hpp"
#include "contracts/contract_loader.hpp"

namespace envcontract::daemon {

common::Result<ContractHandle> load_contract(const std::filesystem::path& path,
                                             const std::vector<std::string>& run_tests,
                                             const std::filesystem::path& checkout) {
  // Read once and judge those bytes: the hash always names the text in force,
  // even when the file is rewritten while we read it.
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return common::Error{common::shown_path(path) +
                         ": is a directory; name the contract's YAML file"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return common::Error{common::shown_path(path) +
                         ": cannot read the contract: " + std::strerror(errno)};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return common::Error{common::shown_path(path) +
                         ": cannot read the contract: " + std::strerror(errno)};
  }
  auto loaded = contracts::load_contract_text(text.str(), path, {run_tests, checkout});
  if (!loaded.contract) {
    std::string errors;
    for (const auto& diagnostic : loaded.diagnostics.sorted()) {
      errors += diagnostic.to_string() + "\n";
    }
    return common::Error{errors.empty() ? path.string() + ": invalid contract\n" : errors};
  }
  auto result = std::make_shared<LoadedContract>();
  result->identity = {loaded.contract->name, std::filesystem::absolute(path).string(),
                      common::sha256_hex(text.str()), loaded.contract->platform};
  result->contract = std::move(*loaded.contract);
  result->judged_sha256 = contracts::judged_sha256(result->contract);
  return ContractHandle(std::move(result));
}

}  // namespace envcontract::daemon
