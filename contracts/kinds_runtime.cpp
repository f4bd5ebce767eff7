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

void read_code(MappingReader& reader, std::string_view key, Json& params) {
  const auto code = reader.string(key, Need::required);
  if (!code) {
    return;
  }
  if (code->find_first_not_of(" \t\r\n") == std::string::npos) {
    reader.ctx().error(*reader.get(key),
                       "'" + std::string(key) + "' of " + reader.what() + " is empty");
    return;
  }
  params[std::string(key)] = *code;
}

}  // namespace

void parse_devices(MappingReader& reader, Json& params, const KindContext&) {
  read_code(reader, "expression", params);
  if (reader.has("imports")) {
    read_names(reader, "imports", params, is_module_name, "a Python module name");
  } else {
    const std::string module = leading_module(params.value("expression", ""));
    params["imports"] = module.empty() ? Json::array() : Json::array({module});
  }
  read_count(reader, "count", params, Need::optional, "> 0");
  read_timeout(reader, params, std::chrono::seconds(60));
}

void parse_smoke(MappingReader& reader, Json& params, const KindContext&) {
  read_code(reader, "code", params);
  read_regex(reader, "expect_output", params);
  read_timeout(reader, params, std::chrono::seconds(120));
}

void parse_command(MappingReader& reader, Json& params, const KindContext&) {
  read_code(reader, "run", params);
  params["expect_exit"] = reader.integer("expect_exit", Need::optional, 0, 255).value_or(0);
  read_regex(reader, "expect_output", params);
  read_timeout(reader, params, std::chrono::minutes(5));
}

void parse_integration_test(MappingReader& reader, Json& params, const KindContext& context) {
  const auto from = reader.string("from", Need::required);
  const auto test = reader.string("test", Need::required);
  read_timeout(reader, params, k_integration_test_timeout);
  if (!from || !test) {
    return;
  }
  const std::filesystem::path path = context.contract_dir / *from;
  auto entry = find_integration_entry(path, *test, *reader.get("test"), reader.ctx());
  if (entry) {
    params = integration_check_params(*from, *test, std::move(*entry), params["timeout_ms"]);
  }
}

}  // namespace envcontract::contracts::kinds
