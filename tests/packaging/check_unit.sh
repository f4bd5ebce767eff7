#!/bin/bash
# Checks the agent's systemd unit the way an operator would: its exposure
# according to `systemd-analyze security` (4.0 or lower), the hardening
# settings it must keep (docs/security.md, "The systemd unit"), and that
# `systemd-analyze verify` accepts it without a single warning. Needs no
# build and no installed package: the unit is verified from a copy whose
# ExecStart points at a stub.
# usage: check_unit.sh [UNIT_FILE]   (default: packaging/envcontractd.service)
# Exit status: 0 pass, 1 fail, 77 skipped (no systemd-analyze, or one without --offline).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unit=${1:-$here/../../packaging/envcontractd.service}
max_exposure=4.0

if [ ! -f "$unit" ]; then
  echo "FAIL: no unit file at $unit"
  exit 1
fi
if ! command -v systemd-analyze >/dev/null; then
  echo "SKIP: systemd-analyze is missing (apt install systemd): unit not checked"
  exit 77
fi
if ! systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
  echo "SKIP: this systemd-analyze ($(systemd-analyze --version | head -1)) has no --offline (systemd 250 or later has)"
  exit 77
fi
echo "unit: $unit"
systemd-analyze --version | head -1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# 1. The exposure figure.
if ! systemd-analyze security --offline=true "$unit" >"$work/security" 2>&1; then
  cat "$work/security"
  echo "FAIL: systemd-analyze security --offline=true could not assess the unit"
  exit 1
fi
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p' "$work/security" | head -1)
if [ -z "$exposure" ]; then
  cat "$work/security"
  echo "FAIL: no 'Overall exposure level' figure in the output above"
  exit 1
fi
echo "exposure: $exposure (at most $max_exposure)"
if awk -v got="$exposure" -v max="$max_exposure" 'BEGIN { exit !(got > max) }'; then
  grep '✗' "$work/security" || true
  fail "exposure $exposure is above $max_exposure (the settings still open are listed above)"
fi
# ProtectClock= on systemd older than 252 implied DeviceAllow=char-rtc, which
# closes every other device: probes must still open /dev/nvidia*, /dev/davinci*...
if ! grep -q 'DeviceAllow=.*Service has no device ACL' "$work/security"; then
  grep 'DeviceAllow=' "$work/security" || true
  fail "the unit has a device ACL: probes could not open accelerator devices"
fi

# 2. The settings, as written (comments and blank lines left out; a key that
# appears more than once is checked on each of its lines).
grep -v '^[[:space:]]*[#;]' "$unit" | grep -v '^[[:space:]]*$' >"$work/settings"
has() {  # has KEY VALUE: some line reads exactly KEY=VALUE
  grep -qxF -- "$1=$2" "$work/settings" || fail "missing $1=$2"
}
lacks() {  # lacks KEY REASON: no line sets KEY
  if grep -q "^$1=" "$work/settings"; then
    fail "$1= is set: $2 ($(grep "^$1=" "$work/settings" | tr '\n' ' '))"
  fi
}
words() {  # words KEY: the space-separated values of every KEY= line, sorted, one a line
  sed -n "s/^$1=//p" "$work/settings" | tr ' ' '\n' | grep -v '^$' | sort -u
}

has Type notify
# shellcheck disable=SC2016 # $MAINPID is systemd's, written literally in the unit
has ExecReload '/bin/kill -HUP $MAINPID'
has StateDirectory envcontract
has RuntimeDirectory envcontract
has RuntimeDirectoryPreserve yes
has ProtectSystem strict
has ProtectHome read-only
has PrivateTmp yes
has NoNewPrivileges yes
has ProtectKernelModules yes
has ProtectKernelLogs yes
has ProtectKernelTunables yes
has ProtectClock yes
has RestrictNamespaces yes
has RestrictRealtime yes
has LockPersonality yes
has SystemCallArchitectures native
has UMask 0077
has Delegate yes
has LimitNOFILE 65536
has WatchdogSec 60s
has CPUWeight 20
has IOWeight 20
has TasksMax 4608

expected_caps="CAP_CHOWN CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_KILL CAP_SETGID CAP_SETPCAP CAP_SETUID CAP_SYS_PTRACE"
caps=$(words CapabilityBoundingSet | tr '\n' ' ' | sed 's/ $//')
if [ "$caps" != "$expected_caps" ]; then
  fail "CapabilityBoundingSet is '$caps', not exactly '$expected_caps'"
