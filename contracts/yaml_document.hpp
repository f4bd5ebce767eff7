#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "contracts/diagnostics.hpp"

namespace envcontract::contracts {

// Where a parser is in a file, so every message it reports carries file:line:column.
class ParseContext {
 public:
  ParseContext(std::string file, Diagnostics& diagnostics)
      : m_file(std::move(file)), m_diagnostics(diagnostics) {}

  const std::string& file() const { return m_file; }
  SourceLocation locate(const YAML::Node& node) const;
  SourceLocation locate(const YAML::Mark& mark) const;

  void error(const YAML::Node& node, std::string message);
  void warning(const YAML::Node& node, std::string message);
  void note(const YAML::Node& node, std::string message);
  Diagnostics& diagnostics() { return m_diagnostics; }

  // Nodes we synthesise (translating another contract form into checks) have
  // no position; messages about them point at the section they came from.
  void set_fallback(const YAML::Mark& mark) { m_fallback = mark; }
  const YAML::Mark& fallback() const { return m_fallback; }

 private:
  std::string m_file;
  Diagnostics& m_diagnostics;
  YAML::Mark m_fallback = YAML::Mark::null_mark();
};

// Sets a fallback position for the lifetime of a scope, then restores the old one.
class FallbackScope {
 public:
  FallbackScope(ParseContext& ctx, const YAML::Mark& mark) : m_ctx(ctx), m_saved(ctx.fallback()) {
    ctx.set_fallback(mark);
  }
  ~FallbackScope() { m_ctx.set_fallback(m_saved); }
  FallbackScope(const FallbackScope&) = delete;
  FallbackScope& operator=(const FallbackScope&) = delete;

 private:
  ParseContext& m_ctx;
  YAML::Mark m_saved;
};

// Reads and parses a YAML file. Syntax errors and duplicate mapping keys (which
// yaml-cpp accepts silently, keeping both) are reported into `ctx`; on a syntax
// error no document is returned, nor on aliases no walk of the tree could
// survive (a cycle, a billion-laughs document: common/yaml_aliases.hpp), so
// a document returned is one that callers may walk recursively.
std::optional<YAML::Node> load_yaml_file(const std::filesystem::path& path, ParseContext& ctx);

// The same for text already in memory; `ctx.file()` names it in messages.
std::optional<YAML::Node> load_yaml_text(const std::string& text, ParseContext& ctx);

// The value of `key` in a mapping, or nullopt (also when `node` is not a
// mapping). Unlike `node[key]`, never yields a node that throws when used.
std::optional<YAML::Node> find_child(const YAML::Node& node, std::string_view key);

// The value of `key` when it is a scalar, else "".
std::string scalar_child(const YAML::Node& node, std::string_view key);

// A YAML node as JSON, for keys we keep without judging them. Plain scalars
// that read as integers, booleans or null become those; quoted ones stay strings.
nlohmann::ordered_json yaml_to_json(const YAML::Node& node);

// "a mapping", "a list", "null" or "a scalar": for "expected X, got Y" messages.
std::string describe_node_type(const YAML::Node& node);

}  // namespace envcontract::contracts
