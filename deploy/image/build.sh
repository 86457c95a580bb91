#!/usr/bin/env bash
# `make image`: builds deploy/Dockerfile with podman and prints the image's
# size. The Debian 12 base images are made first where they are missing
# (deploy/image/base.sh: no registry needed, only the Debian archive).
#
#   deploy/image/build.sh IMAGE      e.g. fingerprintd:0.1.0
#
# --network host: the build's apt-get reaches the archive the way the host
# does, with no container network to set up.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/image/podman.sh
image="${1:?usage: deploy/image/build.sh IMAGE}"

deploy/image/base.sh >/dev/null
podman build --network host --ignorefile deploy/Dockerfile.dockerignore \
  -f deploy/Dockerfile -t "$image" .
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "image: $image $(podman image inspect --format '{{.Id}}' "$image" | cut -c1-12)," \
  "$((size / 1000000)) MB ($size bytes)"
