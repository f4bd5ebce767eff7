#include "contracts/mapping_reader.hpp"

#include <algorithm>
#include <charconv>

#include "common/spelling.hpp"

namespace envcontract::contracts {

MappingReader::MappingReader(const YAML::Node& node, std::string what, ParseContext& ctx)
    : m_node(node), m_what(std::move(what)), m_ctx(ctx), m_is_mapping(node.IsMap()) {
  if (!m_is_mapping) {
    m_ctx.error(node,
                m_what + " must be a mapping of keys to values, got " + describe_node_type(node));
  }
}

void MappingReader::remember(std::string_view key) {
  if (std::find(m_known_keys.begin(), m_known_keys.end(), key) == m_known_keys.end()) {
    m_known_keys.emplace_back(key);
  }
}

bool MappingReader::has(std::string_view key) {
  remember(key);
  if (!m_is_mapping) {
    return false;
  }
  for (const auto& pair : m_node) {
    if (pair.first.IsScalar() && pair.first.Scalar() == key) {
      return true;
    }
  }
  return false;
}

std::optional<YAML::Node> MappingReader::get(std::string_view key, Need need) {
  remember(key);
  if (!m_is_mapping) {
    return std::nullopt;
  }
  // The first occurrence wins; later duplicates were reported when the file was loaded.
  for (const auto& pair : m_node) {
    if (pair.first.IsScalar() && pair.first.Scalar() == key) {
      return pair.second;
    }
  }
  if (need == Need::required) {
    m_ctx.error(m_node, m_what + " is missing the required key '" + std::string(key) + "'");
  }
  return std::nullopt;
}

std::optional<std::string> MappingReader::string(std::string_view key, Need need) {
  const auto value = get(key, need);
  if (!value) {
    return std::nullopt;
  }
  return read_string(*value, "'" + std::string(key) + "' of " + m_what, m_ctx);
}

std::optional<std::int64_t> MappingReader::integer(std::string_view key, Need need,
                                                   std::int64_t min, std::int64_t max) {
  const auto value = get(key, need);
  if (!value) {
    return std::nullopt;
  }
  const std::string name = "'" + std::string(key) + "' of " + m_what;
  if (!value->IsScalar()) {
    m_ctx.error(*value, name + " must be a whole number, got " + describe_node_type(*value));
    return std::nullopt;
  }
  const auto& text = value->Scalar();
  std::int64_t number = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, number);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    // A whole number, only too large for any bound.
    m_ctx.error(*value, name + " must be between " + std::to_string(min) + " and " +
                            std::to_string(max) + ", got " + text);
    return std::nullopt;
  }
  if (ec != std::errc() || ptr != end) {
    m_ctx.error(*value, name + " must be a whole number, got '" + text + "'");
    return std::nullopt;
  }
  if (number < min || number > max) {
    m_ctx.error(*value, name + " must be between " + std::to_string(min) + " and " +
                            std::to_string(max) + ", got " + text);
    return std::nullopt;
  }
  return number;
}

std::optional<bool> MappingReader::boolean(std::string_view key, Need need) {
  const auto value = get(key, need);
  if (!value) {
    return std::nullopt;
  }
  if (value->IsScalar() && (value->Scalar() == "true" || value->Scalar() == "false")) {
    return value->Scalar() == "true";
  }
  m_ctx.error(*value, "'" + std::string(key) + "' of " + m_what + " must be true or false, got " +
                          describe_node_type(*value));
  return std::nullopt;
}

std::optional<std::vector<std::string>> MappingReader::string_list(std::string_view key,
                                                                   Need need) {
  const auto value = get(key, need);
  if (!value) {
    return std::nullopt;
  }
  return read_string_list(*value, "'" + std::string(key) + "' of " + m_what, m_ctx);
}

std::vector<std::pair<std::string, YAML::Node>> MappingReader::unknown_entries() const {
  std::vector<std::pair<std::string, YAML::Node>> unknown;
  if (!m_is_mapping) {
    return unknown;
  }
  for (const auto& pair : m_node) {
    if (!pair.first.IsScalar()) {
      continue;
    }
    const auto& key = pair.first.Scalar();
    if (std::find(m_known_keys.begin(), m_known_keys.end(), key) == m_known_keys.end()) {
      unknown.emplace_back(key, pair.second);
    }
  }
  return unknown;
}

void MappingReader::reject_unknown_keys(DiagnosticLevel level) {
  if (!m_is_mapping) {
    return;
  }
  for (const auto& pair : m_node) {
    if (!pair.first.IsScalar()) {
      m_ctx.error(pair.first, m_what + " has a key that is not a plain name");
      continue;
    }
    const auto& key = pair.first.Scalar();
    if (std::find(m_known_keys.begin(), m_known_keys.end(), key) != m_known_keys.end()) {
      continue;
    }
    std::string message =
        "unknown key '" + key + "' in " + m_what + common::did_you_mean(key, m_known_keys);
    // Where unknown keys are kept (CI configs grow keys), one within two
    // edits of a known key is a typo that would silently drop what it
    // names (`torch_contarct:`): an error all the same.
    // Lengths more than two apart are more than two edits apart: no table
    // of edits is made for them (a megabyte-long key costs nothing).
    const bool misspelt =
        key.size() >= 5 &&
        std::any_of(m_known_keys.begin(), m_known_keys.end(), [&](const auto& known) {
          const auto longer = std::max(key.size(), known.size());
          const auto shorter = std::min(key.size(), known.size());
          return longer - shorter <= 2 && common::spelling_distance(key, known) <= 2;
        });
    if (level == DiagnosticLevel::error || misspelt) {
      m_ctx.error(pair.first, std::move(message));
    } else {
      m_ctx.warning(pair.first, std::move(message) + "; it is kept but not judged");
    }
  }
}

std::optional<std::string> read_string(const YAML::Node& node, std::string_view what,
                                       ParseContext& ctx) {
  if (!node.IsScalar()) {
    ctx.error(node, std::string(what) + " must be a string, got " + describe_node_type(node));
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<std::vector<std::string>> read_string_list(const YAML::Node& node,
                                                         std::string_view what, ParseContext& ctx) {
  if (node.IsScalar()) {
    return std::vector<std::string>{node.Scalar()};
  }
  if (!node.IsSequence()) {
    ctx.error(node,
              std::string(what) + " must be a list of strings, got " + describe_node_type(node));
    return std::nullopt;
  }
  std::vector<std::string> items;
  bool all_valid = true;
  for (const auto& item : node) {
    const auto text = read_string(item, std::string("each item of ") + std::string(what), ctx);
    if (text) {
      items.push_back(*text);
    } else {
      all_valid = false;
    }
  }
  if (!all_valid) {
    return std::nullopt;
  }
  return items;
}

}  // namespace envcontract::contracts
