# Sourced by the image and package scripts: `podman` with the project's
# containers.conf (see there why), whatever the host's defaults are.
# A podman that already works unchanged is used unchanged by a user: only the
# scripts and tests go through this.
export CONTAINERS_CONF
CONTAINERS_CONF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/containers.conf"
