#!/usr/bin/env python3
"""The Debian package (`make deb`) installed as an operator installs it
(`make test-deb`), into fresh containers of the locally made Debian 12 base
(deploy/image/base.sh):

- `apt-get install ./fingerprintd_<version>_<arch>.deb` pulls the libraries
  its shlibdeps named; `fingerprintd version`, `fingerprintd config check
  /etc/fingerprintd/fingerprintd.yaml` and `fingerprintd rules check` of the
  installed rule pack pass; the postinst made the system user; the unit,
  README and config are where the package says;
- `apt-get purge --autoremove` leaves no file of the package and nothing
  else behind but the system user (Debian keeps those);
- with systemd as PID 1 (a debian:12 container with systemd added), apt's
  install starts the unit (Type=notify: active only after READY=1),
  `systemctl reload` (SIGHUP) keeps it active with the same main PID, and
  `systemctl stop` ends it with status 0. The unit's sandboxing
  (ProtectSystem=, PrivateTmp=, ...) makes mount namespaces, which takes
  CAP_SYS_ADMIN: podman's default capabilities lack it (the unit would fail
  with 226/NAMESPACE), so that container gets it, and nothing else.

The containers are on podman's own network (no port of the host is taken).

usage: deb_test.py PACKAGE.deb
"""

import os
import re
import shlex
import sys
import tempfile
import time
import unittest

from podman_support import make_base_images, podman
from prometheus_e2e_support import wait_for

DEB = ""
BASE = "docker.io/library/debian:12"
# Files and directories whose change is the system's bookkeeping, not the package's leftovers.
BOOKKEEPING = re.compile(r"^/(proc|sys|dev|run|tmp|var/(lib/(apt|dpkg)|cache|log))(/|$)")


