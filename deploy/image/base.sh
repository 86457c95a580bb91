#!/usr/bin/env bash
# Makes the Debian 12 base images deploy/Dockerfile starts FROM (debian:12 and
# debian:12-slim) from the Debian archive with mmdebstrap, when they are not
# already in podman's local storage. For hosts that reach the Debian archive
# but not Docker Hub; where debian:12 can be pulled, a pulled one is used as is.
#
#   deploy/image/base.sh       (make image, make test-deb)
#
# Both are minbase (Essential and Priority: required packages, as Docker
# Hub's debian images are), with bookworm, bookworm-updates and
# bookworm-security in their apt sources. The -slim one leaves out
# documentation, manual pages and locales as Docker Hub's -slim does
# (dpkg path-exclude, kept in the image for packages installed later).
set -euo pipefail
source "$(dirname "$0")/podman.sh"

MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
SOURCES=("deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main"
         "deb $SECURITY bookworm-security main")
SLIM=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
      --dpkgopt='path-exclude=/usr/share/locale/*'
      --dpkgopt='path-include=/usr/share/locale/locale.alias'
      --dpkgopt='path-exclude=/usr/share/lintian/*' --dpkgopt='path-exclude=/usr/share/linda/*')

make_base() {  # make_base TAG [mmdebstrap options...]
  local tag="docker.io/library/debian:$1"
  shift
  if podman image exists "$tag"; then
    return 0
  fi
  local tar
  tar="$(mktemp --suffix=.tar)"
  trap 'rm -f "$tar"' RETURN
  echo "base: $tag from $MIRROR (mmdebstrap --variant=minbase bookworm)" >&2
  mmdebstrap --quiet --variant=minbase "$@" bookworm "$tar" "${SOURCES[@]}"
  podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' "$tar" "$tag" >/dev/null
}

make_base 12
make_base 12-slim "${SLIM[@]}"
podman images --filter reference=docker.io/library/debian
