#!/usr/bin/env bash
# Installs the Debian 12 packages fingerprintd builds against, and nothing else.
# Idempotent: calls apt-get only for packages that are not installed yet, so
# `make demo` / `make test` on a machine that already has them never touches apt.
# This is the only place the project's packages come from (README, CI, Makefile).
#
#   deploy/install-deps.sh                  what `make demo` and `make test` need
#   deploy/install-deps.sh containers deb   that, and the optional groups named
#
# The optional groups are host tools that only some targets ask for, so a
# newcomer's `make demo` does not pull a container engine:
#   containers  make image / test-image / test-deb: podman with runc (crun
#               refuses some kernels' cgroup layouts), mmdebstrap for the
#               locally made Debian 12 base image (deploy/image/base.sh)
#   deb         make deb: lintian, run on the package it builds
#   arm64       make deb-arm64 / test-arm64 / test-deb-arm64: Debian's arm64
#               cross toolchain, qemu-user-static, and the build's libraries
#               as :arm64 multiarch packages (dpkg --add-architecture arm64)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config make clang-format
  libre2-dev
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev
  prometheus-cpp-dev
  libyaml-cpp-dev
  nlohmann-json3-dev
  libcli11-dev
  libgtest-dev libgmock-dev
  zlib1g-dev
  libssl-dev  # the Alertmanager sink's https:// (Boost.Beast over OpenSSL)
  python3  # tests/golden/tools/check_fixtures.py, run by ctest
  file     # cpack's DEB generator looks for ELF files with it (make deb, the image)
  # Real peers for the end-to-end tests (make test); none is linked in:
  prometheus              # promtool check/test rules; e2e scrape + alert firing
  prometheus-alertmanager # e2e: the daemon's pushed alerts
  chromium                # e2e: the HTML page rendered headless
  socat                   # e2e: socket sources fed by a real client
  openssl                 # e2e: certificates for the Alertmanager served over TLS
  # Hardening (.ci/run, Makefile): clang 14 with libFuzzer and the sanitizer
  # runtimes for `make fuzz-smoke` / `make test-tsan`, valgrind for `make
  # memcheck`, Google Benchmark for the micro-benchmarks (bench/micro).
  clang libclang-rt-14-dev
  valgrind
  libbenchmark-dev
)
# kubectl (for `kubectl kustomize` of deploy/k8s): Debian's kubernetes-client,
# unless a kubectl is already there (another package owning /usr/bin/kubectl,
# e.g. the Google Cloud SDK's, makes kubernetes-client fail to install).
if ! command -v kubectl >/dev/null 2>&1; then
  PACKAGES+=(kubernetes-client)
fi

CONTAINER_TOOLS=(podman runc mmdebstrap)
DEB_TOOLS=(lintian)
# The cross build (cmake/aarch64-linux-gnu.cmake) links what the native one
# links, as :arm64 packages installed beside the amd64 ones. nlohmann-json3-dev
# and libcli11-dev (header-only, Architecture: all) serve both.
ARM64_TOOLS=(
  crossbuild-essential-arm64 qemu-user-static
  arch-test  # mmdebstrap's check that arm64 programs run (deploy/image/base.sh arm64)
  libre2-dev:arm64
  libboost-dev:arm64 libboost-system-dev:arm64
  libspdlog-dev:arm64 libfmt-dev:arm64
  zlib1g-dev:arm64
  libssl-dev:arm64
  libgtest-dev:arm64 libgmock-dev:arm64
  # libyaml-cpp-dev and prometheus-cpp-dev (through its Depends: civetweb)
  # are Multi-Arch: no, so their :arm64 packages would remove the amd64 ones.
  # Their runtime libraries and what prometheus-cpp's CMake config finds are
  # installed; the two -dev packages are unpacked under ARM64_DEV_ROOT below.
  libyaml-cpp0.7:arm64
  libprometheus-cpp-core1.0:arm64 libprometheus-cpp-pull1.0:arm64
  libprometheus-cpp-push1.0:arm64
  libcivetweb-dev:arm64 libcurl4-openssl-dev:arm64
)
ARM64_DEV_ROOT="${FINGERPRINTD_ARM64_DEV_ROOT:-/opt/fingerprintd-cross/arm64}"
ARM64_UNPACKED=(libyaml-cpp-dev:arm64 prometheus-cpp-dev:arm64)
arm64=0
for group in "$@"; do
  case "$group" in
    containers) PACKAGES+=("${CONTAINER_TOOLS[@]}") ;;
    deb) PACKAGES+=("${DEB_TOOLS[@]}") ;;
    arm64) PACKAGES+=("${ARM64_TOOLS[@]}"); arm64=1 ;;
    *) echo "install-deps: unknown group '$group' (containers, deb, arm64)" >&2; exit 2 ;;
  esac
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# The two Multi-Arch: no -dev packages of the arm64 group, unpacked (not
# installed) into ARM64_DEV_ROOT: their headers and CMake configs, with the
# shared libraries they name linked to the installed :arm64 runtime packages,
# so the cross build links what the arm64 package then depends on. The
# unpacked versions are the runtime packages' (a stamp says which), so this
# runs again only when those change.
unpack_arm64_dev() {
  local want have pkg dir lib
  want="$(dpkg-query -W -f='${Package}=${Version}\n' libyaml-cpp0.7:arm64 \
    libprometheus-cpp-core1.0:arm64 | sort)"
  have="$(cat "$ARM64_DEV_ROOT/.unpacked" 2>/dev/null || true)"
  if [ "$want" = "$have" ]; then
    return 0
  fi
  echo "install-deps: unpacking ${ARM64_UNPACKED[*]} into $ARM64_DEV_ROOT" >&2
  dir="$(mktemp -d)"
  (cd "$dir" && apt-get download -q -o APT::Sandbox::User=root \
    "libyaml-cpp-dev:arm64=$(dpkg-query -W -f='${Version}' libyaml-cpp0.7:arm64)" \
    "prometheus-cpp-dev:arm64=$(dpkg-query -W -f='${Version}' libprometheus-cpp-core1.0:arm64)")
  $SUDO rm -rf "$ARM64_DEV_ROOT"
  $SUDO mkdir -p "$ARM64_DEV_ROOT"
  for pkg in "$dir"/*.deb; do
    $SUDO dpkg-deb -x "$pkg" "$ARM64_DEV_ROOT"
  done
  rm -rf "$dir"
  for lib in $(dpkg -L libyaml-cpp0.7:arm64 libprometheus-cpp-core1.0:arm64 \
      libprometheus-cpp-pull1.0:arm64 libprometheus-cpp-push1.0:arm64 | grep '\.so\.'); do
    $SUDO ln -sf "$lib" "$ARM64_DEV_ROOT$lib"
  done
  echo "$want" | $SUDO tee "$ARM64_DEV_ROOT/.unpacked" >/dev/null
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  if [ "$arm64" = 1 ]; then
    unpack_arm64_dev
  fi
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
if [ "$arm64" = 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
# Packages whose service the postinst tries to start (prometheus) must not
# leave dpkg half-configured where no init system runs.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" || {
  $SUDO dpkg --configure -a
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
if [ "$arm64" = 1 ]; then
  unpack_arm64_dev
fi
