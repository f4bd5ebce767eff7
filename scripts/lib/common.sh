# Shared by scripts/run and scripts/test: installing Debian packages and building.
# Sourced, not executed.

# Build dependencies: every library comes from Debian 12, nothing is downloaded.
BUILD_PACKAGES=(
  g++ cmake ninja-build pkg-config ccache
  libyaml-cpp-dev libboost-dev libcpp-httplib-dev libsqlite3-dev
  libspdlog-dev nlohmann-json3-dev libcli11-dev libelf-dev libdw-dev libsystemd-dev nettle-dev zlib1g-dev
  libre2-dev patchelf
)
# The demo host builds real wheels of its stand-ins (pip wheel, offline) and
# provisioning makes venvs: Debian's python3 with pip, setuptools and wheel.
DEMO_PACKAGES=(python3 python3-venv python3-pip python3-setuptools python3-wheel)
# What the test suite needs on top.
TEST_PACKAGES=(libgtest-dev libgmock-dev clang-format elfutils python3 gcc-multilib clang
  python3-venv python3-pip python3-setuptools python3-wheel python3-websocket python3-jwt python3-yaml
  libclang-rt-14-dev python3-jsonschema sqlite3 chromium prometheus
  libxml2-utils lintian patchelf curl wrk nginx-light man-db prometheus-alertmanager bubblewrap
  podman runc uidmap docker.io time)

# ccache keys on relative paths, so a fresh clone in another folder (as CI
# makes) reuses what an earlier build compiled.
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1

# Installs the packages that are missing; silent when all are there.
ensure_packages() {
  local missing=()
  local package
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "error: missing packages ${missing[*]}; run as root or install sudo" >&2
      return 1
    }
    sudo=(sudo)
  fi
  echo "Installing ${missing[*]} ..." >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
}

# configure BUILD_DIR [cmake args...]: a Ninja build directory.
configure() {
  local build_dir=$1
  shift
  cmake -S . -B "$build_dir" -G Ninja "$@" >"$build_dir.configure.log" 2>&1 || {
    cat "$build_dir.configure.log" >&2
    return 1
  }
}

# configure_and_build BUILD_DIR [cmake args...]: every target, the tests included.
configure_and_build() {
  local build_dir=$1
  shift
  # Our own builds hold warnings as errors; a packager's plain build does not.
  configure "$build_dir" -DENVCONTRACT_WERROR=ON "$@"
  cmake --build "$build_dir"
}
