#include "contracts/kind_helpers.hpp"

#include "common/spelling.hpp"
#include "contracts/output_pattern.hpp"

namespace envcontract::contracts::kind_helpers {
namespace {

std::string quoted(std::string_view key) {
  return "'" + std::string(key) + "'";
}

}  // namespace

bool read_names(MappingReader& reader, std::string_view key, Strings& names, NamePredicate is_valid,
                std::string_view what_a_name_is, Need need) {
  const auto node = reader.get(key, need);
  if (!node) {
    return need == Need::optional;
  }
  const std::string what = quoted(key) + " of " + reader.what();
  std::vector<YAML::Node> items;
  if (node->IsScalar()) {
    items.push_back(*node);
  } else if (node->IsSequence()) {
    for (const auto& item : *node) {
      items.push_back(item);
    }
  } else {
    reader.ctx().error(*node, what + " must be a list, got " + describe_node_type(*node));
    return false;
  }
  bool valid = true;
  for (const auto& item : items) {
    const auto text = read_string(item, "each item of " + what, reader.ctx());
    if (!text) {
      valid = false;
    } else if (!is_valid(*text)) {
      reader.ctx().error(item,
                         "'" + *text + "' in " + what + " is not " + std::string(what_a_name_is));
      valid = false;
    } else {
      names.push_back(*text);
    }
  }
  return valid;
}

void read_text(MappingReader& reader, std::string_view key, std::string& text, Need need) {
  if (const auto value = reader.string(key, need)) {
    text = *value;
  }
}

void read_timeout(MappingReader& reader, std::chrono::milliseconds& timeout) {
  const auto text = reader.string("timeout");
  if (!text) {
    return;
  }
  const auto parsed = parse_duration(*text);
  if (!parsed) {
    reader.ctx().error(*reader.get("timeout"),
                       "'timeout' of " + reader.what() + ": " + parsed.error());
    return;
  }
  timeout = parsed.value();
}

void read_count(MappingReader& reader, std::string_view key, Comparison& count, Need need) {
  const auto text = reader.string(key, need);
  if (!text) {
    return;
  }
  const auto parsed = parse_comparison(*text);
  if (!parsed) {
    reader.ctx().error(*reader.get(key),
                       quoted(key) + " of " + reader.what() + ": " + parsed.error());
    return;
  }
  count = parsed.value();
}

void read_specifier(MappingReader& reader, std::string_view key,
                    std::vector<VersionClause>& clauses, Need need, BareVersion bare) {
  const auto text = reader.string(key, need);
  if (!text) {
    return;
  }
  const auto parsed = parse_version_specifier(*text, bare);
  if (!parsed) {
    reader.ctx().error(*reader.get(key),
                       quoted(key) + " of " + reader.what() + ": " + parsed.error());
    return;
  }
  clauses = parsed.value();
}

void read_output_pattern(MappingReader& reader, std::string_view key, std::string& pattern) {
  const auto text = reader.string(key);
  if (!text) {
    return;
  }
  if (const std::string problem = output_pattern_problem(*text); !problem.empty()) {
    reader.ctx().error(*reader.get(key), quoted(key) + " of " + reader.what() +
                                             " is not a pattern envcontract can match: " + problem);
    return;
  }
  pattern = *text;
}

namespace {

// Empty when `pattern` is anchored, else the message saying how to anchor it.
std::string anchoring_problem(const std::string& pattern) {
  static const std::vector<std::string> k_anchors = {"{prefix}", "{site}"};
  if (pattern.starts_with("/") || pattern.starts_with("{prefix}") ||
      pattern.starts_with("{site}")) {
    return {};
  }
  std::string hint;
  if (pattern.starts_with("{")) {
    hint = common::did_you_mean(pattern.substr(0, pattern.find('}') + 1), k_anchors);
  }
  return " must start with {prefix}, {site} or /" + hint;
}

}  // namespace

bool read_path_patterns(MappingReader& reader, std::string_view key, Strings& patterns) {
  const auto node = reader.get(key);
  if (!node) {
    return true;
  }
  const auto items = read_string_list(*node, quoted(key) + " of " + reader.what(), reader.ctx());
  if (!items) {
    return false;
  }
  bool valid = true;
  for (std::size_t index = 0; index < items->size(); ++index) {
    const auto& pattern = (*items)[index];
    const std::string problem = anchoring_problem(pattern);
    if (!problem.empty()) {
      const YAML::Node item = node->IsSequence() ? (*node)[index] : *node;
      reader.ctx().error(
          item, "path '" + pattern + "' in " + quoted(key) + " of " + reader.what() + problem);
      valid = false;
      continue;
    }
    patterns.push_back(pattern);
  }
  return valid;
}

void read_path_pattern(MappingReader& reader, std::string_view key, std::string& pattern,
                       Need need) {
  const auto text = reader.string(key, need);
  if (!text) {
    return;
  }
  const std::string problem = anchoring_problem(*text);
  if (!problem.empty()) {
    reader.ctx().error(*reader.get(key),
                       quoted(key) + " of " + reader.what() + " ('" + *text + "')" + problem);
    return;
  }
  pattern = *text;
}

std::vector<NamedValue> read_named_values(MappingReader& reader, std::string_view key,
                                          NamePredicate is_valid_name,
                                          std::string_view what_a_name_is,
                                          std::string_view what_it_maps) {
  std::vector<NamedValue> entries;
  const auto node = reader.get(key);
  if (!node) {
    return entries;
  }
  const std::string what = quoted(key) + " of " + reader.what();
  if (!node->IsMap()) {
    reader.ctx().error(*node, what + " must map " + std::string(what_it_maps) + ", got " +
                                  describe_node_type(*node));
    return entries;
  }
  for (const auto& pair : *node) {
    const auto name = read_string(pair.first, "a key of " + what, reader.ctx());
    if (!name) {
      continue;
    }
    if (!is_valid_name(*name)) {
      reader.ctx().error(pair.first,
                         "'" + *name + "' in " + what + " is not " + std::string(what_a_name_is));
      continue;
    }
    const auto value = read_string(pair.second, "the value of '" + *name + "'", reader.ctx());
    if (value) {
      entries.push_back({*name, *value, pair.first, pair.second});
    }
  }
  return entries;
}

void require_one_of(MappingReader& reader, std::initializer_list<std::string_view> keys) {
  for (const auto key : keys) {
    if (reader.has(key)) {
      return;
    }
  }
  std::string names;
  for (const auto key : keys) {
    names += (names.empty() ? "" : ", ") + quoted(key);
  }
  reader.ctx().error(reader.node(),
                     reader.what() + " checks nothing: give at least one of " + names);
}

}  // namespace envcontract::contracts::kind_helpers
