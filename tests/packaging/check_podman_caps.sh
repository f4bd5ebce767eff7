#!/bin/bash
# Runs `podman exec -i --user U:G -- CONTAINER cmd`, as the agent does, under
# the restrictions of packaging/envcontractd.service, without and with
# packaging/examples/envcontractd-podman.conf: without it podman must fail,
# with it it must succeed, and each capability, namespace and the mount(2)
# call the drop-in adds must be needed. No systemd is needed: the unit's
# settings are read from the files and simulated, as root:
#   CapabilityBoundingSet=, NoNewPrivileges=: setpriv --bounding-set --no-new-privs;
#   SystemCallFilter=, RestrictNamespaces=: seccomp filters like systemd's
#     (unit_seccomp.py, with the groups expanded by systemd-analyze);
#   ProtectSystem=strict, ReadWritePaths=, PrivateTmp=: a mount namespace in
#     which every file system but /dev, /proc and /sys is remounted read-only.
# Not simulated: RestrictAddressFamilies= (podman uses AF_UNIX only, which
# the unit allows), ProtectKernelTunables= (/sys/fs/cgroup stays writable
# under it), and systemd's own start-up (ExecStartPre=).
# The container is a throw-away image made from this host's sleep and id.
# usage: check_podman_caps.sh
# Exit status: 0 pass, 1 fail, 77 skipped (not root, or no podman, runc,
# setpriv, systemd-analyze, python3 or libseccomp, or podman cannot run a container).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unit=$here/../../packaging/envcontractd.service
dropin=$here/../../packaging/examples/envcontractd-podman.conf
seccomp=$here/unit_seccomp.py

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (the agent runs podman as root)"
for tool in podman runc setpriv unshare systemd-analyze python3; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
python3 -c 'import ctypes; ctypes.CDLL("libseccomp.so.2")' 2>/dev/null || skip "libseccomp.so.2 is missing"

work=$(mktemp -d)
name=envcontract-capstest-$$
image=localhost/envcontract-capstest:$$
# podman, refused its root privileges, takes itself for rootless and makes
# /run/user/0 (case 1 below): removed again if it was not there before.
had_run_user=no
[ -e /run/user/0 ] && had_run_user=yes
cleanup() {
  [ "$had_run_user" = yes ] || rmdir /run/user/0 2>/dev/null || true
  podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# The settings, comments left out; values of every KEY= line, space-separated.
settings() {  # settings FILE KEY
  grep -v '^[[:space:]]*[#;]' "$1" | sed -n "s/^$2=//p" | tr '\n' ' '
}
caps_of() {  # caps_of CAP_X CAP_Y... -> setpriv's -all,+x,+y
  local out=-all cap
  for cap in "$@"; do
    cap=${cap#CAP_}
    out="$out,+${cap,,}"
  done
  echo "$out"
}
expand() {  # expand @GROUP|NAME: the system calls, one a line
  case $1 in
    @*) systemd-analyze syscall-filter "$1" | sed -n '/^@/,$p' | tail -n +2 | sed 's/#.*//' | tr -d ' ' |
          grep -v '^$' | while read -r s; do expand "$s"; done ;;
    *) echo "$1" ;;
  esac
}
filter_of() {  # filter_of FILE...: what their SystemCallFilter= lines allow, in order (an allow list first)
  local line word set=$work/filter.$$
  : >"$set"
  while IFS= read -r line; do
    case $line in
      '~'*) for word in ${line#\~}; do expand "$word"; done | sort -u >"$set.minus"
            sort -u "$set" | comm -23 - "$set.minus" >"$set.new" && mv "$set.new" "$set" ;;
      *) for word in $line; do expand "$word"; done >>"$set" ;;
    esac
  done < <(cat "$@" | grep -v '^[[:space:]]*[#;]' | sed -n 's/^SystemCallFilter=//p')
  sort -u "$set" | tr '\n' ' '
}

