#!/usr/bin/env python3
"""The container image (deploy/Dockerfile, `make image`) run with podman as
its users run it (`make test-image`):

- `version` and `rules check` answer as the host binary's do, as user 65532;
- `replay` of examples/ mounted read-only prints the host binary's JSONL,
  byte for byte;
- `run` as deploy/k8s/sidecar runs it: user 65532, read-only root filesystem
  (no tmpfs either), no capabilities, no-new-privileges, the sidecar's config,
  a writable checkpoint volume, and the log directory as the pod's emptyDir
  is (fsGroup 65532, setgid; tee's umask 0002 makes the log group-writable,
  for the sidecar's release_read_bytes). An
  example log written into the directory gives the incident on /incidents,
  the ranks on /metrics (from the host, through a published port) and a JSONL
  line on the container's stdout; /readyz answers; `podman stop` (SIGTERM)
  ends it with exit 0 inside its 2 s (else podman would SIGKILL: 137) with
  the checkpoint written; a second container on the same volume resumes from
  it: the incident is back on /incidents with the same id, never written to
  stdout again, and only the bytes after the checkpoint are read;
- the image holds no compiler, no -dev package and none of
  deploy/install-deps.sh's packages (build or test-only);
- README's quick start runs the image with the sidecar test's flags, mounts
  and arguments.

Every container and volume started is removed, even on failure. The podman
commands are printed as they run.

usage: image_test.py IMAGE HOST_FINGERPRINTD
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from podman_support import SOURCE_DIR, podman
from prometheus_e2e_support import free_port, get, wait_for

IMAGE = HOST_FINGERPRINTD = ""
EXAMPLE = os.path.join(SOURCE_DIR, "examples", "qwen3-fp8-rtx5090", "worker.log")
SIDECAR = os.path.join(SOURCE_DIR, "deploy", "k8s", "sidecar")
TARGET_RULE = "deepgemm-unknown-sf-transformation"
# The downward API's labels, as the kubelet expands deploy/k8s/sidecar's args.
POD, NAMESPACE, NODE = "qwen3-fp8-7d9f8c6b5-x2x9k", "inference", "gpu-node-1"
SIDECAR_ARGS = ["run", "--config", "/etc/fingerprintd/fingerprintd.yaml",
                "--label", f"deployment={NAMESPACE}/{POD}", "--label", f"namespace={NAMESPACE}",
                "--label", f"pod={POD}", "--label", f"node={NODE}"]
# deploy/k8s/sidecar/deployment.yaml's securityContext and mounts, as podman flags.
SIDECAR_SECURITY = ["--user", "65532:65532", "--read-only", "--read-only-tmpfs=false",
                    "--cap-drop=ALL", "--security-opt", "no-new-privileges"]


def host(*args, cwd=SOURCE_DIR):
    run = subprocess.run([HOST_FINGERPRINTD, *args], capture_output=True, text=True, cwd=cwd)
    assert run.returncode == 0, f"host fingerprintd {shlex.join(args)}: {run.stderr}"
    return run


def install_deps_packages():
    """Every package deploy/install-deps.sh names, in any of its lists or groups."""
    with open(os.path.join(SOURCE_DIR, "deploy", "install-deps.sh")) as f:
        script = f.read()
    script = "\n".join(line.split("#", 1)[0] for line in script.splitlines())
    names = set()
    for body in re.findall(r"[A-Z_]+\+?=\(([^)]*)\)", script):
        names.update(word for word in body.split() if not word.startswith('"$'))
    return names


def incident_lines(text):
    """The incidents among a container's output lines (JSONL on stdout)."""
    out = []
    for line in text.splitlines():
        if line.startswith("{") and '"fingerprintd/incident/v1"' in line:
            out.append(json.loads(line))
    return out


