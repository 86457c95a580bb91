#!/usr/bin/env bash
# Makes the kernel run arm64 (aarch64) executables through qemu-user-static, for the arm64
# containers of `make test-deb-arm64` and the arm64 base image (deploy/image/base.sh arm64):
# binfmt_misc mounted where it is not, and qemu-user-static's own registration
# (/usr/lib/binfmt.d/qemu-aarch64.conf, flags F: the emulator is opened now, so it also runs in
# containers, which do not have it). Nothing is done where it is registered already; where the
# kernel or a sandbox refuses, it says so and fails. Needs root (sudo otherwise).
#
#   deploy/image/binfmt.sh
#
# `make test-arm64` does not need it: it runs the arm64 programs under qemu-aarch64-static itself.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
dir=/proc/sys/fs/binfmt_misc
conf=/usr/lib/binfmt.d/qemu-aarch64.conf
if [ -e "$dir/qemu-aarch64" ] && grep -qx enabled "$dir/qemu-aarch64"; then
  exit 0
fi
if [ ! -f "$conf" ]; then
  echo "binfmt: no $conf (deploy/install-deps.sh arm64 installs qemu-user-static)" >&2
  exit 1
fi
if [ ! -e "$dir/register" ] && ! $SUDO mount -t binfmt_misc binfmt_misc "$dir"; then
  echo "binfmt: cannot mount binfmt_misc on $dir" >&2
  exit 1
fi
if ! $SUDO sh -c "cat $conf > $dir/register"; then
  echo "binfmt: the kernel refused to register $conf" >&2
  exit 1
fi
echo "binfmt: registered $(head -c 14 "$conf") -> $(sed -n 's/^interpreter //p' "$dir/qemu-aarch64")" >&2
