// Check kinds about the torch and triton builds an env carries.
#include <regex>

#include "contracts/kinds.hpp"

#include "common/python_names.hpp"
#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {
namespace {

using namespace kind_helpers;

// "none" | "required" | "any" | "<exact version>"; YAML null means none, as in
// the environment-check form's `cuda_version: null`.
void read_toolkit_rule(MappingReader& reader, std::string_view key,
                       std::optional<ToolkitRule>& rule) {
  const auto node = reader.get(key);
  if (!node) {
    return;
  }
  const std::string what = "'" + std::string(key) + "' of " + reader.what();
  if (node->IsNull()) {
    rule = ToolkitRule{ToolkitRule::Mode::none, ""};
    return;
  }
  const auto text = read_string(*node, what, reader.ctx());
  if (!text) {
    return;
  }
  if (*text == "none") {
    rule = ToolkitRule{ToolkitRule::Mode::none, ""};
  } else if (*text == "required") {
    rule = ToolkitRule{ToolkitRule::Mode::required, ""};
  } else if (*text == "any") {
    rule = ToolkitRule{ToolkitRule::Mode::any, ""};
  } else if (is_release_version(*text)) {
    rule = ToolkitRule{ToolkitRule::Mode::exact, *text};
  } else {
    reader.ctx().error(*node, what +
                                  " must be none, required, any or a version such as '12.9', "
                                  "got '" +
                                  *text + "'");
  }
}

void read_release(MappingReader& reader, std::string_view key, std::string& release,
                  bool (*is_valid)(std::string_view), std::string_view example) {
  const auto text = reader.string(key);
  if (!text) {
    return;
  }
  // YAML reads `base: 2.10` as the number 2.1, which no torch is: a version
  // written as a bare number is refused, with the way to write it.
  const auto node = *reader.get(key);
  static const std::regex bare_number(R"re([0-9]+(\.[0-9]+)?)re");
  if (node.Tag() == "?" && std::regex_match(*text, bare_number)) {
    reader.ctx().error(node, "'" + std::string(key) + "' of " + reader.what() + " is the number " +
                                 *text + " to YAML: quote versions, as in " + std::string(key) +
                                 ": \"" + *text + "\"");
    return;
  }
  if (!is_valid(*text)) {
    reader.ctx().error(*reader.get(key), "'" + std::string(key) + "' of " + reader.what() +
                                             " must be a version such as '" + std::string(example) +
                                             "', got '" + *text + "'");
    return;
  }
  release = *text;
}

// A PEP 440 version without a local segment: "2.10.0", Debian's "1.13.0a0",
// a nightly's "2.10.0.dev20251101".
bool is_public_version(std::string_view text) {
  return is_pep440_version(text) && text.find('+') == std::string_view::npos;
}

bool is_local_segment(std::string_view text) {
  return !text.empty() && is_pep440_version("0+" + std::string(text));
}

// A contract that can never pass is a contract bug: say so at load time.
void reject_contradictions(MappingReader& reader, const TorchParams& params) {
  if (params.local.starts_with("cu") && params.cuda &&
      params.cuda->mode == ToolkitRule::Mode::none) {
    reader.ctx().error(*reader.get("cuda"), "'local' " + params.local +
                                                " is a CUDA build, so 'cuda: none' of " +
                                                reader.what() + " can never pass");
  }
  if (!params.version.empty()) {
    if (!params.base.empty() && params.version != params.base &&
        !params.version.starts_with(params.base + "+")) {
      reader.ctx().error(*reader.get("base"), "'base' " + params.base + " contradicts 'version' " +
                                                  params.version + " of " + reader.what());
    }
    const auto plus = params.version.find('+');
    const std::string version_local =
        plus == std::string::npos ? "" : params.version.substr(plus + 1);
    if (!params.local.empty() && params.local != version_local) {
      reader.ctx().error(*reader.get("local"), "'local' " + params.local +
                                                   " contradicts 'version' " + params.version +
                                                   " of " + reader.what());
    }
  }
  if (params.local == "cpu" && params.cuda &&
      (params.cuda->mode == ToolkitRule::Mode::required ||
       params.cuda->mode == ToolkitRule::Mode::exact)) {
    const std::string wanted =
        params.cuda->mode == ToolkitRule::Mode::exact ? params.cuda->version : "required";
    reader.ctx().error(*reader.get("cuda"),
                       "a '+cpu' torch build has no CUDA, so 'cuda: " + wanted + "' of " +
                           reader.what() + " can never pass");
  }
  for (const auto& forbidden : params.forbidden_paths) {
    for (const auto& required : params.required_paths) {
      if (required.starts_with(forbidden)) {
        reader.ctx().error(*reader.get("required_paths"), "required path " + required +
                                                              " lies under forbidden " + forbidden +
                                                              " in " + reader.what());
      }
    }
  }
}

bool is_absolute_path(std::string_view text) {
  return text.starts_with("/");
}

}  // namespace

TorchParams parse_torch(MappingReader& reader, const KindContext&) {
  TorchParams params;
  require_one_of(reader, {"version", "base", "local", "cuda", "hip", "forbidden_paths",
                          "forbidden_path_parts", "required_paths"});
  read_release(reader, "version", params.version, is_pep440_version, "2.10.0+cpu");
  read_release(reader, "base", params.base, is_public_version, "2.10.0");
  read_release(reader, "local", params.local, is_local_segment, "cpu");
  read_toolkit_rule(reader, "cuda", params.cuda);
  read_toolkit_rule(reader, "hip", params.hip);
  read_names(reader, "forbidden_paths", params.forbidden_paths, is_absolute_path,
             "an absolute path prefix");
  read_names(
      reader, "forbidden_path_parts", params.forbidden_path_parts,
      [](std::string_view text) { return !text.empty(); }, "a non-empty text");
  read_names(reader, "required_paths", params.required_paths, is_absolute_path,
             "an absolute path prefix");
  read_names(reader, "after_import", params.after_import, is_module_name, "a Python module name");
  reject_contradictions(reader, params);
  return params;
}

TritonParams parse_triton(MappingReader& reader, const KindContext&) {
  TritonParams params;
  require_one_of(reader, {"provider", "provider_version", "version_prefix", "backends"});
  const auto provider = reader.string("provider");
  if (provider) {
    if (is_distribution_name(*provider)) {
      params.provider = common::normalize_distribution_name(*provider);
    } else {
      reader.ctx().error(*reader.get("provider"), "'provider' of " + reader.what() +
                                                      " must be a distribution name such as "
                                                      "'flagtree', got '" +
                                                      *provider + "'");
    }
  }
  read_specifier(reader, "provider_version", params.provider_version, Need::optional,
                 BareVersion::exact);
  read_text(reader, "version_prefix", params.version_prefix, Need::optional);
  read_names(reader, "backends", params.backends, is_module_name,
             "a triton backend name such as 'xpu'");
  // Stock triton and a vendor FlagTree both install a `triton` package; when a
  // vendor provides it, the stock distribution must be gone.
  const bool vendor = !params.provider.empty() && params.provider != "triton";
  if (reader.has("forbid_distributions")) {
    read_names(reader, "forbid_distributions", params.forbid_distributions, is_distribution_name,
               "a distribution name");
  } else if (vendor) {
    params.forbid_distributions = {"triton"};
  }
  if (reader.has("provider_version") && !reader.has("provider")) {
    reader.ctx().error(*reader.get("provider_version"),
                       "'provider_version' of " + reader.what() +
                           " needs 'provider': which distribution's version is pinned?");
  }
  return params;
}

}  // namespace envcontract::contracts::kinds
