// Check kinds that run code in the env: device counts, smoke snippets, commands.
#include "contracts/kinds.hpp"

#include <cctype>

#include "contracts/integration_tests.hpp"
#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {
namespace {

using namespace kind_helpers;

// "torch_fl.flagos.device_count()" -> "torch_fl": what to import by default.
std::string leading_module(const std::string& expression) {
  std::size_t end = 0;
  while (end < expression.size() &&
         (std::isalnum(static_cast<unsigned char>(expression[end])) || expression[end] == '_')) {
    ++end;
  }
  const std::string name = expression.substr(0, end);
  return is_module_name(name) && end < expression.size() && expression[end] == '.' ? name : "";
}

void read_code(MappingReader& reader, std::string_view key, std::string& code) {
  const auto text = reader.string(key, Need::required);
  if (!text) {
    return;
  }
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
    reader.ctx().error(*reader.get(key),
                       "'" + std::string(key) + "' of " + reader.what() + " is empty");
    return;
  }
  code = *text;
}

}  // namespace

DevicesParams parse_devices(MappingReader& reader, const KindContext&) {
  DevicesParams params;
  read_code(reader, "expression", params.expression);
  if (reader.has("imports")) {
    read_names(reader, "imports", params.imports, is_module_name, "a Python module name");
  } else if (const std::string module = leading_module(params.expression); !module.empty()) {
    params.imports = {module};
  }
  read_count(reader, "count", params.count, Need::optional);
  read_timeout(reader, params.timeout);
  return params;
}

SmokeParams parse_smoke(MappingReader& reader, const KindContext&) {
  SmokeParams params;
  read_code(reader, "code", params.code);
  read_regex(reader, "expect_output", params.expect_output);
  read_timeout(reader, params.timeout);
  return params;
}

CommandParams parse_command(MappingReader& reader, const KindContext&) {
  CommandParams params;
  read_code(reader, "run", params.run);
  params.expect_exit =
      static_cast<int>(reader.integer("expect_exit", Need::optional, 0, 255).value_or(0));
  read_regex(reader, "expect_output", params.expect_output);
  read_timeout(reader, params.timeout);
  return params;
}

IntegrationTestParams parse_integration_test(MappingReader& reader, const KindContext& context) {
  IntegrationTestParams params;
  const auto from = reader.string("from", Need::required);
  const auto test = reader.string("test", Need::required);
  read_timeout(reader, params.timeout);
  if (const auto workdir = reader.string("workdir")) {
    // The checkout the CI runner would run in, relative to the contract.
    const auto path = (context.contract_dir / *workdir).lexically_normal();
    std::error_code error;
    if (!std::filesystem::is_directory(path, error)) {
      reader.ctx().error(*reader.get("workdir"),
                         "workdir " + path.string() +
                             " is not a directory: name a checkout of the repository whose "
                             "config this is");
    }
    params.workdir = path.string();
  }
  if (!from || !test) {
    return params;
  }
  const std::filesystem::path path = context.contract_dir / *from;
  if (auto entry = find_integration_entry(path, *test, *reader.get("test"), reader.ctx())) {
    params.from = *from;
    params.test = *test;
    params.entry = std::move(*entry);
  }
  return params;
}

}  // namespace envcontract::contracts::kinds
