#include "facts/requested.hpp"

namespace envcontract::facts {

Json to_json(const PathMatches& matches) {
  return {{"pattern", matches.pattern},
          {"expansions", matches.expansions},
          {"matches", matches.matches},
          {"truncated", matches.truncated},
          {"error", matches.error.empty() ? Json(nullptr) : Json(matches.error)}};
}

Json to_json(const ToolLookup& tool) {
  return {{"name", tool.name}, {"path", tool.path.empty() ? Json(nullptr) : Json(tool.path)}};
}

Json to_json(const DeviceNodes& nodes) {
  return {{"glob", nodes.glob}, {"matches", nodes.matches}};
}

}  // namespace envcontract::facts
