#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "contracts/yaml_document.hpp"

namespace envcontract::contracts {

enum class Need { required, optional };

// Typed, error-reporting access to one YAML mapping. Every key a parser asks
// for becomes a known key; `reject_unknown_keys` then reports the rest, with a
// "did you mean" for near misses. Accessors report wrong types at the value's
// own line and column and return nullopt, so parsing goes on and every error
// of a file is found in one pass.
class MappingReader {
 public:
  // `what` names the mapping in messages, e.g. "check 'no-cuda-lib'".
  MappingReader(const YAML::Node& node, std::string what, ParseContext& ctx);

  bool is_mapping() const { return m_is_mapping; }
  const YAML::Node& node() const { return m_node; }
  const std::string& what() const { return m_what; }
  ParseContext& ctx() { return m_ctx; }

  // True when the key is present (null counts as present). Registers the key.
  bool has(std::string_view key);

  // The value node of `key`. A missing required key is reported.
  std::optional<YAML::Node> get(std::string_view key, Need need = Need::optional);

  std::optional<std::string> string(std::string_view key, Need need = Need::optional);
  std::optional<std::int64_t> integer(std::string_view key, Need need, std::int64_t min,
                                      std::int64_t max);
  std::optional<bool> boolean(std::string_view key, Need need = Need::optional);
  // A list of strings; a single string is accepted as a list of one.
  std::optional<std::vector<std::string>> string_list(std::string_view key,
                                                      Need need = Need::optional);

  // Reports the present keys that no accessor asked for.
  void reject_unknown_keys(DiagnosticLevel level = DiagnosticLevel::error);

  // Entries whose (scalar) key no accessor asked for, in file order, with
  // their values. Keys that are not scalars are left to reject_unknown_keys.
  std::vector<std::pair<std::string, YAML::Node>> unknown_entries() const;

 private:
  void remember(std::string_view key);

  YAML::Node m_node;
  std::string m_what;
  ParseContext& m_ctx;
  bool m_is_mapping = false;
  std::vector<std::string> m_known_keys;
};

// Value readers for nodes that are not under a MappingReader key (list items).
// `what` names the value in messages.
std::optional<std::string> read_string(const YAML::Node& node, std::string_view what,
                                       ParseContext& ctx);
std::optional<std::vector<std::string>> read_string_list(const YAML::Node& node,
                                                         std::string_view what, ParseContext& ctx);

}  // namespace envcontract::contracts
