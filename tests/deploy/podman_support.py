"""Shared pieces of the image and package tests (image_test.py, deb_test.py):
podman with the project's containers.conf (deploy/image/podman.sh says why),
each command printed as it runs, and the repository's root. Python standard
library only.
"""

import os
import shlex
import subprocess
import sys

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["CONTAINERS_CONF"] = os.path.join(SOURCE_DIR, "deploy", "image", "containers.conf")
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "integration"))


def podman(*args, check=True, quiet=False, input_text=None):
    """Runs podman, printed as `$ podman ...` unless quiet; its stdout and
    stderr apart in the result; input_text on its stdin. check: a non-zero
    exit fails the test."""
    if not quiet:
        print("$ podman " + shlex.join(args), file=sys.stderr, flush=True)
    run = subprocess.run(["podman", *args], capture_output=True, text=True, input=input_text)
    if check and run.returncode != 0:
        raise AssertionError(f"podman {shlex.join(args)} exited {run.returncode}:\n"
                             f"{run.stdout}{run.stderr}")
    return run


def make_base_images():
    """debian:12 and debian:12-slim in podman's storage (deploy/image/base.sh)."""
    subprocess.run([os.path.join(SOURCE_DIR, "deploy", "image", "base.sh")], check=True,
                   stdout=subprocess.DEVNULL)
