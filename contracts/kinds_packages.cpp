// Check kinds about the Python side of an env: interpreter, distributions, modules.
#include "contracts/kinds.hpp"

#include <algorithm>
#include <set>

#include "common/python_names.hpp"
#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {

using namespace kind_helpers;

PythonParams parse_python(MappingReader& reader, const KindContext&) {
  PythonParams params;
  read_specifier(reader, "version", params.version, Need::required, BareVersion::prefix);
  return params;
}

DistributionsParams parse_distributions(MappingReader& reader, const KindContext&) {
  DistributionsParams params;
  require_one_of(reader, {"pins", "absent"});
  std::set<std::string> pinned;
  for (const auto& pin :
       read_named_values(reader, "pins", is_distribution_name, "a distribution name",
                         "distribution names to version specifiers")) {
    const auto parsed = parse_version_specifier(pin.value, BareVersion::exact);
    if (!parsed) {
      reader.ctx().error(pin.value_node,
                         "pin of '" + pin.name + "' in " + reader.what() + ": " + parsed.error());
      continue;
    }
    // Flag_Gems and flag-gems are one distribution: two pins would contradict.
    const std::string normalized = common::normalize_distribution_name(pin.name);
    if (!pinned.insert(normalized).second) {
      reader.ctx().error(pin.name_node, "'" + pin.name + "' is pinned twice in " + reader.what() +
                                            " (as " + normalized +
                                            ", names are compared normalised)");
      continue;
    }
    params.pins.emplace_back(normalized, parsed.value());
  }
  read_names(reader, "absent", params.absent, is_distribution_name, "a distribution name");
  for (auto& name : params.absent) {
    name = common::normalize_distribution_name(name);
    if (pinned.contains(name)) {
      reader.ctx().error(*reader.get("absent"),
                         "'" + name + "' is both pinned and required absent in " + reader.what());
    }
  }
  return params;
}

ModulesParams parse_modules(MappingReader& reader, const KindContext&) {
  ModulesParams params;
  require_one_of(reader, {"present", "absent"});
  read_names(reader, "present", params.present, is_module_name, "a Python module name");
  read_names(reader, "absent", params.absent, is_module_name, "a Python module name");
  for (const auto& name : params.present) {
    if (std::find(params.absent.begin(), params.absent.end(), name) != params.absent.end()) {
      reader.ctx().error(*reader.get("absent"),
                         "module '" + name + "' is both present and absent in " + reader.what());
    }
  }
  return params;
}

ImportsParams parse_imports(MappingReader& reader, const KindContext&) {
  ImportsParams params;
  if (read_names(reader, "modules", params.modules, is_module_name, "a Python module name",
                 Need::required) &&
      params.modules.empty()) {
    reader.ctx().error(*reader.get("modules"), "'modules' of " + reader.what() + " is empty");
  }
  // Order matters: torch_fl must be imported before flag_gems or triton.
  params.ordered = reader.boolean("ordered").value_or(true);
  read_timeout(reader, params.timeout);
  return params;
}

}  // namespace envcontract::contracts::kinds
