#!/bin/sh
# envcontract's gate as a GitHub Actions self-hosted runner's job-started
# hook (docs/ci.md). In the runner's .env:
#
#   ACTIONS_RUNNER_HOOK_JOB_STARTED=/usr/share/envcontract/ci/github-job-started.sh
#
# The hook runs before the job's first step, as the runner's user, with the
# job's GITHUB_* variables: a non-zero exit fails the job before it starts.
# The job's checkout does not exist yet, so the contract is the host's:
# ENVCONTRACT_GATE_CONTRACT (a file; default: auto, chosen from this host's
# devices and tools). ENVCONTRACT_GATE_ENV names the env the jobs use (a
# prefix or a name; default: every env found, and every one must comply).
# Both can be set in the same .env file; ENVCONTRACT_GATE_BYPASS lets jobs
# start anyway, saying why.
set -eu
contract=${ENVCONTRACT_GATE_CONTRACT:-auto}
if [ -n "${ENVCONTRACT_GATE_ENV:-}" ]; then
  exec envcontractd gate --contract "$contract" --env "$ENVCONTRACT_GATE_ENV"
fi
exec envcontractd gate --contract "$contract"