def metric(text, family, **labels):
    """The value of `family{labels...}` in Prometheus text, None when absent."""
    for line in text.splitlines():
        if not line.startswith(family + "{") and not line.startswith(family + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


class ImageTest(unittest.TestCase):
    def run_image(self, *args, volumes=(), check=True):
        """`podman run --rm` of the image with `args`, as the image's own user."""
        flags = [f for v in volumes for f in ("-v", v)]
        return podman("run", "--rm", "--network", "none", *flags, IMAGE, *args, check=check)

    def test_version_is_the_host_binarys(self):
        self.assertEqual(self.run_image("version").stdout, host("version").stdout)

    def test_the_image_runs_as_65532_and_rules_check_passes_on_both_packs(self):
        config = podman("image", "inspect", "--format", "{{.Config.User}} {{.Config.Entrypoint}}",
                        IMAGE).stdout.strip()
        self.assertEqual(config, "65532:65532 [fingerprintd]")
        embedded = self.run_image("rules", "check")
        self.assertEqual(embedded.stdout, host("rules", "check").stdout)
        # The package's copy of the pack, readable by the image's user.
        installed = self.run_image("rules", "check", "/usr/share/fingerprintd/rules")
        self.assertEqual(installed.stdout,
                         host("rules", "check", os.path.join(SOURCE_DIR, "rules")).stdout.replace(
                             os.path.join(SOURCE_DIR, "rules"), "/usr/share/fingerprintd/rules"))

    def test_replay_of_the_examples_mounted_read_only_is_the_host_binarys_jsonl(self):
        args = ["replay", "--format", "jsonl", "--deployment-from", "^examples/([^/]+)/",
                "examples/"]
        expected = host(*args).stdout
        self.assertIn(TARGET_RULE, expected)
        got = podman("run", "--rm", "--network", "none", "--read-only", "-w", "/work",
                     "-v", f"{SOURCE_DIR}/examples:/work/examples:ro", IMAGE, *args).stdout
        self.assertEqual(got, expected)

    def test_the_image_holds_no_compiler_and_no_build_or_test_package(self):
        listed = podman("run", "--rm", "--network", "none", "--entrypoint", "dpkg-query", IMAGE,
                        "-W", "-f", "${Package}\n").stdout.split()
        self.assertIn("fingerprintd", listed)
        self.assertIn("libre2-9", listed)  # from the package's shlibdeps
        packages = {p.split(":")[0] for p in listed}
        self.assertEqual(packages & install_deps_packages(), set())
        self.assertEqual([p for p in packages if p.endswith("-dev")], [])
        compilers = podman("run", "--rm", "--network", "none", "--entrypoint", "sh", IMAGE, "-c",
                           "for c in cc c++ gcc g++ clang clang++ cpp as ld; do"
                           " command -v $c; done; true").stdout
        self.assertEqual(compilers, "")

    def test_the_readmes_podman_run_is_this_tests(self):
        """README's quick start runs the image as the sidecar test below does."""
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            readme = f.read()
        self.assertIn("\n    make image && make test-image\n", readme)
        self.assertIn("\n    podman run -d ", readme)
        block = readme.split("\n    podman run -d ", 1)[1].split("\n    curl", 1)[0]
        words = shlex.split(block.replace("\\\n", " "))
        for flag in SIDECAR_SECURITY:
            self.assertIn(flag, words, f"README's podman run: {shlex.join(words)}")
        mounts = {v.split(":")[1] for flag, v in zip(words, words[1:]) if flag == "-v"}
        self.assertEqual(mounts, {"/var/log/vllm", "/var/lib/fingerprintd",
                                  "/etc/fingerprintd/fingerprintd.yaml",
                                  "/etc/fingerprintd-secret/token"})
        self.assertEqual(words[words.index("run"):][:3], SIDECAR_ARGS[:3])

    def test_the_sidecar_run_reports_stops_on_sigterm_and_resumes_from_its_checkpoint(self):
        with open(os.path.join(SIDECAR, "deployment.yaml")) as f:
            deployment_yaml = f.read()
        for setting in ("runAsUser: 65532", "runAsGroup: 65532", "readOnlyRootFilesystem: true",
                        "allowPrivilegeEscalation: false", "capabilities: {drop: [ALL]}",
                        "fsGroup: 65532", "umask 0002; exec tee -a /var/log/vllm/vllm.log",
                        "mountPath: /var/log/vllm\n",
                        "mountPath: /var/lib/fingerprintd\n", "- --config\n"
                        "            - /etc/fingerprintd/fingerprintd.yaml"):
            self.assertIn(setting, deployment_yaml, "SIDECAR_SECURITY/ARGS follow deployment.yaml")

        tmp = tempfile.mkdtemp(prefix="fingerprintd-image-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # The emptyDir with fsGroup 65532 (setgid, group-writable), and tee's
        # log in it with umask 0002.
        logs = os.path.join(tmp, "vllm")
        os.mkdir(logs)
        os.chmod(tmp, 0o755)
        os.chown(logs, 0, 65532)
        os.chmod(logs, 0o2775)
        log = os.path.join(logs, "vllm.log")
        os.close(os.open(log, os.O_CREAT | os.O_WRONLY, 0o664))
        os.chown(log, 0, 65532)
        os.chmod(log, 0o664)
        # The bearer token of /incidents, as the Secret fingerprintd-http-token mounts it.
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write("image-test-token\n")
        os.chmod(token_file, 0o644)
        auth = {"Authorization": "Bearer image-test-token"}
        name = f"fingerprintd-image-test-{os.getpid()}"
        volume = podman("volume", "create", name + "-state").stdout.strip()
        self.addCleanup(podman, "volume", "rm", "-f", volume, check=False, quiet=True)

        def start(suffix):
            port = free_port()
            container = name + suffix
            self.addCleanup(podman, "rm", "-f", "-t", "0", container, check=False, quiet=True)
            podman("run", "-d", "--name", container, *SIDECAR_SECURITY,
                   "-v", f"{logs}:/var/log/vllm", "-v", f"{volume}:/var/lib/fingerprintd",
                   "-v", f"{SIDECAR}/fingerprintd.yaml:/etc/fingerprintd/fingerprintd.yaml:ro",
                   "-v", f"{token_file}:/etc/fingerprintd-secret/token:ro",
                   "-p", f"127.0.0.1:{port}:9464", IMAGE, *SIDECAR_ARGS)

            def ready():
                state = podman("inspect", "--format", "{{.State.Running}}", container,
                               quiet=True).stdout.strip()
                if state != "true":
                    raise AssertionError(f"{container} exited:\n{logs_of(container)}")
                return get(f"http://127.0.0.1:{port}/readyz")[0] == 200
            wait_for(f"{container}'s /readyz answering 200 from the host", ready, timeout=30)
            return container, port

        def logs_of(container):
            run = podman("logs", container, quiet=True, check=False)
            return run.stdout + run.stderr

        def stdout_of(container):
            return podman("logs", container, quiet=True, check=False).stdout

        # First container: the example failure written in as vLLM's tee would.
        first, port = start("-1")
        with open(EXAMPLE) as f, open(log, "a") as out:
            out.write(f.read())

        def incident():
            status, body = get(f"http://127.0.0.1:{port}/incidents", headers=auth)
            for i in json.loads(body) if status == 200 else []:
                if i["rule"] == TARGET_RULE and i["workers"]["affected"] == 2:
                    return i
            return None
        served = wait_for("the 2/2 incident on /incidents", incident, timeout=30)
        print(f"GET /incidents (first container): {served['incident_id']} {served['title']!r}"
              f" deployment={served['deployment']} workers={json.dumps(served['workers'])}"
              f" labels={json.dumps(served.get('labels'))}", file=sys.stderr)
        self.assertEqual(served["deployment"], f"{NAMESPACE}/{POD}")
        self.assertEqual(served["labels"]["node"], NODE)
        metrics = get(f"http://127.0.0.1:{port}/metrics")[1]
        for rank in ("0", "1"):
            self.assertEqual(metric(metrics, "fingerprintd_worker_failures", rule=TARGET_RULE,
                                    deployment=f"{NAMESPACE}/{POD}", rank=rank), 1.0, metrics)
        written = wait_for("the incident's JSONL line on the container's stdout",
                           lambda: [i for i in incident_lines(stdout_of(first))
                                    if i["incident_id"] == served["incident_id"]])
        self.assertEqual(written[-1]["workers"]["affected"], 2)

        started = time.monotonic()
        podman("stop", "--time", "2", first)
        stopped_in = time.monotonic() - started
        code = podman("inspect", "--format", "{{.State.ExitCode}}", first).stdout.strip()
        print(f"podman stop --time 2: exit code {code}, {stopped_in:.2f} s", file=sys.stderr)
        self.assertEqual(code, "0", "SIGTERM did not end the daemon within 2 s (137 = SIGKILL)"
                         f"\n{logs_of(first)}")
        mountpoint = podman("volume", "inspect", "--format", "{{.Mountpoint}}",
                            volume).stdout.strip()
        with open(os.path.join(mountpoint, "checkpoint.json")) as f:
            checkpoint = json.load(f)
        self.assertEqual(checkpoint["format"], "fingerprintd/checkpoint")
        (source,) = [s for s in checkpoint["sources"] if s["name"] == "/var/log/vllm/vllm.log"]
        safe = source["safe"]["offset"]
        self.assertGreater(safe, 0)

        # Second container, same volume: the incident is restored, not written again,
        # and reading starts at the checkpoint's offset (a healthy line appended after).
        # What the first container had read past the safe offset (a failure still being
        # decided) is read again and counted apart, not in bytes_total.
        read_before = source.get("read", safe)
        second, port = start("-2")
        with open(log, "a") as out:
            # Dated just after the example's failure (03-12 09:31:27), as the log goes on;
            # not a ready line, so the restored incident stays open.
            out.write("INFO 03-12 09:31:30 [api_server.py:1] the image test's line after restart\n")
        after_checkpoint = os.path.getsize(log) - safe
        new_bytes = os.path.getsize(log) - read_before

        def read_to_the_end():
            text = get(f"http://127.0.0.1:{port}/metrics")[1]
            read = metric(text, "fingerprintd_bytes_total", source="/var/log/vllm/vllm.log")
            reread = metric(text, "fingerprintd_restart_reread_bytes_total") or 0
            if read is not None and read > new_bytes:
                raise AssertionError(f"read {read} new bytes, more than the {new_bytes} written"
                                     " after the first container stopped: it did not resume")
            return read == new_bytes and reread == read_before - safe
        wait_for(f"the second container reading the {after_checkpoint} bytes after the "
                 "checkpoint", read_to_the_end, timeout=30)
        restored = wait_for("the restored incident on /incidents", incident, timeout=10)
        self.assertEqual(restored["incident_id"], served["incident_id"])
        self.assertEqual(incident_lines(stdout_of(second)), [], logs_of(second))
        print(f"second container: resumed at offset {safe}, read the {after_checkpoint} bytes"
              f" after it, {restored['incident_id']} back on /incidents, no incident on stdout",
              file=sys.stderr)
        podman("stop", "--time", "2", second)
        self.assertEqual(podman("inspect", "--format", "{{.State.ExitCode}}",
                                second).stdout.strip(), "0")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    IMAGE, HOST_FINGERPRINTD = sys.argv[1], os.path.abspath(sys.argv[2])
    del sys.argv[1:]
    unittest.main(verbosity=2)
