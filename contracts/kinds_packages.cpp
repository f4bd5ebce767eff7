// Check kinds about the Python side of an env: interpreter, distributions, modules.
#include "contracts/kinds.hpp"

#include <set>

#include "common/python_names.hpp"
#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {

using namespace kind_helpers;

void parse_python(MappingReader& reader, Json& params, const KindContext&) {
  read_specifier(reader, "version", params, Need::required, BareVersion::prefix);
}

void parse_distributions(MappingReader& reader, Json& params, const KindContext&) {
  require_one_of(reader, {"pins", "absent"});
  params["pins"] = Json::object();
  std::set<std::string> pinned;
  for (const auto& pin :
       read_named_values(reader, "pins", is_distribution_name, "a distribution name",
                         "distribution names to version specifiers")) {
    const auto parsed = parse_version_specifier(pin.value, BareVersion::exact);
    if (const auto* error = std::get_if<std::string>(&parsed)) {
      reader.ctx().error(pin.value_node,
                         "pin of '" + pin.name + "' in " + reader.what() + ": " + *error);
      continue;
    }
    const std::string normalized = common::normalize_distribution_name(pin.name);
    pinned.insert(normalized);
    params["pins"][normalized] = to_json(std::get<std::vector<VersionClause>>(parsed));
  }
  read_names(reader, "absent", params, is_distribution_name, "a distribution name");
  for (auto& name : params["absent"]) {
    name = common::normalize_distribution_name(name.get<std::string>());
    if (pinned.contains(name.get<std::string>())) {
      reader.ctx().error(*reader.get("absent"), "'" + name.get<std::string>() +
                                                    "' is both pinned and required absent in " +
                                                    reader.what());
    }
  }
}

void parse_modules(MappingReader& reader, Json& params, const KindContext&) {
  require_one_of(reader, {"present", "absent"});
  read_names(reader, "present", params, is_module_name, "a Python module name");
  read_names(reader, "absent", params, is_module_name, "a Python module name");
  for (const auto& name : params["present"]) {
    for (const auto& other : params["absent"]) {
      if (name == other) {
        reader.ctx().error(*reader.get("absent"), "module '" + name.get<std::string>() +
                                                      "' is both present and absent in " +
                                                      reader.what());
      }
    }
  }
}

void parse_imports(MappingReader& reader, Json& params, const KindContext&) {
  if (read_names(reader, "modules", params, is_module_name, "a Python module name",
                 Need::required) &&
      params["modules"].empty()) {
    reader.ctx().error(*reader.get("modules"), "'modules' of " + reader.what() + " is empty");
  }
  // Order matters: torch_fl must be imported before flag_gems or triton.
  params["ordered"] = reader.boolean("ordered").value_or(true);
  read_timeout(reader, params, std::chrono::seconds(60));
}

}  // namespace envcontract::contracts::kinds
