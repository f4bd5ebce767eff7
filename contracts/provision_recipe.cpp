#include "contracts/provision_recipe.hpp"

#include <algorithm>
#include <regex>

#include "common/spelling.hpp"
#include "contracts/kind_helpers.hpp"
#include "contracts/mapping_reader.hpp"
#include "contracts/values.hpp"
#include "contracts/yaml_document.hpp"

namespace envcontract::contracts {
namespace {

bool is_script_name(std::string_view text) {
  return text.size() > 3 && text.ends_with(".sh") && text.find('/') == std::string_view::npos &&
         text.front() != '.';
}

// "torch==2.10.0+cpu", "flagtree>=0.7", "torch_fl": a PEP 508 name with an
// optional version specifier (no URLs, no markers: a recipe pins versions).
bool is_requirement(const std::string& text) {
  static const std::regex requirement(
      R"re([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?)re"
      R"re(( *(===|==|!=|~=|>=|<=|>|<) *[A-Za-z0-9.*+!_-]+( *, *(==|!=|~=|>=|<=|>|<) *[A-Za-z0-9.*+!_-]+)*)?)re");
  return std::regex_match(text, requirement);
}

// Every {name} of a template is a placeholder we know.
void check_placeholders(ParseContext& ctx, const YAML::Node& node, const std::string& text) {
  static const std::regex placeholder(R"(\{([^{}]*)\})");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), placeholder);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    const auto& known = provision_placeholders();
    if (std::find(known.begin(), known.end(), "{" + name + "}") == known.end()) {
      std::vector<std::string> bare;
      for (const auto& k : known) {
        bare.push_back(k.substr(1, k.size() - 2));
      }
      ctx.error(node, "unknown placeholder {" + name + "} in '" + text + "'; known: {prefix}, " +
                          "{python}, {wheelhouse}, {name}" + common::did_you_mean(name, bare));
    }
  }
}

void read_template(ParseContext& ctx, const YAML::Node& node, const std::string& text,
                   std::string_view what) {
  if (!split_command_template(text)) {
    ctx.error(node, std::string(what) + " '" + text + "' has an unterminated quote");
  } else if (text.find_first_not_of(" \t") == std::string::npos) {
    ctx.error(node, std::string(what) + " is empty");
  }
  check_placeholders(ctx, node, text);
}

}  // namespace

const std::vector<std::string>& provision_placeholders() {
  static const std::vector<std::string> names = {"{prefix}", "{python}", "{wheelhouse}", "{name}"};
  return names;
}

std::optional<std::vector<std::string>> split_command_template(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        word += c;
      }
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) {
        words.push_back(std::move(word));
        word.clear();
        in_word = false;
      }
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    return std::nullopt;
  }
  if (in_word) {
    words.push_back(std::move(word));
  }
  return words;
}

