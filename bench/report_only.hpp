#pragma once

#include <cstdlib>
#include <string_view>

// CI runs the benchmarks' short forms with BENCH_REPORT_ONLY=1: a missed
// time target is printed, not failed (CI's cores are shared), while a wrong
// result still fails. scripts/bench runs them without it.
inline bool bench_report_only() {
  const char* value = std::getenv("BENCH_REPORT_ONLY");
  return value != nullptr && std::string_view(value) == "1";
}
