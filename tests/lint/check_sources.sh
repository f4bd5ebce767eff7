#!/usr/bin/env bash
# Rules about untrusted input that a compiler cannot check, enforced on the
# sources so that a new call site cannot slip past review:
#  - every JSON text goes through common::json_text, which replaces invalid
#    UTF-8; nlohmann's bare dump() throws on it and once aborted whole scans;
#  - probes/, discovery/, process/, loader/ and freshness/ read files that any user of the host may
#    have written: no backtracking regex (std::regex recursed until the
#    stack overflowed on a 30 KB line) and no reader that opens a FIFO
#    blocking (YAML::LoadFile, std::ifstream on env paths): files come
#    through read_env_file;
#  - JSON from outside (agents' answers, Prometheus, what env code writes)
#    is parsed by common::parse_outside_json, which bounds its size and its
#    nesting: 100,000 nested arrays once crashed fleetctl.
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"

status=0
report() {
  echo "$1" >&2
  echo "  $2" >&2
  status=1
}

# The folders whose code reads what envs hold.
env_readers='^\(probes\|process\|loader\|freshness\|discovery\)/'
sources=$(git ls-files '*.cpp' '*.hpp' '*.cpp.in' 2>/dev/null || find . -name '*.cpp' -o -name '*.hpp')

while IFS= read -r hit; do
  report "$hit" "use common::json_text(value) instead of dump(): it never throws on invalid UTF-8"
done < <(grep -n '\.dump(' $sources | grep -v '^common/json_text\.cpp:' || true)

while IFS= read -r hit; do
  report "$hit" "no std::regex on env contents: write a small scanner (see process/small_files.cpp)"
done < <(grep -n 'std::regex\|#include <regex>' $(echo "$sources" | grep "$env_readers") || true)

while IFS= read -r hit; do
  report "$hit" "read env files with read_env_file/read_file_bounded (O_NONBLOCK, regular files, size caps)"
# Files that read only the kernel's own /proc files are exempt.
done < <(grep -n 'YAML::LoadFile\|std::ifstream' $(echo "$sources" | grep "$env_readers" |
  grep -v '^process/\(containment\|mount_table\|stall_guard\)\.cpp') || true)

while IFS= read -r hit; do
  report "$hit" "parse JSON with common::parse_outside_json: it bounds size and nesting depth"
# The store reads back only what the agent itself wrote.
done < <(grep -n 'json::parse(\|Json::parse(' $(echo "$sources" | grep -v '^tests/') |
  grep -v '^common/json_from_outside\.cpp:\|^daemon/store\.cpp:' || true)

if [ $status -eq 0 ]; then
  echo "sources: no bare dump(), no regex or blocking readers on env contents, no unbounded JSON"
fi
exit $status