# shellcheck disable=SC2046 # word splitting wanted: one capability a word
unit_caps=$(caps_of $(settings "$unit" CapabilityBoundingSet))
# shellcheck disable=SC2046
dropin_caps=$(caps_of $(settings "$dropin" CapabilityBoundingSet))
dropin_caps=${dropin_caps#-all}
unit_calls=$(filter_of "$unit")
dropin_calls=$(filter_of "$unit" "$dropin")
dropin_ns=$(settings "$dropin" RestrictNamespaces)
dropin_rw=$(settings "$dropin" ReadWritePaths | sed 's/^-//; s/ -/ /g')
grep -qx 'RestrictNamespaces=yes' "$unit" || fail "the unit no longer has RestrictNamespaces=yes: this test assumes it"
grep -qx 'ProtectSystem=strict' "$unit" || fail "the unit no longer has ProtectSystem=strict: this test assumes it"
grep -qx 'NoNewPrivileges=yes' "$unit" || fail "the unit no longer has NoNewPrivileges=yes: this test assumes it"
grep -q '^NoNewPrivileges=' "$dropin" && fail "the podman drop-in sets NoNewPrivileges=: this test assumes it does not"

# A container to enter: this host's sleep and id and their libraries.
root=$work/rootfs
for binary in "$(command -v sleep)" "$(command -v id)"; do
  for file in "$binary" $(ldd "$binary" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$file")"
    cp -L "$file" "$root$file"
  done
done
ln -s "$(command -v sleep)" "$root/sleep"
ln -s "$(command -v id)" "$root/id"
tar -C "$root" -c . | podman import -q - "$image" >/dev/null 2>"$work/import" ||
  skip "podman import failed: $(tail -1 "$work/import")"
# --cgroupns=private: the default on cgroup v2 hosts, so the test enters one here too.
if ! podman run -d --name "$name" --runtime runc --network none --cgroupns=private \
      --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 "$image" /sleep 600 >/dev/null 2>"$work/run"; then
  skip "podman cannot run a container here: $(tail -1 "$work/run")"
fi
podman exec -i --user 1000:1000 -- "$name" /id -u >/dev/null 2>"$work/plain" ||
  skip "podman exec fails even without the unit's restrictions: $(tail -1 "$work/plain")"

# exec_under CAPS NAMESPACES CALLS RW: podman exec under the unit with these
# (CAPS for setpriv, NAMESPACES for RestrictNamespaces= or "none", CALLS the
# allowed system calls, RW the writable paths); its output in $work/out.
exec_under() {
  # shellcheck disable=SC2016 # expanded by the inner shell
  timeout 20 unshare --mount --propagation slave -- /bin/bash -c '
    caps=$1 ns=$2 calls=$3 rw=$4 seccomp=$5; shift 5
    for p in $rw; do [ -e "$p" ] && mount --bind "$p" "$p"; done
    keep() {
      case $1 in /dev | /dev/* | /proc | /proc/* | /sys | /sys/*) return 0 ;; esac
      for p in $rw; do case $1 in "$p" | "$p"/*) return 0 ;; esac; done
      return 1
    }
    awk "{ print \$5 }" /proc/self/mountinfo | while read -r mp; do
      mp=$(printf "%b" "$mp")
      keep "$mp" || mount -o remount,bind,ro "$mp" 2>/dev/null || true
    done
    mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp
    exec setpriv --bounding-set="$caps" --inh-caps=-all --no-new-privs -- \
      python3 "$seccomp" "$calls" "$ns" -- "$@"
  ' sim "$1" "$2" "$3" "$4" "$seccomp" podman exec -i --user 1000:1000 -- "$name" /id -u \
    >"$work/out" 2>&1
}
last() { grep -v 'level=warning' "$work/out" | tail -1; }

echo "podman: $(podman --version), $(runc --version | head -1)"
started=$SECONDS

# 1. The capability bounding set and no_new_privs alone, as the tester ran it.
if setpriv --bounding-set="$unit_caps" --inh-caps=-all --no-new-privs -- \
    podman exec -i --user 1000:1000 -- "$name" /id -u >"$work/out" 2>&1; then
  fail "podman exec succeeded under the unit's capability bounding set alone"
else
  echo "unit's bounding set alone: fails: $(last)"
fi

# 2. The whole unit: fails.
if exec_under "$unit_caps" none "$unit_calls" ""; then
  fail "podman exec succeeded under the unit without the drop-in: it is not needed"
else
  echo "unit: fails: $(last)"
fi

# 3. The unit with the drop-in: succeeds.
all_caps=$unit_caps$dropin_caps
if exec_under "$all_caps" "$dropin_ns" "$dropin_calls" "$dropin_rw" && [ "$(last)" = 1000 ]; then
  echo "unit + podman drop-in: podman exec ran as uid $(last)"
else
  fail "podman exec fails under the unit with the drop-in: $(last)"
fi

# 4. Each capability, namespace and system call the drop-in adds: without it, fails.
for cap in $(settings "$dropin" CapabilityBoundingSet); do
  # shellcheck disable=SC2046 # word splitting wanted: one capability a word
  without=$(caps_of $(settings "$unit" CapabilityBoundingSet) \
    $(settings "$dropin" CapabilityBoundingSet | tr ' ' '\n' | grep -vx "$cap"))
  if exec_under "$without" "$dropin_ns" "$dropin_calls" "$dropin_rw"; then
    fail "$cap is not needed (podman exec ran without it)"
  else
    echo "without $cap: fails: $(last)"
  fi
done
for ns in $dropin_ns; do
  if exec_under "$all_caps" "$(echo " $dropin_ns " | sed "s/ $ns / /")" "$dropin_calls" "$dropin_rw"; then
    fail "the $ns namespace is not needed (podman exec ran without it)"
  else
    echo "without the $ns namespace: fails: $(last)"
  fi
done
if exec_under "$all_caps" "$dropin_ns" "$(echo " $dropin_calls " | sed 's/ mount / /; s/ umount2 / /')" "$dropin_rw"; then
  fail "mount(2) is not needed (podman exec ran without it)"
else
  echo "without mount and umount2: fails: $(last)"
fi
# Informational: which writable paths this podman needed (those that exist
# already; the drop-in makes /run/libpod and /run/containers for a fresh boot).
for path in $dropin_rw; do
  if exec_under "$all_caps" "$dropin_ns" "$dropin_calls" "$(echo " $dropin_rw " | sed "s| $path | |")"; then
    echo "without $path writable: runs (needed only when podman must create its files there)"
  else
    echo "without $path writable: fails: $(last)"
  fi
done
echo "took $((SECONDS - started)) s"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "podman drop-in: ok"
