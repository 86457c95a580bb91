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
for group in "$@"; do
  case "$group" in
    containers) PACKAGES+=("${CONTAINER_TOOLS[@]}") ;;
    deb) PACKAGES+=("${DEB_TOOLS[@]}") ;;
    *) echo "install-deps: unknown group '$group' (containers, deb)" >&2; exit 2 ;;
  esac
done

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Packages whose service the postinst tries to start (prometheus) must not
# leave dpkg half-configured where no init system runs.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" || {
  $SUDO dpkg --configure -a
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
