#!/usr/bin/env python3
"""End to end: a real `fingerprintd run` pushing its incidents to a real
Alertmanager (temp storage, clustering off, a webhook receiver in this test).

The daemon starts first, with Alertmanager not yet running. A short-lived
incident comes and goes during the outage: the TP=2 target failure and the
deployment's healthy start right after it are written into a tailed file, so
the incident opens and closes (recovered) while every push fails. Then
Alertmanager starts on the port the daemon was told, and the test waits until
Alertmanager counts that alert received as resolved (its
alertmanager_alerts_received_total): an incident that opened and closed while
Alertmanager was down is still delivered, never dropped. Then the same failure
comes back an hour later (log time): a new incident, regressed from the first,
whose alert the test waits to see active with the incident's labels and
annotations. With `correlation: {window: 2s}` the old lifetime closed it 4 s
after its last hit; the test checks it is still active (endsAt ahead) more
than 3 resend intervals past that, then writes the healthy start and waits
until Alertmanager resolves it: the alert leaves /api/v2/alerts and the
webhook receives it as resolved with the close's endsAt. Every process
started is stopped, even on failure.

usage: alertmanager_e2e_test.py FINGERPRINTD ALERTMANAGER SOURCE_DIR
"""

import datetime
import os
import re
import sys
import time

from prometheus_e2e_support import (HEALTHY_START, E2e, Webhook, free_port, get, get_json, main,
                                    serve, shifted, wait_for)

FINGERPRINTD, ALERTMANAGER, SOURCE_DIR = sys.argv[1:4]
GOLDEN = os.path.join(SOURCE_DIR, "tests/golden/vllm_tp2_unknown_sf.log")
DEPLOYMENT = "qwen3-fp8-rtx5090"
RULE = "deepgemm-unknown-sf-transformation"


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def our_alerts(alerts):
    return [a for a in alerts or [] if a["labels"].get("alertname") == "FingerprintdIncident"]


def test():
    hook, hook_port = serve(Webhook)
    try:
        with E2e("alertmanager-e2e") as e2e:
            run(e2e, hook_port)
    finally:
        hook.shutdown()


def run(e2e, hook_port):
    am_port = free_port()
    e2e.start_daemon(FINGERPRINTD, e2e.daemon_config(DEPLOYMENT, f"""
correlation: {{window: 2s}}
alertmanager:
  url: http://127.0.0.1:{am_port}
  labels: {{cluster: e2e}}
  resend_interval: 1s
  timeout: 2s
"""))
    # A short-lived incident during the outage: opened and closed (recovered) unsent.
    e2e.append_golden(GOLDEN)
    e2e.append(HEALTHY_START)
    wait_for("the short-lived incident closed (recovered) while Alertmanager is down",
             lambda: "closed rule=" + RULE in e2e.procs.log("fingerprintd"), timeout=60)
    wait_for("the daemon to find Alertmanager unreachable",
             lambda: "unreachable" in e2e.procs.log("fingerprintd"), timeout=60)

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

    def received(status):
        e2e.procs.check_running("alertmanager")
        _, text = get(f"http://127.0.0.1:{am_port}/metrics")
        counts = re.findall(r'^alertmanager_alerts_received_total\{[^}]*status="%s"[^}]*\} (\S+)$'
                            % status, text or "", re.M)
        return sum(float(c) for c in counts)
    wait_for("the short-lived incident delivered to Alertmanager as resolved",
             lambda: received("resolved") >= 1, timeout=60)

    # The same failure comes back an hour later: a new incident, regressed from the first.
    e2e.append(shifted(GOLDEN, 1))

    def active():
        e2e.procs.check_running("alertmanager")
        e2e.procs.check_running("fingerprintd")
        alerts = [a for a in our_alerts(get_json(f"{api}/alerts"))
                  if a["status"]["state"] == "active"]
        return alerts[0] if alerts else None
    alert = wait_for("the pushed alert active in Alertmanager", active, timeout=60)
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

    # Nothing recovers: past the old close (4 s) plus 3 resend intervals, still active.
    time.sleep(4 + 3 + 1)
    alert = active()
    assert alert and alert["labels"]["incident_id"] == labels["incident_id"], \
        "the alert resolved while nothing had recovered"
    now = datetime.datetime.now(datetime.timezone.utc)
    assert parse_time(alert["endsAt"]) > now, f"endsAt {alert['endsAt']} is not ahead of {now}"

    # The deployment starts healthy: the daemon sends endsAt, Alertmanager resolves it.
    e2e.append(HEALTHY_START)

    def resolved():
        e2e.procs.check_running("fingerprintd")
        for note in Webhook.received:
            for a in note["alerts"]:
                if a["labels"].get("incident_id") == labels["incident_id"] and \
                        a["status"] == "resolved":
                    return a
        return None
    note = wait_for("the incident resolved through Alertmanager's webhook", resolved, timeout=60)
    assert e2e.procs.log("fingerprintd").count("closed rule=" + RULE) == 2
    ends = parse_time(note["endsAt"])
    assert ends <= datetime.datetime.now(datetime.timezone.utc), note
    assert ends >= parse_time(alert["startsAt"]), note
    wait_for("the alert gone from /api/v2/alerts",
             lambda: not our_alerts(get_json(f"{api}/alerts")), timeout=10)
    print(f"pushed alert {labels['incident_id']} active, then resolved at {note['endsAt']}")


if __name__ == "__main__":
    main(test)