fi

families=$(words RestrictAddressFamilies | tr '\n' ' ' | sed 's/ $//')
for family in AF_UNIX AF_INET AF_INET6; do
  case " $families " in
    *" $family "*) ;;
    *) fail "RestrictAddressFamilies lacks $family (the API listens on TCP; sd_notify and journald are AF_UNIX)" ;;
  esac
done
if grep -q '^RestrictAddressFamilies=~' "$work/settings"; then
  fail "RestrictAddressFamilies is a deny list: it must be an allow list"
fi

filter=$(sed -n 's/^SystemCallFilter=//p' "$work/settings")
echo "$filter" | grep -q '^@system-service' || fail "SystemCallFilter does not start from @system-service: $filter"
echo "$filter" | grep -qw 'ptrace' || fail "SystemCallFilter does not allow ptrace (eu-stack needs it)"
for group in @mount @swap @reboot @module @raw-io @obsolete @cpu-emulation @clock; do
  grep -q "^SystemCallFilter=~.*$group\\b" "$work/settings" || fail "SystemCallFilter does not deny $group"
done

# TimeoutStopSec: set, and bounded (the agent ends its probes on SIGTERM).
stop=$(sed -n 's/^TimeoutStopSec=//p' "$work/settings" | tail -1)
case "$stop" in
  "") fail "TimeoutStopSec= is not set" ;;
  *[0-9]s | *[0-9]) seconds=${stop%s}
    { [ "$seconds" -gt 0 ] && [ "$seconds" -le 300 ]; } 2>/dev/null ||
      fail "TimeoutStopSec=$stop is not between 1s and 300s" ;;
  *min) minutes=${stop%min}
    { [ "$minutes" -gt 0 ] && [ "$minutes" -le 5 ]; } 2>/dev/null ||
      fail "TimeoutStopSec=$stop is not between 1s and 300s" ;;
  *) fail "TimeoutStopSec=$stop: write it in s or min" ;;
esac

# What must stay off: every setting is inherited by the probes.
lacks User "the agent runs as root to switch to each env's owner"
lacks DynamicUser "the agent switches to real users' uids"
lacks PrivateUsers "the agent switches to real users' uids"
lacks MemoryDenyWriteExecute "probes run torch, triton and other JITs that need W+X memory"
lacks PrivateDevices "probes open accelerator devices (/dev/nvidia*, /dev/davinci*, /dev/xpu*)"
if grep -q '^DevicePolicy=' "$work/settings" && ! grep -qx 'DevicePolicy=auto' "$work/settings"; then
  fail "DevicePolicy= is not auto: probes open accelerator devices"
fi
lacks DeviceAllow "any DeviceAllow= closes every other device to probes"
lacks ProcSubset "probes read /proc/cpuinfo and /proc/meminfo"
lacks RestrictSUIDSGID "systemd enforces it by failing every openat2(), which container roots and scratch directories are opened with"
if grep -qE '^ProtectControlGroups=(yes|true|on|1|strict)$' "$work/settings"; then
  fail "ProtectControlGroups makes the delegated cgroup read-only: the agent could not make a cgroup per probe"
fi

# 3. systemd-analyze verify, on a copy whose ExecStart is a stub (this machine
# need not have /usr/bin/envcontractd). verify exits 0 on unknown keys and
# bad values, so any line about the unit fails the check.
mkdir "$work/unit"
printf '#!/bin/sh\nexit 0\n' >"$work/unit/envcontractd"
chmod +x "$work/unit/envcontractd"
sed "s|/usr/bin/envcontractd|$work/unit/envcontractd|g" "$unit" >"$work/unit/envcontractd.service"
verify_status=0
systemd-analyze verify "$work/unit/envcontractd.service" >"$work/verify" 2>&1 || verify_status=$?
# Lines about other units (a dependency's own warnings on this host) are shown, not held against ours.
grep -v 'envcontractd' "$work/verify" | sed 's/^/note (another unit): /' || true
if [ "$verify_status" -ne 0 ] || grep -q 'envcontractd' "$work/verify"; then
  grep 'envcontractd' "$work/verify" || true
  fail "systemd-analyze verify: exit status $verify_status, or warnings about the unit above"
else
  echo "systemd-analyze verify: ok"
fi

