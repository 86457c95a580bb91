#!/usr/bin/env python3
"""`make test-image`, its arm64 half: the arm64 image of `make image`'s
manifest list (tagged IMAGE-arm64 by deploy/image/build.sh) run through
qemu-user-static (binfmt_misc) as its users run it: tests/deploy/image_test.py,
unchanged, on that image. So, as the sidecar runs it: user 65532, read-only
root filesystem with no tmpfs, no capabilities, no-new-privileges; and its
`version`, `rules check` and `replay` JSONL are the host binary's (the amd64
build's, byte for byte: the same answers on both architectures). The image
is checked to be arm64 first.

usage: tests/arm64/image_test.py IMAGE-arm64 HOST_FINGERPRINTD
"""

import os
import sys
import unittest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "deploy"))
import image_test  # noqa: E402  (tests/deploy, on the path just above)
from podman_support import podman  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    image_test.IMAGE = sys.argv[1]
    image_test.HOST_FINGERPRINTD = os.path.abspath(sys.argv[2])
    arch = podman("image", "inspect", "--format", "{{.Architecture}}", sys.argv[1]).stdout.strip()
    if arch != "arm64":
        sys.exit(f"{sys.argv[1]} is {arch}, not arm64")
    del sys.argv[1:]
    unittest.main(module=image_test, verbosity=2)
