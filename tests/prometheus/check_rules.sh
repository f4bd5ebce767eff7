#!/bin/sh
# The shipped alert rules: valid (promtool check rules) and doing what their
# unit tests say (promtool test rules: series that must fire and must not).
# Exit 77 (skipped) without promtool; scripts/test installs it (prometheus).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v promtool >/dev/null; then
  echo "skipped: promtool is missing (apt install prometheus; scripts/test installs it)"
  exit 77
fi
promtool check rules "$here/../../packaging/prometheus/envcontract-rules.yml"
cd "$here"
promtool test rules envcontract-rules.test.yml
