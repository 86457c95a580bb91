#!/usr/bin/env python3
"""End to end: a real `fingerprintd run` pushing its incidents to a real
Alertmanager (temp storage, clustering off, a webhook receiver in this test).

The daemon starts first, with Alertmanager not yet running: the TP=2 target
failure written into a tailed file opens an incident whose push fails (the
daemon logs the outage and retries with backoff). Then Alertmanager starts on
the port the daemon was told, and the test waits until its /api/v2/alerts
shows the FingerprintdIncident alert with the incident's labels and
annotations. With `correlation: {window: 20s}` the incident closes after
that: long enough for Alertmanager to start and for the daemon's doubling
backoff to reach it on a loaded machine (under the sanitizers Alertmanager
was reached 7.5 s after the first failed push, when a 3 s window had already
closed the incident and the alert came in resolved, never active). The
daemon then sends it with endsAt, and the test waits until
Alertmanager resolves it: the alert leaves /api/v2/alerts and the webhook
receives it as resolved with that endsAt. Every process started is stopped,
even on failure.

usage: alertmanager_e2e_test.py FINGERPRINTD ALERTMANAGER SOURCE_DIR
"""

import datetime
import http.server
import json
import os
import sys
import threading

from prometheus_e2e_support import E2e, free_port, get_json, main, wait_for

FINGERPRINTD, ALERTMANAGER, SOURCE_DIR = sys.argv[1:4]
GOLDEN = os.path.join(SOURCE_DIR, "tests/golden/vllm_tp2_unknown_sf.log")
DEPLOYMENT = "qwen3-fp8-rtx5090"
RULE = "deepgemm-unknown-sf-transformation"


class Webhook(http.server.BaseHTTPRequestHandler):
    """Alertmanager's notifications, kept in `received`."""
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Webhook.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def our_alerts(alerts):
    return [a for a in alerts or [] if a["labels"].get("alertname") == "FingerprintdIncident"]


def test():
    hook = http.server.HTTPServer(("127.0.0.1", 0), Webhook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    try:
        with E2e("alertmanager-e2e") as e2e:
            run(e2e, hook.server_address[1])
    finally:
        hook.shutdown()


def run(e2e, hook_port):
    am_port = free_port()
    e2e.start_daemon(FINGERPRINTD, e2e.daemon_config(DEPLOYMENT, f"""
correlation: {{window: 20s}}
alertmanager:
  url: http://127.0.0.1:{am_port}
  labels: {{cluster: e2e}}
  resend_interval: 1s
  timeout: 2s
"""))
    e2e.append_golden(GOLDEN)
    wait_for("the daemon to find Alertmanager unreachable",
             lambda: "unreachable" in e2e.procs.log("fingerprintd"), timeout=15)

    e2e.write("alertmanager.yml", f"""
route:
  receiver: hook
  group_by: [deployment]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs: [{{url: "http://127.0.0.1:{hook_port}/", send_resolved: true}}]
""")
    e2e.procs.start("alertmanager", [
        ALERTMANAGER, f"--config.file={e2e.path('alertmanager.yml')}",
        f"--storage.path={e2e.path('am')}", f"--web.listen-address=127.0.0.1:{am_port}",
        "--cluster.listen-address=", "--log.level=warn"])
    api = f"http://127.0.0.1:{am_port}/api/v2"

    def active():
        e2e.procs.check_running("alertmanager")
        e2e.procs.check_running("fingerprintd")
        alerts = our_alerts(get_json(f"{api}/alerts"))
        return alerts[0] if alerts and alerts[0]["status"]["state"] == "active" else None
    alert = wait_for("the pushed alert active in Alertmanager", active, timeout=30)
    labels = alert["labels"]
    for key, value in {"rule": RULE, "class": "hardware_support", "severity": "critical",
                       "confidence": "confirmed", "deployment": DEPLOYMENT,
                       "cluster": "e2e"}.items():
        assert labels.get(key) == value, f"label {key}: {labels}"
    assert labels["incident_id"].startswith("inc-"), labels
    annotations = alert["annotations"]
    assert "DeepGEMM" in annotations["summary"], annotations
    assert "2/2" in annotations["description"], annotations
    assert "per-tensor FP8" in annotations["remediation"], annotations
    assert annotations["workers"].startswith("2/2 affected, ranks 0,1"), annotations
    now = datetime.datetime.now(datetime.timezone.utc)
    assert parse_time(alert["endsAt"]) > now, f"endsAt {alert['endsAt']} is not ahead of {now}"
    assert "reachable again" in e2e.procs.log("fingerprintd")

    # The window closes: the daemon sends endsAt, Alertmanager resolves it.
    def resolved():
        e2e.procs.check_running("fingerprintd")
        for note in Webhook.received:
            for a in note["alerts"]:
                if a["labels"].get("incident_id") == labels["incident_id"] and \
                        a["status"] == "resolved":
                    return a
        return None
    note = wait_for("the incident resolved through Alertmanager's webhook", resolved, timeout=60)
    assert "closed rule=" + RULE in e2e.procs.log("fingerprintd")
    ends = parse_time(note["endsAt"])
    assert ends <= datetime.datetime.now(datetime.timezone.utc), note
    assert ends >= parse_time(alert["startsAt"]), note
    wait_for("the alert gone from /api/v2/alerts",
             lambda: not our_alerts(get_json(f"{api}/alerts")), timeout=10)
    print(f"pushed alert {labels['incident_id']} active, then resolved at {note['endsAt']}")


if __name__ == "__main__":
    main(test)
