#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

// CI runs the benchmarks' short forms with BENCH_REPORT_ONLY=1: a missed
// time target is printed, not failed (CI's cores are shared), while a wrong
// result still fails. scripts/bench runs them without it.
inline bool bench_report_only() {
  const char* value = std::getenv("BENCH_REPORT_ONLY");
  return value != nullptr && std::string_view(value) == "1";
}

// Prints "MISSED: <what>" and returns the benchmark's exit code: 1, or 0
// when CI only reports.
inline int bench_missed(const char* what) {
  std::printf("MISSED: %s%s\n", what,
              bench_report_only() ? " (reported only: BENCH_REPORT_ONLY=1)" : "");
  return bench_report_only() ? 0 : 1;
}

// One row of the table scripts/bench ends with: what was measured, the
// figure, the baseline measured in the same run, how they compare, the
// target and its verdict. Printed as "table: a | b | c | d | e | f".
inline void bench_row(const std::string& what, const std::string& figure,
                      const std::string& baseline, const std::string& ratio,
                      const std::string& target, bool met) {
  std::printf("table: %s | %s | %s | %s | %s | %s\n", what.c_str(), figure.c_str(),
              baseline.c_str(), ratio.c_str(), target.c_str(), met ? "met" : "MISSED");
}

// A number as the table shows it: `digits` after the point, then `unit`.
inline std::string bench_figure(double value, int digits, const char* unit) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f%s", digits, value, unit);
  return text;
}