# 4. The drop-ins for container targets (packaging/examples), each applied to
# the unit as systemd would (envcontractd.service.d/ beside it): systemd-analyze
# verify without a line about them, and what they open, which must be exactly
# what each says: the settings `systemd-analyze security` rates ✗ with the
# drop-in and not without it. Its exposure figure is printed (the drop-ins'
# comments and docs/containers.md quote it).
grep -o '^✗ [^ ]*' "$work/security" | sort >"$work/opened.unit"
check_dropin() {  # check_dropin NAME OPENED... : packaging/examples/envcontractd-NAME.conf opens exactly OPENED
  local name=$1 dir=$work/dropin-$1 dropin_exposure status=0
  shift
  local dropin=$here/../../packaging/examples/envcontractd-$name.conf
  if [ ! -f "$dropin" ]; then
    fail "no drop-in at $dropin"
    return
  fi
  mkdir -p "$dir/envcontractd.service.d"
  cp "$work/unit/envcontractd.service" "$work/unit/envcontractd" "$dir/"
  sed -i "s|$work/unit/envcontractd|$dir/envcontractd|g" "$dir/envcontractd.service"
  cp "$dropin" "$dir/envcontractd.service.d/$name.conf"
  systemd-analyze verify "$dir/envcontractd.service" >"$dir/verify" 2>&1 || status=$?
  if [ "$status" -ne 0 ] || grep -q 'envcontractd' "$dir/verify"; then
    grep 'envcontractd' "$dir/verify" || true
    fail "systemd-analyze verify with the $name drop-in: exit status $status, or warnings above"
  fi
  (cd "$dir" && systemd-analyze security --offline=true envcontractd.service) >"$dir/security" 2>&1 || true
  if grep -q "$name.conf" "$dir/security"; then
    grep "$name.conf" "$dir/security"
    fail "systemd warns about the $name drop-in (above)"
  fi
  dropin_exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p' "$dir/security" | head -1)
  grep -o '^✗ [^ ]*' "$dir/security" | sort | comm -13 "$work/opened.unit" - | sed 's/^✗ //' >"$dir/opened"
  printf '%s\n' "$@" | sort >"$dir/expected"
  if ! cmp -s "$dir/opened" "$dir/expected"; then
    diff "$dir/expected" "$dir/opened" | sed -n 's/^> /  opens, not stated: /p; s/^< /  stated, not opened: /p' || true
    fail "the $name drop-in does not open exactly what it states (above)"
  fi
  echo "$name drop-in: verify ok, opens $(tr '\n' ' ' <"$dir/opened")"
  echo "$name drop-in: exposure ${dropin_exposure:-unknown} with it (the unit alone: $exposure)"
}
# nsenter: CAP_SYS_ADMIN and CAP_SYS_CHROOT for setns(2), the five namespaces
# nsenter enters; never user or cgroup ones.
check_dropin nsenter 'CapabilityBoundingSet=~CAP_SYS_ADMIN' 'CapabilityBoundingSet=~CAP_SYS_CHROOT' \
  'RestrictNamespaces=~mnt' 'RestrictNamespaces=~pid' 'RestrictNamespaces=~uts' \
  'RestrictNamespaces=~ipc' 'RestrictNamespaces=~net'
# podman: tests/packaging/check_podman_caps.sh finds each of these needed (CAP_FSETID
# and CAP_SETFCAP fall on the line CAP_CHOWN already opens); the cgroup namespace
# too, never the user one.
check_dropin podman 'CapabilityBoundingSet=~CAP_SYS_ADMIN' 'CapabilityBoundingSet=~CAP_SYS_CHROOT' \
  'CapabilityBoundingSet=~CAP_NET_(BIND_SERVICE|BROADCAST|RAW)' 'SystemCallFilter=~@mount' \
  'RestrictNamespaces=~mnt' 'RestrictNamespaces=~pid' 'RestrictNamespaces=~uts' \
  'RestrictNamespaces=~ipc' 'RestrictNamespaces=~net' 'RestrictNamespaces=~cgroup'
grep -q '^✓ RestrictNamespaces=~user ' "$work/dropin-podman/security" || fail "the podman drop-in opens user namespaces"
for closed in user cgroup; do
  grep -q "^✓ RestrictNamespaces=~$closed " "$work/dropin-nsenter/security" || fail "the nsenter drop-in opens $closed namespaces"
done

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "unit: ok (exposure $exposure)"
