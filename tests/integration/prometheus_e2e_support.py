"""Shared pieces of the end-to-end tests against a real Prometheus and a real
Alertmanager (prometheus_e2e_test.py, alertmanager_e2e_test.py,
alerting_restart_e2e_test.py): free ports on 127.0.0.1, child processes that
die with the test (PR_SET_PDEATHSIG) and are always stopped, waits that poll
with a deadline, `fingerprintd run` with a config in a temp dir, a webhook
receiver for Alertmanager's notifications and a recorder of what the daemon
pushes. Python standard library only.
"""

import ctypes
import datetime
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

PR_SET_PDEATHSIG = 1


def free_port():
    """A port nobody listens on now (the child binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, condition, timeout=30.0, interval=0.1):
    """Polls condition() until it returns a truthy value; fails after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def get(url, timeout=2.0, headers=None):
    """(status, body) of a GET (with `headers`); (0, error text) when nothing answers."""
    try:
        request = urllib.request.Request(url, headers=headers or {})
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


def get_json(url):
    status, body = get(url)
    return json.loads(body) if status == 200 else None


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Processes:
    """Starts children with their output in files; stop_all() ends every one."""

    def __init__(self, directory):
        self.directory = directory
        self.children = []

    def start(self, name, args):
        log = open(os.path.join(self.directory, name + ".log"), "wb")
        child = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        log.close()
        self.children.append((name, child))
        return child

    def log(self, name):
        with open(os.path.join(self.directory, name + ".log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self, name):
        for n, child in self.children:
            if n == name and child.poll() is None:
                child.send_signal(signal.SIGTERM)
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()

    def stop_all(self):
        for name, _ in reversed(self.children):
            self.stop(name)

    def check_running(self, name):
        for n, child in self.children:
            if n == name and child.poll() is not None:
                raise AssertionError(f"{name} exited with {child.returncode}:\n{self.log(name)}")


class E2e:
    """A temp dir with logs/, the started processes, and cleanup on exit (the
    dir is kept, and every log printed, when the test failed)."""

    def __init__(self, name):
        self.dir = tempfile.mkdtemp(prefix=f"fingerprintd-{name}-")
        os.makedirs(os.path.join(self.dir, "logs"))
        self.procs = Processes(self.dir)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        self.procs.stop_all()
        if kind is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            for name, _ in self.procs.children:
                sys.stderr.write(f"---- {name} ----\n{self.procs.log(name)[-6000:]}\n")
            sys.stderr.write(f"kept {self.dir}\n")
        return False

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, relative, text, mode="w"):
        with open(self.path(relative), mode) as f:
            f.write(text)

    def start_daemon(self, binary, config_text, name="fingerprintd"):
        """`fingerprintd run --config` on config_text, its output in NAME.log;
        returns its HTTP port, read from its `http: listening on
        127.0.0.1:PORT` line."""
        self.write("fingerprintd.yaml", config_text)
        self.procs.start(name, [binary, "run", "--config", self.path("fingerprintd.yaml")])

        def port():
            self.procs.check_running(name)
            m = re.search(r"http: listening on 127\.0\.0\.1:(\d+)", self.procs.log(name))
            return int(m.group(1)) if m else None

        return wait_for("the daemon's http: listening line", port, timeout=60)

    def daemon_config(self, deployment, extra="", http_listen="127.0.0.1:0"):
        """A config tailing logs/*.log from the beginning as `deployment`,
        incidents to incidents.jsonl, HTTP on `http_listen` (a free port by
        default); `extra` appended."""
        return f"""
sources:
  - type: file
    paths: ["{self.path('logs')}/*.log"]
    start_at: beginning
    labels: {{deployment: {deployment}}}
incidents: {{path: {self.path('incidents.jsonl')}}}
http: {{listen: {http_listen}}}
""" + extra

    def append_golden(self, golden, name="w.log"):
        """Writes a fixture into logs/NAME (the daemon tails logs/*.log)."""
        with open(golden, "rb") as src, open(self.path("logs", name), "ab") as dst:
            dst.write(src.read())

    def append(self, text, name="w.log"):
        """Appends text to logs/NAME."""
        with open(self.path("logs", name), "a", encoding="utf-8") as dst:
            dst.write(text)


def serve(handler):
    """An HTTP server of `handler` on 127.0.0.1:0 in a daemon thread; returns
    (server, port). server.shutdown() stops it."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


class Webhook(http.server.BaseHTTPRequestHandler):
    """Alertmanager's webhook notifications, kept in `received` (each the
    notification's JSON: status, alerts with their own status)."""
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Webhook.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


class AlertRecorder(http.server.BaseHTTPRequestHandler):
    """Stands between the daemon and Alertmanager: every POST is kept in
    `posts` as (arrival time in Unix seconds, the JSON body), then forwarded
    to `upstream` ("http://127.0.0.1:PORT"), whose reply goes back (503 when
    it does not answer)."""
    posts = []
    upstream = ""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        AlertRecorder.posts.append((time.time(), json.loads(body)))
        request = urllib.request.Request(AlertRecorder.upstream + self.path, data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                status, text = reply.status, reply.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            status, text = 503, str(e).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args):
        pass


def parse_time(text):
    """RFC 3339 (Alertmanager's and Prometheus' times, fractions of any
    length) -> Unix seconds."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", text)
    assert m, f"not an RFC 3339 time: {text!r}"
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    whole = datetime.datetime.fromisoformat(m.group(1) + zone).timestamp()
    return whole + (float(m.group(2)) if m.group(2) else 0.0)


# uvicorn's line once vLLM's API server serves: the engine is up (a ready rule of the pack).
HEALTHY_START = "\x1b[0;36m(APIServer pid=1)\x1b[0;0m INFO:     Application startup complete.\n"


def shifted(golden, hours):
    """The fixture's lines as a restart `hours` later writes them (vLLM's
    "03-04 10:14:37" and glog's "W0304 10:15:21" dates moved on)."""
    with open(golden, encoding="utf-8") as f:
        text = f.read()
    return re.sub(r"(03-04|0304) 10:", lambda m: f"{m.group(1)} {10 + hours}:", text)


def main(test):
    """Runs test() and exits 0, or prints the failure and exits 1."""
    started = time.monotonic()
    try:
        test()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"passed in {time.monotonic() - started:.1f} s")
