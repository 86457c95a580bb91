#!/usr/bin/env bash
# `make image`: builds deploy/Dockerfile with podman and prints the image's
# size. The Debian 12 base images are made first where they are missing
# (deploy/image/base.sh: no registry needed, only the Debian archive).
#
#   deploy/image/build.sh IMAGE [PACKAGE.deb]
#       e.g. fingerprintd:0.1.0 build-deb/fingerprintd_0.1.0_amd64.deb
#
# With PACKAGE.deb (what `make image` passes: `make deb`'s package), the
# Dockerfile's `package` stage is replaced by a build context holding it, so
# the image installs that package and nothing is compiled here; without it,
# the stage builds the package from the sources, as `docker build` does.
#
# --network host: the build's apt-get reaches the archive the way the host
# does, with no container network to set up.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/image/podman.sh
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: deploy/image/build.sh IMAGE [PACKAGE.deb]" >&2
  exit 2
fi
image="$1"
package="${2:-}"

deploy/image/base.sh >/dev/null
from_package=()
if [ -n "$package" ]; then
  context="$(mktemp -d)"
  trap 'rm -rf "$context"' EXIT
  cp "$package" "$context/fingerprintd.deb"
  from_package=(--build-context "package=$context")
  echo "image: the package stage is $package" >&2
fi
podman build --network host --ignorefile deploy/Dockerfile.dockerignore \
  "${from_package[@]}" -f deploy/Dockerfile -t "$image" .
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "image: $image $(podman image inspect --format '{{.Id}}' "$image" | cut -c1-12)," \
  "$((size / 1000000)) MB ($size bytes)"
