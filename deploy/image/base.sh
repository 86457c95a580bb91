#!/usr/bin/env bash
# Makes the Debian 12 base images deploy/Dockerfile starts FROM (debian:12 and
# debian:12-slim) from the Debian archive with mmdebstrap, when they are not
# already in podman's local storage. For hosts that reach the Debian archive
# but not Docker Hub; where debian:12 can be pulled, a pulled one is used as is.
#
#   deploy/image/base.sh       (make image, make test-deb)
#   deploy/image/base.sh arm64 [12|12-slim]   (make test-deb-arm64, make image)
#
# With `arm64` it makes the same two for arm64 (mmdebstrap --architectures=arm64,
# whose maintainer scripts run under qemu-user-static through binfmt_misc:
# deploy/image/binfmt.sh registers it), imported as arm64 images named
# localhost/debian-arm64:12 and localhost/debian-arm64:12-slim, so the host's
# debian:12 stays the amd64 one.
#
# Both are minbase (Essential and Priority: required packages, as Docker
# Hub's debian images are) with a merged /usr (usr-is-merged, not usrmerge
# and the perl it pulls), bookworm, bookworm-updates and bookworm-security in
# their apt sources, and Docker Hub's apt settings (its docker-clean and
# docker-no-languages): no package caches or downloaded .debs left in a
# layer, no translations, so `rm -rf /var/lib/apt/lists/*` is all a
# Dockerfile cleans. The -slim one leaves out documentation, manual pages and
# locales as Docker Hub's -slim does (dpkg path-exclude, kept in the image for
# packages installed later).
set -euo pipefail
source "$(dirname "$0")/podman.sh"

MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
SOURCES=("deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main"
         "deb $SECURITY bookworm-security main")
CLEAN='rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true'
COMMON=(--variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
        --aptopt="DPkg::Post-Invoke { \"$CLEAN\"; }" --aptopt="APT::Update::Post-Invoke { \"$CLEAN\"; }"
        --aptopt='Dir::Cache::pkgcache ""' --aptopt='Dir::Cache::srcpkgcache ""'
        --aptopt='Acquire::Languages "none"')
SLIM=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
      --dpkgopt='path-exclude=/usr/share/locale/*'
      --dpkgopt='path-include=/usr/share/locale/locale.alias'
      --dpkgopt='path-exclude=/usr/share/lintian/*' --dpkgopt='path-exclude=/usr/share/linda/*')

ARCH="${1:-amd64}"
case "$ARCH" in
  amd64) REPO=docker.io/library/debian; ARCH_OPTS=() ;;
  arm64) REPO=localhost/debian-arm64; ARCH_OPTS=(--architectures=arm64)
         "$(dirname "$0")/binfmt.sh" ;;
  *) echo "usage: deploy/image/base.sh [amd64|arm64] [12|12-slim ...]" >&2; exit 2 ;;
esac

make_base() {  # make_base TAG [mmdebstrap options...]
  local tag="$REPO:$1"
  shift
  if podman image exists "$tag"; then
    return 0
  fi
  local tar log
  tar="$(mktemp --suffix=.tar)"
  log="$(mktemp --suffix=.log)"
  trap 'rm -f "$tar" "$log"' RETURN
  echo "base: $tag from $MIRROR (mmdebstrap --variant=minbase ${ARCH_OPTS[*]} bookworm)" >&2
  if ! mmdebstrap --quiet "${COMMON[@]}" "${ARCH_OPTS[@]}" "$@" bookworm "$tar" "${SOURCES[@]}" \
      >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "base: mmdebstrap failed for $tag" >&2
    return 1
  fi
  podman import --quiet --arch "$ARCH" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$tar" "$tag" >/dev/null
}

shift || true
variants=("$@")
if [ ${#variants[@]} -eq 0 ]; then
  variants=(12 12-slim)
fi
for variant in "${variants[@]}"; do
  case "$variant" in
    12) make_base 12 ;;
    12-slim) make_base 12-slim "${SLIM[@]}" ;;
    *) echo "base: no variant '$variant' (12, 12-slim)" >&2; exit 2 ;;
  esac
done
podman images --filter "reference=$REPO"
