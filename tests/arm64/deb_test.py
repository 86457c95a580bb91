#!/usr/bin/env python3
"""`make test-deb-arm64`: the arm64 package (`make deb-arm64`) installed as an
operator on a DGX Spark installs it, in a fresh arm64 Debian 12 container run
through qemu-user-static (binfmt_misc, deploy/image/binfmt.sh) from the
locally made arm64 base (deploy/image/base.sh arm64): tests/deploy/deb_test.py's
install test, unchanged, on that base. `apt-get install ./...arm64.deb` pulls
the :arm64 libraries its shlibdeps named; `fingerprintd version`, `config
check` of its default config and `rules check` of the installed rule pack
pass; `apt-get purge --autoremove` leaves nothing behind but the system user.

deb_test.py's second test (the unit under systemd as PID 1) is not run here:
it is architecture-independent (the unit file, the postinst) and is run by
`make test-deb`.

usage: tests/arm64/deb_test.py PACKAGE_arm64.deb
"""

import os
import subprocess
import sys
import unittest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "deploy"))
import deb_test  # noqa: E402  (tests/deploy, on the path just above)

BASE = "localhost/debian-arm64:12"

if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]) or \
            not sys.argv[1].endswith("_arm64.deb"):
        sys.exit(__doc__)
    deb_test.DEB = os.path.abspath(sys.argv[1])
    deb_test.BASE = BASE
    subprocess.run([os.path.join(SOURCE_DIR, "deploy", "image", "base.sh"), "arm64", "12"],
                   check=True, stdout=subprocess.DEVNULL)
    del sys.argv[1:]
    unittest.main(module=deb_test, verbosity=2,
                  defaultTest="DebTest.test_installs_runs_its_checks_and_purges_cleanly")