std::optional<ProvisionRecipe> read_provision_recipe(MappingReader& top) {
  const auto section = top.get("provision");
  if (!section) {
    return std::nullopt;
  }
  auto& ctx = top.ctx();
  const std::size_t errors_before = ctx.diagnostics().error_count();
  MappingReader reader(*section, "'provision'", ctx);
  if (!reader.is_mapping()) {
    ctx.error(*section, "'provision' must be a mapping (python, create, packages, ...), got " +
                            describe_node_type(*section));
    return std::nullopt;
  }
  ProvisionRecipe recipe;
  recipe.origin = ctx.locate(*section);
  if (const auto python = reader.string("python", Need::required)) {
    static const std::regex version(R"(3\.[0-9]{1,2})");
    if (!std::regex_match(*python, version) && !python->starts_with("/")) {
      ctx.error(*reader.get("python"),
                "'python' of 'provision' must be a version such as 3.10 (an interpreter found "
                "on the host) or an absolute path, got '" +
                    *python + "'");
    }
    recipe.python = *python;
  }
  if (const auto create = reader.string("create")) {
    recipe.create = *create;
    if (*create != "venv") {
      read_template(ctx, *reader.get("create"), *create, "'create'");
      if (create->find("{prefix}") == std::string::npos) {
        ctx.error(*reader.get("create"),
                  "'create' is 'venv' or a command that makes the env at {prefix}, such as "
                  "'micromamba create --yes --prefix {prefix} python=3.10'; '" +
                      *create + "' does not mention {prefix}");
      }
    }
  }
  if (const auto packages = reader.string_list("packages", Need::required)) {
    if (packages->empty()) {
      ctx.error(*reader.get("packages"), "'packages' of 'provision' lists nothing to install");
    }
    for (const auto& package : *packages) {
      if (!is_requirement(package)) {
        ctx.error(*reader.get("packages"),
                  "'" + package +
                      "' is not a requirement pip takes here: a distribution name with an "
                      "optional version, such as torch==2.10.0+cpu");
      }
    }
    recipe.packages = *packages;
  }
  if (const auto wheelhouse = reader.string("wheelhouse")) {
    if (!wheelhouse->starts_with("/")) {
      ctx.error(*reader.get("wheelhouse"),
                "'wheelhouse' must be an absolute directory, got '" + *wheelhouse + "'");
    }
    recipe.wheelhouse = *wheelhouse;
  }
  if (const auto url = reader.string("index_url")) {
    static const std::regex scheme(R"((https?|file)://\S+)");
    static const std::regex credentials(R"([a-z]+://[^/@]*@.*)");
    if (!std::regex_match(*url, scheme)) {
      ctx.error(*reader.get("index_url"),
                "'index_url' must be an http(s):// or file:// URL, got '" + *url + "'");
    } else if (std::regex_match(*url, credentials)) {
      // A contract is served (GET /api/v1/contract), planned and logged.
      ctx.error(*reader.get("index_url"),
                "'index_url' holds credentials, which the agent would show to anyone who can "
                "read the contract: give them to pip through the provisioning user's "
                "~/.netrc or a keyring instead");
    }
    recipe.index_url = *url;
  }
  recipe.no_index = reader.boolean("no_index").value_or(false);
  if (recipe.no_index && recipe.wheelhouse.empty() && reader.has("no_index")) {
    ctx.error(*reader.get("no_index"),
              "'no_index: true' installs from the wheelhouse only: name one ('wheelhouse')");
  }
  if (recipe.no_index && !recipe.index_url.empty()) {
    ctx.error(*reader.get("index_url"), "'index_url' and 'no_index: true' contradict each other");
  }
  for (auto& entry : kind_helpers::read_named_values(
           reader, "env_vars", is_environment_variable_name, "an environment variable name",
           "variable names to values")) {
    recipe.env_vars.emplace_back(entry.name, entry.value);
  }
  for (auto& entry : kind_helpers::read_named_values(reader, "activate_d", is_script_name,
                                                     "a script file name ending in .sh",
                                                     "script file names to their text")) {
    recipe.activate_scripts.emplace_back(entry.name, entry.value);
  }
  if (const auto commands = reader.string_list("commands")) {
    const auto node = *reader.get("commands");
    for (const auto& command : *commands) {
      read_template(ctx, node, command, "a command of 'provision'");
    }
    recipe.commands = *commands;
  }
  reader.reject_unknown_keys();
  if (ctx.diagnostics().error_count() != errors_before) {
    return std::nullopt;
  }
  return recipe;
}

nlohmann::ordered_json to_json(const ProvisionRecipe& recipe) {
  nlohmann::ordered_json env_vars = nlohmann::ordered_json::object();
  for (const auto& [name, value] : recipe.env_vars) {
    env_vars[name] = value;
  }
  nlohmann::ordered_json scripts = nlohmann::ordered_json::object();
  for (const auto& [name, text] : recipe.activate_scripts) {
    scripts[name] = text;
  }
  return {{"python", recipe.python},       {"create", recipe.create},
          {"packages", recipe.packages},   {"wheelhouse", recipe.wheelhouse},
          {"index_url", recipe.index_url}, {"no_index", recipe.no_index},
          {"env_vars", env_vars},          {"activate_d", scripts},
          {"commands", recipe.commands}};
}

}  // namespace envcontract::contracts
