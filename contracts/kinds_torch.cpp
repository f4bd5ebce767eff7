// Check kinds about the torch and triton builds an env carries.
#include "contracts/kinds.hpp"

#include "common/python_names.hpp"
#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {
namespace {

using namespace kind_helpers;

// "none" | "required" | "any" | "<exact version>"; YAML null means none, as in
// the environment-check form's `cuda_version: null`.
void read_toolkit_rule(MappingReader& reader, std::string_view key, Json& params) {
  const auto node = reader.get(key);
  if (!node) {
    return;
  }
  const std::string what = "'" + std::string(key) + "' of " + reader.what();
  if (node->IsNull()) {
    params[std::string(key)] = {{"mode", "none"}};
    return;
  }
  const auto text = read_string(*node, what, reader.ctx());
  if (!text) {
    return;
  }
  if (*text == "none" || *text == "required" || *text == "any") {
    params[std::string(key)] = {{"mode", *text}};
  } else if (is_release_version(*text)) {
    params[std::string(key)] = {{"mode", "exact"}, {"value", *text}};
  } else {
    reader.ctx().error(*node, what +
                                  " must be none, required, any or a version such as '12.9', "
                                  "got '" +
                                  *text + "'");
  }
}

void read_release(MappingReader& reader, std::string_view key, Json& params,
                  bool (*is_valid)(std::string_view), std::string_view example) {
  const auto text = reader.string(key);
  if (!text) {
    return;
  }
  if (!is_valid(*text)) {
    reader.ctx().error(*reader.get(key), "'" + std::string(key) + "' of " + reader.what() +
                                             " must be a version such as '" + std::string(example) +
                                             "', got '" + *text + "'");
    return;
  }
  params[std::string(key)] = *text;
}

bool is_local_segment(std::string_view text) {
  return !text.empty() && is_pep440_version("0+" + std::string(text));
}

// A contract that can never pass is a contract bug: say so at load time.
void reject_contradictions(MappingReader& reader, const Json& params) {
  const std::string version = params.value("version", "");
  if (!version.empty()) {
    const std::string base = params.value("base", "");
    if (!base.empty() && version != base && !version.starts_with(base + "+")) {
      reader.ctx().error(*reader.get("base"), "'base' " + base + " contradicts 'version' " +
                                                  version + " of " + reader.what());
    }
    const std::string local = params.value("local", "");
    const auto plus = version.find('+');
    const std::string version_local = plus == std::string::npos ? "" : version.substr(plus + 1);
    if (!local.empty() && local != version_local) {
      reader.ctx().error(*reader.get("local"), "'local' " + local + " contradicts 'version' " +
                                                   version + " of " + reader.what());
    }
  }
  if (params.value("local", "") == "cpu" && params.contains("cuda")) {
    const std::string mode = params["cuda"]["mode"];
    if (mode == "required" || mode == "exact") {
      reader.ctx().error(*reader.get("cuda"), "a '+cpu' torch build has no CUDA, so 'cuda: " +
                                                  params["cuda"].value("value", mode) + "' of " +
                                                  reader.what() + " can never pass");
    }
  }
  for (const auto& forbidden : params["forbidden_paths"]) {
    for (const auto& required : params["required_paths"]) {
      if (std::string(required).starts_with(std::string(forbidden))) {
        reader.ctx().error(*reader.get("required_paths"),
                           "required path " + std::string(required) + " lies under forbidden " +
                               std::string(forbidden) + " in " + reader.what());
      }
    }
  }
}

bool is_absolute_path(std::string_view text) {
  return text.starts_with("/");
}

}  // namespace

void parse_torch(MappingReader& reader, Json& params, const KindContext&) {
  require_one_of(reader,
                 {"version", "base", "local", "cuda", "hip", "forbidden_paths", "required_paths"});
  read_release(reader, "version", params, is_pep440_version, "2.10.0+cpu");
  read_release(reader, "base", params, is_release_version, "2.10.0");
  read_release(reader, "local", params, is_local_segment, "cpu");
  read_toolkit_rule(reader, "cuda", params);
  read_toolkit_rule(reader, "hip", params);
  read_names(reader, "forbidden_paths", params, is_absolute_path, "an absolute path prefix");
  read_names(reader, "required_paths", params, is_absolute_path, "an absolute path prefix");
  read_names(reader, "after_import", params, is_module_name, "a Python module name");
  reject_contradictions(reader, params);
}

void parse_triton(MappingReader& reader, Json& params, const KindContext&) {
  require_one_of(reader, {"provider", "provider_version", "version_prefix", "backends"});
  const auto provider = reader.string("provider");
  if (provider) {
    if (is_distribution_name(*provider)) {
      params["provider"] = common::normalize_distribution_name(*provider);
    } else {
      reader.ctx().error(*reader.get("provider"), "'provider' of " + reader.what() +
                                                      " must be a distribution name such as "
                                                      "'flagtree', got '" +
                                                      *provider + "'");
    }
  }
  read_specifier(reader, "provider_version", params, Need::optional, BareVersion::exact);
  read_text(reader, "version_prefix", params, Need::optional);
  read_names(reader, "backends", params, is_module_name, "a triton backend name such as 'xpu'");
  // Stock triton and a vendor FlagTree both install a `triton` package; when a
  // vendor provides it, the stock distribution must be gone.
  const bool vendor = params.contains("provider") && params["provider"] != "triton";
  if (reader.has("forbid_distributions")) {
    read_names(reader, "forbid_distributions", params, is_distribution_name, "a distribution name");
  } else {
    params["forbid_distributions"] = vendor ? Json::array({"triton"}) : Json::array();
  }
  if (params.contains("provider_version") && !params.contains("provider")) {
    reader.ctx().error(*reader.get("provider_version"),
                       "'provider_version' of " + reader.what() +
                           " needs 'provider': which distribution's version is pinned?");
  }
}

}  // namespace envcontract::contracts::kinds
