#pragma once

#include <string>
#include <utility>

#include "report/report.hpp"

// A host's report as a scan hands it to the store (docs/report.md), around
// the given envs: what store_bench and history_bench record.
inline envcontract::report::Json bench_host_report(const std::string& at,
                                                   envcontract::report::Json envs,
                                                   const std::string& verdict,
                                                   envcontract::report::Json compliant_envs,
                                                   envcontract::report::Json reasons) {
  using envcontract::report::Json;
  return {
      {"schema_version", 1},
      {"host", "node-1"},
      {"scanned_at", at},
      {"duration_ms", 1234.5},
      {"contract", {{"name", "kunlunxin"}, {"path", "/c.yaml"}, {"sha256", std::string(64, 'a')}}},
      {"verdict", verdict},
      {"reasons", std::move(reasons)},
      {"compliant_envs", std::move(compliant_envs)},
      {"image", {{"value", "x:2.2.0"}, {"source", "file"}, {"problem", ""}}},
      {"targets", Json::array()},
      {"envs", std::move(envs)},
      {"problems", Json::array()}};
}
