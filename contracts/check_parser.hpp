#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "contracts/check_kind.hpp"
#include "contracts/contract.hpp"
#include "contracts/yaml_document.hpp"

namespace envcontract::contracts {

// Turns check definitions into Checks through the kind registry, whichever
// section or contract form they come from, and keeps their ids unique.
class CheckParser {
 public:
  CheckParser(ParseContext& ctx, KindContext kind_context)
      : m_ctx(ctx), m_kind_context(std::move(kind_context)) {}

  // Parses one check mapping ({kind, id?, severity?, description?, ...}).
  // `section` records where it came from. Problems are reported, not thrown.
  void parse(const YAML::Node& node, const std::string& section);

  // Adds a check built elsewhere (already normalised), giving it a unique id.
  void add(Check check, const YAML::Node& id_node);

  ParseContext& ctx() { return m_ctx; }
  const KindContext& kind_context() const { return m_kind_context; }
  std::vector<Check> take_checks() { return std::move(m_checks); }

 private:
  // `wanted` if free; else for a default id, wanted-2, -3...; an explicit
  // duplicate is an error and returns "".
  std::string claim_id(const std::string& wanted, bool explicit_id, const YAML::Node& where);

  ParseContext& m_ctx;
  KindContext m_kind_context;
  std::vector<Check> m_checks;
  std::map<std::string, SourceLocation> m_ids;
};

}  // namespace envcontract::contracts
