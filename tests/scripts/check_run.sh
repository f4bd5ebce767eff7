#!/usr/bin/env bash
# scripts/run as a user meets it: it builds the two tools (with progress, and
# not the tests), scans the demo host, starts the agent with its dashboard,
# the rescan command it prints is taken, and Ctrl-C (SIGINT to its process
# group, as a terminal sends it) stops it with exit status 0.
# usage: tests/scripts/check_run.sh (from the checkout)
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set -m  # the script gets a process group of its own, as in a terminal
ENVCONTRACT_LISTEN=127.0.0.1:0 scripts/run >"$log" 2>&1 &
run=$!
set +m
for _ in $(seq 1 600); do
  grep -q '^Dashboard: http://127.0.0.1:' "$log" && break
  kill -0 "$run" 2>/dev/null || break
  sleep 0.5
done
if ! grep -q '^Dashboard: http://127.0.0.1:' "$log"; then
  echo "scripts/run did not start the agent:" >&2
  tail -30 "$log" >&2
  kill -- -"$run" 2>/dev/null
  exit 1
fi
url=$(sed -n 's/^Dashboard: //p' "$log")
curl -sf -o /dev/null "${url}healthz" || {
  echo "the agent scripts/run started does not answer at $url" >&2
  exit 1
}
# The rescan command it prints works as printed: the agent queues the scan.
rescan=$(sed -n 's/^Rescan: *//p' "$log")
case "$rescan" in
  "curl -s -X POST "*"${url}api/v1/scan") ;;
  *)
    echo "scripts/run prints no rescan command for $url: '$rescan'" >&2
    kill -INT -- -"$run"
    exit 1
    ;;
esac
answer=$(bash -c "$rescan -w '\n%{http_code}'")
if [ "$(echo "$answer" | tail -1)" != 202 ] || ! echo "$answer" | grep -q '"state": "queued"'; then
  echo "scripts/run's rescan command ($rescan) was not taken:" >&2
  echo "$answer" >&2
  kill -INT -- -"$run"
  exit 1
fi
kill -INT -- -"$run"
wait "$run"
status=$?
if [ "$status" -ne 0 ]; then
  echo "scripts/run exited $status after Ctrl-C (wanted 0):" >&2
  tail -20 "$log" >&2
  exit 1
fi
if pgrep -f "serve --contract .* --listen 127.0.0.1:0" >/dev/null; then
  echo "the agent outlived scripts/run" >&2
  exit 1
fi
grep -q '^== building envcontractd and fleetctl in build/run' "$log" || {
  echo "scripts/run does not say it builds" >&2
  exit 1
}
# The main job needs the two tools only: the tests are scripts/test's to build.
if grep -Eq 'unit_tests|e2e_tests|_bench' "$log"; then
  echo "scripts/run builds the tests or benchmarks:" >&2
  grep -E 'unit_tests|e2e_tests|_bench' "$log" | head -5 >&2
  exit 1
fi
echo "scripts/run: started the agent at $url, took the rescan it prints, stopped by Ctrl-C with exit 0"