class DebTest(unittest.TestCase):
    def container(self, name, *run_args):
        """A detached container of `run_args` (image, command), removed at the end."""
        container = f"fingerprintd-deb-test-{name}-{os.getpid()}"
        self.addCleanup(podman, "rm", "-f", "-t", "0", container, check=False, quiet=True)
        podman("run", "-d", "--name", container, "-v", f"{os.path.dirname(DEB)}:/pkg:ro",
               *run_args)
        return container

    def sh(self, container, command, check=True, quiet=False):
        """`command` run by sh in the container; stdout and stderr together."""
        run = podman("exec", container, "sh", "-c", command + " 2>&1", check=False, quiet=quiet)
        if check:
            self.assertEqual(run.returncode, 0, f"{command}:\n{run.stdout}{run.stderr}")
        return run.stdout

    def files(self, container):
        listing = self.sh(container, "find / -xdev -path /pkg -prune -o -print")
        return {f for f in listing.splitlines() if not BOOKKEEPING.match(f)}

    def install(self, container):
        self.sh(container, "apt-get update -qq")
        out = self.sh(container, "DEBIAN_FRONTEND=noninteractive apt-get install -y "
                      f"--no-install-recommends /pkg/{shlex.quote(os.path.basename(DEB))}")
        print(out[-1500:], file=sys.stderr)

    def test_installs_runs_its_checks_and_purges_cleanly(self):
        c = self.container("install", BASE, "sleep", "infinity")
        before = self.files(c)
        self.install(c)
        version = re.match(r"fingerprintd_([^_]+)_", os.path.basename(DEB)).group(1)
        self.assertIn(version, self.sh(c, "fingerprintd version"))
        self.assertIn(": ok, 1 source(s)",
                      self.sh(c, "fingerprintd config check /etc/fingerprintd/fingerprintd.yaml"))
        print(self.sh(c, "fingerprintd rules check /usr/share/fingerprintd/rules"),
              file=sys.stderr)
        listed = self.sh(c, "dpkg -L fingerprintd").split()
        for path in ("/usr/bin/fingerprintd", "/usr/share/fingerprintd/rules/facts.yaml",
                     "/usr/share/fingerprintd/rules/README.md",
                     "/usr/share/doc/fingerprintd/README.md",
                     "/lib/systemd/system/fingerprintd.service",
                     "/etc/fingerprintd/fingerprintd.yaml"):
            self.assertIn(path, listed)
        depends = self.sh(c, "dpkg-query -W -f '${Depends}' fingerprintd")
        print(f"Depends: {depends}", file=sys.stderr)
        for package in ("adduser", "procps", "libssl3", "libre2-9",
                        "libyaml-cpp0.7", "libstdc++6"):
            self.assertIn(package, depends)
        self.assertEqual(self.sh(c, "dpkg-query -W -f '${Conffiles}' fingerprintd").split()[0],
                         "/etc/fingerprintd/fingerprintd.yaml")
        user = self.sh(c, "getent passwd fingerprintd").strip().split(":")
        self.assertLess(int(user[2]), 1000, user)  # a system user
        self.assertEqual(user[6], "/usr/sbin/nologin")

        self.sh(c, "DEBIAN_FRONTEND=noninteractive apt-get purge -y --autoremove fingerprintd")
        self.assertIn("is not installed", self.sh(c, "dpkg -s fingerprintd", check=False))
        # The user's backups of the account files (adduser's `-` copies) are all that may stay.
        accounts = {f"/etc/{name}-" for name in ("passwd", "group", "shadow", "gshadow")}
        self.assertEqual(self.files(c) - before - accounts, set())
        self.assertEqual(before - self.files(c), set())
        self.sh(c, "getent passwd fingerprintd")  # kept, as Debian's policy asks

    def test_systemd_starts_reloads_and_stops_the_unit(self):
        image = f"localhost/fingerprintd-deb-test-systemd:{os.getpid()}"
        self.addCleanup(podman, "rmi", "-f", image, check=False, quiet=True)
        context = tempfile.mkdtemp(prefix="fingerprintd-deb-test-")
        self.addCleanup(os.rmdir, context)
        podman("build", "-t", image, "-f", "-", context, input_text=(
            f"FROM {BASE}\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install"
            " -y --no-install-recommends systemd && rm -rf /var/lib/apt/lists/*\n"))
        c = self.container("systemd", "--systemd=always", "--cap-add", "SYS_ADMIN", image,
                           "/lib/systemd/systemd")
        wait_for("systemd in the container reaching running or degraded",
                 lambda: self.sh(c, "systemctl is-system-running", check=False, quiet=True).strip()
                 in ("running", "degraded"), timeout=60)
        self.install(c)
        show = "systemctl show fingerprintd -p Type -p ActiveState -p SubState -p MainPID"

        def state():
            return dict(line.split("=", 1) for line in self.sh(c, show, quiet=True).split())
        started = wait_for("the unit active after apt's install",
                           lambda: (lambda s: s if s["ActiveState"] in ("active", "failed")
                                    else None)(state()), timeout=30)
        print(f"{show}: {started}\n" + self.sh(c, "systemctl status --no-pager fingerprintd",
                                               check=False), file=sys.stderr)
        self.assertEqual(started["ActiveState"], "active",
                         self.sh(c, "journalctl -u fingerprintd --no-pager", check=False))
        self.assertEqual(started["Type"], "notify")
        # DynamicUser=yes takes the static user of the unit's name: the postinst's.
        self.assertEqual(self.sh(c, f"stat -c %U /proc/{started['MainPID']}").strip(),
                         "fingerprintd")
        self.sh(c, "systemctl reload fingerprintd")  # returns after RELOADING=1 ... READY=1
        reloaded = state()
        self.assertEqual((reloaded["ActiveState"], reloaded["MainPID"]),
                         ("active", started["MainPID"]))
        began = time.monotonic()
        self.sh(c, "systemctl stop fingerprintd")
        print(f"systemctl stop: {time.monotonic() - began:.2f} s", file=sys.stderr)
        result = self.sh(c, "systemctl show fingerprintd -p Result -p ExecMainStatus"
                         " -p ActiveState")
        print(result + self.sh(c, "journalctl -u fingerprintd --no-pager", check=False),
              file=sys.stderr)
        self.assertEqual(dict(line.split("=", 1) for line in result.split()),
                         {"Result": "success", "ExecMainStatus": "0", "ActiveState": "inactive"})


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
        sys.exit(__doc__)
    DEB = os.path.abspath(sys.argv[1])
    del sys.argv[1:]
    make_base_images()
    unittest.main(verbosity=2)
