// Check kinds that run code in the env: device counts, smoke snippets, commands.
#include "contracts/kinds.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "contracts/integration_tests.hpp"
#include "contracts/kind_helpers.hpp"

namespace envcontract::contracts::kinds {
namespace {

// `relative` (under the checkout) stays under it once normalised.
bool within(const std::filesystem::path& root, const std::string& relative) {
  if (relative.starts_with("/")) {
    return false;
  }
  const auto joined = (root / relative).lexically_normal();
  const auto rel = joined.lexically_relative(root.lexically_normal());
  return !rel.empty() && *rel.begin() != "..";
}

// Why a directory or file of the checkout cannot be trusted, or "": it must
// belong to root or to the agent's user, be writable by nobody else, and
// not be a link (lstat: a link planted in the checkout is not followed).
std::string untrusted_path(const std::filesystem::path& path, bool directory) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    return "";  // missing: said where it is looked for
  }
  if (S_ISLNK(info.st_mode) && !directory) {
    return path.string() + " is a symbolic link";
  }
  if (S_ISLNK(info.st_mode) && ::stat(path.c_str(), &info) != 0) {
    return "";
  }
  if (info.st_uid != 0 && info.st_uid != ::geteuid()) {
    return path.string() + " belongs to uid " + std::to_string(info.st_uid);
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return path.string() + " is writable by its group or by everyone";
  }
  if (!directory && (!S_ISREG(info.st_mode) || info.st_size > 1024 * 1024)) {
    return path.string() + " is not a regular file of at most 1 MiB";
  }
  return "";
}

std::string as_untrusted(const std::string& problem) {
  return problem.empty() ? ""
                         : "the checkout is not trusted: " + problem +
                               " (its commands run in every env as the env's owner: the "
                               "checkout must be root's, writable by nobody else)";
}

std::string untrusted_checkout(const std::filesystem::path& checkout) {
  return as_untrusted(untrusted_path(checkout, true));
}

// The config and every directory between it and the checkout's root.
std::string untrusted_file(const std::filesystem::path& file, const std::filesystem::path& root) {
  const auto top = root.lexically_normal();
  for (auto dir = file.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (const auto problem = untrusted_path(dir, true); !problem.empty()) {
      return as_untrusted(problem);
    }
    if (dir == top || dir == dir.root_path()) {
      break;
    }
  }
  return as_untrusted(untrusted_path(file, false));
}

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
  read_output_pattern(reader, "expect_output", params.expect_output);
  read_timeout(reader, params.timeout);
  return params;
}

CommandParams parse_command(MappingReader& reader, const KindContext&) {
  CommandParams params;
  read_code(reader, "run", params.run);
  params.expect_exit =
      static_cast<int>(reader.integer("expect_exit", Need::optional, 0, 255).value_or(0));
  read_output_pattern(reader, "expect_output", params.expect_output);
  read_timeout(reader, params.timeout);
  return params;
}

IntegrationTestParams parse_integration_test(MappingReader& reader, const KindContext& context) {
  IntegrationTestParams params;
  const auto from = reader.string("from", Need::required);
  const auto test = reader.string("test", Need::required);
  read_timeout(reader, params.timeout);
  // "{checkout}/.github/configs/x.yml": a config of a checkout that the
  // agent's config names (a shipped contract cannot know where it is).
  constexpr std::string_view anchor = "{checkout}";
  const auto in_checkout = [&](const std::string& text) {
    return text == anchor || text.starts_with(std::string(anchor) + "/");
  };
  const auto resolve = [&](const std::string& text) {
    return in_checkout(text)
               ? (context.checkout / text.substr(std::min(text.size(), anchor.size() + 1)))
                     .lexically_normal()
               : (context.contract_dir / text).lexically_normal();
  };
  const bool from_checkout = from && in_checkout(*from);
  const auto workdir_text = reader.string("workdir");
  const bool workdir_in_checkout = workdir_text && in_checkout(*workdir_text);
  // "{checkout}/../x" is not in the checkout: the anchor confines.
  for (const auto& [key, text] : {std::pair{"from", from}, std::pair{"workdir", workdir_text}}) {
    if (text && in_checkout(*text) &&
        !within(context.checkout.empty() ? std::filesystem::path("/checkout") : context.checkout,
                text->size() > anchor.size() ? text->substr(anchor.size() + 1) : "")) {
      reader.ctx().error(*reader.get(key),
                         std::string(key) + " '" + *text + "' leaves the checkout");
      return params;
    }
  }
  if ((from_checkout || workdir_in_checkout) && context.checkout.empty()) {
    params.from = *from;
    params.test = test.value_or("");
    params.needs_checkout = "it is an entry of " + *from +
                            ", and no checkout of the repository is configured (checkout in "
                            "the agent's config, --checkout)";
    return params;
  }
  // The checkout is a trust boundary: its commands run in every env as the
  // env's owner. Only one that root (or the agent) owns and nobody else may
  // change is used.
  if (from_checkout || workdir_in_checkout) {
    if (const auto problem = untrusted_checkout(context.checkout); !problem.empty()) {
      params.from = from.value_or("");
      params.test = test.value_or("");
      params.needs_checkout = problem;
      return params;
    }
  }
  if (const auto& workdir = workdir_text) {
    // The checkout the CI runner would run in, relative to the contract.
    const auto path = resolve(*workdir);
    std::error_code error;
    if (workdir_in_checkout && !std::filesystem::is_directory(path, error)) {
      params.from = from.value_or("");
      params.test = test.value_or("");
      params.needs_checkout = "the configured checkout " + context.checkout.string() + " has no " +
                              path.string() + " (another branch?)";
      return params;
    }
    if (!std::filesystem::is_directory(path, error)) {
      reader.ctx().error(*reader.get("workdir"),
                         "workdir " + path.string() +
                             " is not a directory: name a checkout of the repository whose "
                             "config this is");
    }
    params.workdir = path.string();
  } else if (from_checkout) {
    params.workdir = context.checkout.lexically_normal().string();  // where CI runs it
  }
  if (!from || !test) {
    return params;
  }
  const std::filesystem::path path = resolve(*from);
  std::error_code error;
  if (from_checkout && !std::filesystem::exists(path, error)) {
    // A checkout of another branch or platform: not this contract's fault.
    params.from = *from;
    params.test = *test;
    params.needs_checkout = "the configured checkout " + context.checkout.string() + " has no " +
                            from->substr(std::min(from->size(), anchor.size() + 1)) +
                            " (another branch?)";
    return params;
  }
  if (from_checkout) {
    if (const auto problem = untrusted_file(path, context.checkout); !problem.empty()) {
      params.from = *from;
      params.test = *test;
      params.needs_checkout = problem;
      return params;
    }
    // The checkout's configs are its branch's, not the contract author's:
    // one that does not have the entry (or does not load) skips the check,
    // saying why, and never stops the contract from loading.
    Diagnostics found;
    ParseContext quiet(reader.ctx().file(), found);
    auto entry = find_integration_entry(path, *test, *reader.get("test"), quiet);
    params.from = *from;
    params.test = *test;
    if (entry && !found.has_errors()) {
      params.entry = std::move(*entry);
    } else {
      const auto all = found.sorted();
      params.needs_checkout = "the configured checkout's " + path.string() + " does not give it" +
                              (all.empty() ? std::string() : ": " + all.front().message);
    }
    return params;
  }
  if (auto entry = find_integration_entry(path, *test, *reader.get("test"), reader.ctx())) {
    params.from = *from;
    params.test = *test;
    params.entry = std::move(*entry);
  }
  return params;
}

}  // namespace envcontract::contracts::kinds
