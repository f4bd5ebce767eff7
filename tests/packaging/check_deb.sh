#!/bin/sh
# Builds the Debian package from a build dir and checks it the way a user
# meets it: contents, conffiles, dependencies, the systemd unit, the
# installed binaries and contracts, and lintian.
# usage: check_deb.sh BUILD_DIR
set -eu
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cpack --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  exit 1
}
deb=$(ls "$work"/out/envcontract_*.deb)
echo "built $(basename "$deb")"

dpkg-deb -c "$deb" >"$work/contents"
for path in ./usr/bin/envcontractd ./usr/bin/fleetctl ./lib/systemd/system/envcontractd.service \
  ./lib/systemd/system/envcontract-fleet.service ./etc/envcontract/fleet.env \
  ./etc/envcontract/agent.yaml ./usr/share/envcontract/contracts/kunlunxin.yaml \
  ./usr/share/doc/envcontract/copyright ./usr/share/doc/envcontract/changelog.gz \
  ./usr/share/doc/envcontract/agent.md ./usr/share/doc/envcontract/containers.md \
  ./usr/share/doc/envcontract/examples/envcontractd-nsenter.conf \
  ./usr/share/doc/envcontract/examples/envcontractd-podman.conf ./usr/share/man/man1/envcontractd.1.gz \
  ./usr/share/man/man1/fleetctl.1.gz ./usr/share/envcontract/prometheus/envcontract-rules.yml \
  ./usr/share/envcontract/ci/github-job-started.sh ./usr/share/doc/envcontract/ci.md; do
  grep -q " $path\$" "$work/contents" || {
    echo "missing from the package: $path"
    exit 1
  }
done

depends=$(dpkg-deb -f "$deb" Depends)
for library in libsqlite3 libyaml-cpp libelf libsystemd libre2; do
  case "$depends" in
    *"$library"*) ;;
    *)
      echo "Depends lacks $library: $depends"
      exit 1
      ;;
  esac
done

dpkg-deb -e "$deb" "$work/control"
for conffile in /etc/envcontract/agent.yaml /etc/envcontract/fleet.env; do
  grep -qx "$conffile" "$work/control/conffiles" || {
    echo "$conffile is not a conffile"
    exit 1
  }
done

dpkg-deb -x "$deb" "$work/root"

# The description reads as written: no line of it starts with the ';' that
# joins a CMake list.
if dpkg-deb -f "$deb" Description | grep -q '^ *;'; then
  echo "the package's Description has lines starting with ';':"
  dpkg-deb -f "$deb" Description
  exit 1
fi

# The CI runner's hook (docs/ci.md) is a program the runner runs.
grep -q '^-rwxr-xr-x .* ./usr/share/envcontract/ci/github-job-started.sh$' "$work/contents" || {
  echo "github-job-started.sh is not installed executable:"
  grep 'github-job-started' "$work/contents"
  exit 1
}

# Every document the shipped docs, unit files and configs name (docs/NAME.md,
# a schema) is shipped beside them.
docs="$work/root/usr/share/doc/envcontract"
named=$(grep -rIhoE 'docs/[A-Za-z_]+\.(md|json)|[a-z]+\.schema\.json' "$docs" \
  "$work/root/lib/systemd/system" "$work/root/etc/envcontract" | sed 's|^docs/||' | sort -u)
for name in $named; do
  [ -f "$docs/$name" ] || {
    echo "the package's docs name $name, which it does not ship"
    exit 1
  }
done
echo "docs: every document named is shipped ($(echo "$named" | wc -l) names)"
"$work/root/usr/bin/envcontractd" --version
"$work/root/usr/bin/fleetctl" --version
"$work/root/usr/bin/envcontractd" validate "$work/root"/usr/share/envcontract/contracts/*.yaml

# Every verb has its section in the man pages, and they render without a warning.
for page in envcontractd fleetctl; do
  file="$work/root/usr/share/man/man1/$page.1.gz"
  for verb in $("$work/root/usr/bin/$page" --help | awk '/^Subcommands:/ { l = 1; next }
      l && /^  [a-z]/ { print $1 }'); do
    zcat "$file" | grep -qx ".SS $page $verb" || {
      echo "the man page of $page has no section for '$verb'"
      exit 1
    }
  done
  warnings=$(man --warnings -l -Tutf8 -Z "$file" 2>&1 >/dev/null || true)
  [ -z "$warnings" ] || {
    echo "the man page of $page renders with warnings: $warnings"
    exit 1
  }
done
echo "man pages: ok"

if command -v systemd-analyze >/dev/null; then
  # Verified in place of the installed binary, which this machine need not have.
  for unit in envcontractd.service envcontract-fleet.service; do
    sed -e "s|/usr/bin/envcontractd|$work/root/usr/bin/envcontractd|" \
      -e "s|/etc/envcontract/fleet.env|$work/root/etc/envcontract/fleet.env|" \
      "$work/root/lib/systemd/system/$unit" >"$work/$unit"
    systemd-analyze verify "$work/$unit"
  done
  echo "systemd-analyze verify: ok"
else
  echo "systemd-analyze missing: unit not verified"
fi

if command -v lintian >/dev/null; then
  lintian --fail-on error,warning "$deb"
  echo "lintian: ok"
else
  echo "lintian missing: package not linted (scripts/test installs it)"
  exit 77
fi
