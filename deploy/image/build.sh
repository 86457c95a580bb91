#!/usr/bin/env bash
# `make image`: builds deploy/Dockerfile with podman and prints the image's
# size. The Debian 12 base images are made first where they are missing
# (deploy/image/base.sh: no registry needed, only the Debian archive).
#
#   deploy/image/build.sh IMAGE [PACKAGE.deb ...]
#       e.g. fingerprintd:0.1.0 build-deb/fingerprintd_0.1.0_amd64.deb
#            build-deb-arm64/fingerprintd_0.1.0_arm64.deb
#
# With PACKAGE.deb (what `make image` passes: `make deb`'s package), the
# Dockerfile's `package` stage is replaced by a build context holding it, so
# the image installs that package and nothing is compiled here; without it,
# the stage builds the package from the sources, as `docker build` does.
#
# With one package per architecture (`make image`: amd64 and arm64), IMAGE is
# a manifest list of one image per package, each also tagged IMAGE-<arch>
# (fingerprintd:0.1.0-arm64): `podman run IMAGE` runs the host's,
# `--platform linux/arm64` the other. The arm64 one is built under qemu
# (binfmt_misc; its apt-get runs emulated) FROM the locally made arm64 base
# (deploy/image/base.sh arm64), given to the build as `debian:12-slim`.
#
# --network host: the build's apt-get reaches the archive the way the host
# does, with no container network to set up.
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/image/podman.sh
if [ $# -lt 1 ]; then
  echo "usage: deploy/image/build.sh IMAGE [PACKAGE.deb ...]" >&2
  exit 2
fi
image="$1"
shift

deploy/image/base.sh >/dev/null
contexts=()
trap 'rm -rf "${contexts[@]}"' EXIT
size_of() {
  local size
  size=$(podman image inspect --format '{{.Size}}' "$1")
  echo "image: $1 $(podman image inspect --format '{{.Id}}' "$1" | cut -c1-12)," \
    "$((size / 1000000)) MB ($size bytes)"
}

if [ $# -le 1 ]; then
  from_package=()
  if [ $# -eq 1 ]; then
    contexts+=("$(mktemp -d)")
    cp "$1" "${contexts[0]}/fingerprintd.deb"
    from_package=(--build-context "package=${contexts[0]}")
    echo "image: the package stage is $1" >&2
  fi
  podman build --network host --ignorefile deploy/Dockerfile.dockerignore \
    "${from_package[@]}" -f deploy/Dockerfile -t "$image" .
  size_of "$image"
  exit 0
fi

# One image per package's architecture, under one manifest list.
if podman manifest exists "$image" 2>/dev/null; then
  podman manifest rm "$image" >/dev/null
elif podman image exists "$image"; then
  podman untag "$image" "$image"
fi
for package in "$@"; do
  arch="$(dpkg-deb -f "$package" Architecture)"
  context="$(mktemp -d)"
  contexts+=("$context")
  cp "$package" "$context/fingerprintd.deb"
  base=()
  if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    deploy/image/base.sh "$arch" 12-slim >/dev/null
    base=(--build-context "debian:12-slim=docker-image://localhost/debian-$arch:12-slim")
  fi
  echo "image: $image for linux/$arch, the package stage is $package" >&2
  podman build --network host --ignorefile deploy/Dockerfile.dockerignore --platform "linux/$arch" \
    --build-context "package=$context" "${base[@]}" -f deploy/Dockerfile \
    -t "$image-$arch" --manifest "$image" .
  size_of "$image-$arch"
done
podman manifest inspect "$image" |
  python3 -c 'import json, sys; m = json.load(sys.stdin)["manifests"]; print("image: manifest list",
    sys.argv[1] + ":", ", ".join(i["platform"]["os"] + "/" + i["platform"]["architecture"] for i in m))' "$image"
