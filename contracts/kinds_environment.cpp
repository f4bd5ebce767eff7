// Check kinds about what an activated env looks like from the outside:
// variables, search paths, tools on PATH, the C library.
#include "contracts/kinds.hpp"

#include <regex>
#include <set>

#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {
namespace {

using namespace kind_helpers;

// Directories may start at the env ("{prefix}/lib", "{site}/torch_fl/lib") or at a
// variable of the activated env ("${ASCEND_HOME}/lib64").
bool is_search_dir(std::string_view text) {
  static const std::regex pattern(R"((/|\{prefix\}|\{site\}|\$\{[A-Za-z_][A-Za-z0-9_]*\})[^:]*)");
  return std::regex_match(text.begin(), text.end(), pattern);
}

bool is_tool_name(std::string_view text) {
  return is_file_name(text);
}

void read_activation(MappingReader& reader, ActivationMode& mode) {
  const auto activation = reader.string("activation");
  if (!activation) {
    return;
  }
  if (*activation == "activated") {
    mode = ActivationMode::activated;
  } else if (*activation == "bare") {
    mode = ActivationMode::bare;
  } else {
    reader.ctx().error(*reader.get("activation"),
                       "'activation' of " + reader.what() +
                           " must be 'activated' (as after conda activate) or 'bare', got '" +
                           *activation + "'");
  }
}

}  // namespace

EnvironmentParams parse_environment(MappingReader& reader, const KindContext&) {
  EnvironmentParams params;
  require_one_of(reader, {"equals", "set", "unset"});
  read_activation(reader, params.activation);
  std::set<std::string> constrained;
  for (const auto& entry : read_named_values(reader, "equals", is_environment_variable_name,
                                             "a variable name", "variable names to values")) {
    params.equals.emplace_back(entry.name, entry.value);
    constrained.insert(entry.name);
  }
  read_names(reader, "set", params.set, is_environment_variable_name, "a variable name");
  read_names(reader, "unset", params.unset, is_environment_variable_name, "a variable name");
  constrained.insert(params.set.begin(), params.set.end());
  for (const auto& name : params.unset) {
    if (constrained.contains(name)) {
      reader.ctx().error(*reader.get("unset"),
                         "variable " + name + " must be both set and unset in " + reader.what());
    }
  }
  return params;
}

SearchPathParams parse_search_path(MappingReader& reader, const KindContext&) {
  SearchPathParams params;
  const auto variable = reader.string("variable");
  if (variable) {
    if (is_environment_variable_name(*variable)) {
      params.variable = *variable;
    } else {
      reader.ctx().error(
          *reader.get("variable"),
          "'variable' of " + reader.what() + " is not a variable name: '" + *variable + "'");
    }
  }
  read_activation(reader, params.activation);
  require_one_of(reader, {"starts_with", "must_not_contain"});
  read_names(reader, "starts_with", params.starts_with, is_search_dir,
             "an absolute directory (or one starting {prefix}, {site} or ${VARIABLE})");
  read_names(reader, "must_not_contain", params.must_not_contain, is_search_dir,
             "an absolute directory (or one starting {prefix}, {site} or ${VARIABLE})");
  return params;
}

ToolsParams parse_tools(MappingReader& reader, const KindContext&) {
  ToolsParams params;
  if (read_names(reader, "on_path", params.on_path, is_tool_name,
                 "an executable name such as 'xpu-smi'", Need::required) &&
      params.on_path.empty()) {
    reader.ctx().error(*reader.get("on_path"), "'on_path' of " + reader.what() + " is empty");
  }
  return params;
}

GlibcParams parse_glibc(MappingReader& reader, const KindContext&) {
  GlibcParams params;
  const auto version = reader.string("min_version", Need::required);
  if (!version) {
    return params;
  }
  if (!is_release_version(*version) || version->find('.') == std::string::npos) {
    reader.ctx().error(*reader.get("min_version"), "'min_version' of " + reader.what() +
                                                       " must be a glibc version such as "
                                                       "'2.38', got '" +
                                                       *version + "'");
    return params;
  }
  params.min_version = *version;
  return params;
}

}  // namespace envcontract::contracts::kinds
