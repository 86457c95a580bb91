#!/usr/bin/env python3
"""End to end (issue 41): the alerts of a still-open incident continue across
restarts of the daemon, on both paths at once.

A real Alertmanager (temp storage, clustering off, grouped by deployment, a
webhook receiver in this test), a real Prometheus (1 s scrape and evaluation,
the shipped deploy/prometheus/alerts.yml unchanged, sending its alerts to that
Alertmanager) and a real `fingerprintd run` (checkpoint_dir, HTTP on a fixed
port so that Prometheus scrapes the restarted daemon at the same target,
pushing to Alertmanager through a recorder with resend_interval 1s: four
resend intervals are 4 s, so only the daemon's 10-minute floor keeps its alert
through the gap). A TP=2 CUDA out-of-memory failure (rule cuda-out-of-memory,
class resource, severity error) is written into a tailed file; the test waits
until the pushed FingerprintdIncident is active in Alertmanager and
Prometheus' FingerprintdDeploymentFailed fires, both with severity `error`, and
until the webhook was notified. Then:

1. SIGTERM; the daemon stays away 20 s (five resend intervals and twenty
   scrapes), while its series are gone from
   Prometheus; started again with the same config and checkpoint_dir;
2. SIGKILL; started again at once.

Throughout, Alertmanager's alertmanager_alerts_received_total{status="resolved"}
stays where it was and the webhook receives no resolved notification;
Prometheus' alert keeps firing with its first activeAt and Alertmanager's alert
keeps its startsAt; after each start the restored incident is pushed again with
its original startsAt. Every push of the incident (the shutdown's included)
carries an endsAt at least 9.5 minutes after it arrived, and a generatorURL
that the daemon answers with the incident. Every process started is stopped,
even on failure.

usage: alerting_restart_e2e_test.py FINGERPRINTD PROMETHEUS ALERTMANAGER SOURCE_DIR
"""

import json
import os
import re
import signal
import sys
import time

from prometheus_e2e_support import (AlertRecorder, E2e, Webhook, free_port, get, get_json, main,
                                    parse_time, serve, wait_for)

FINGERPRINTD, PROMETHEUS, ALERTMANAGER, SOURCE_DIR = sys.argv[1:5]
ALERTS = os.path.join(SOURCE_DIR, "deploy/prometheus/alerts.yml")
GOLDEN = os.path.join(SOURCE_DIR, "tests/golden/vllm_tp2_cuda_oom.log")
DEPLOYMENT = "ds-v3-oom"
RULE = "cuda-out-of-memory"
GAP_SECONDS = 20  # >> 4 resend intervals of 1 s; the series are gone after one scrape
STEP = 60  # seconds each wait may take (CI runs this under sanitizers at -j2)
MIN_LIFETIME = 9.5 * 60  # the daemon's floor is 10 minutes; slack for clocks


def test():
    hook, hook_port = serve(Webhook)
    recorder, recorder_port = serve(AlertRecorder)
    try:
        with E2e("alerting-restart-e2e") as e2e:
            run(e2e, hook_port, recorder_port)
    finally:
        hook.shutdown()
        recorder.shutdown()


class Cluster:
    """The three servers' views the checks read."""

    def __init__(self, e2e, am_port, prom_port, http_port):
        self.e2e = e2e
        self.am = f"http://127.0.0.1:{am_port}"
        self.prom = f"http://127.0.0.1:{prom_port}/api/v1"
        self.daemon = f"http://127.0.0.1:{http_port}"
        self.daemon_name = "fingerprintd"

    def received(self, status):
        """alertmanager_alerts_received_total{status=...}, all versions summed."""
        self.e2e.procs.check_running("alertmanager")
        _, text = get(f"{self.am}/metrics")
        counts = re.findall(r'^alertmanager_alerts_received_total\{[^}]*status="%s"[^}]*\} (\S+)$'
                            % status, text or "", re.M)
        return sum(float(c) for c in counts)

    def pushed_alert(self):
        """Our FingerprintdIncident, active in Alertmanager, or None."""
        self.e2e.procs.check_running("alertmanager")
        for a in get_json(f"{self.am}/api/v2/alerts") or []:
            if a["labels"].get("alertname") == "FingerprintdIncident" and \
                    a["labels"].get("rule") == RULE and a["status"]["state"] == "active":
                return a
        return None

    def prometheus_alert(self):
        """FingerprintdDeploymentFailed for the deployment, firing, or None."""
        self.e2e.procs.check_running("prometheus")
        alerts = get_json(f"{self.prom}/alerts")
        for a in alerts["data"]["alerts"] if alerts else []:
            if a["labels"].get("alertname") == "FingerprintdDeploymentFailed" and \
                    a["labels"].get("deployment") == DEPLOYMENT and a["state"] == "firing":
                return a
        return None

    def query(self, expr):
        reply = get_json(f"{self.prom}/query?query={expr}")
        return reply["data"]["result"] if reply else None

    def resolved_notifications(self):
        return [a for note in Webhook.received for a in note["alerts"]
                if a["status"] == "resolved"]


def pushes_of(incident_id, since=0.0):
    """(arrival, alert) of every push of the incident that arrived after `since`."""
    return [(at, a) for at, body in list(AlertRecorder.posts) if at > since
            for a in body if a["labels"].get("incident_id") == incident_id]


def run(e2e, hook_port, recorder_port):
    am_port, prom_port, http_port = free_port(), free_port(), free_port()
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
    c = Cluster(e2e, am_port, prom_port, http_port)
    wait_for("Alertmanager ready", lambda: get(f"{c.am}/-/ready")[0] == 200, timeout=STEP)
    AlertRecorder.upstream = c.am

    config = e2e.daemon_config(DEPLOYMENT, f"""
checkpoint_dir: {e2e.path('state')}
checkpoint_interval: 1s
alertmanager:
  url: http://127.0.0.1:{recorder_port}
  resend_interval: 1s
  timeout: 2s
""", http_listen=f"127.0.0.1:{http_port}")
    os.makedirs(e2e.path("state"))
    e2e.start_daemon(FINGERPRINTD, config, name=c.daemon_name)

    e2e.write("prometheus.yml", f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["{ALERTS}"]
alerting:
  alertmanagers: [{{static_configs: [{{targets: ["127.0.0.1:{am_port}"]}}]}}]
scrape_configs:
  - job_name: fingerprintd
    static_configs: [{{targets: ["127.0.0.1:{http_port}"]}}]
""")
    e2e.procs.start("prometheus", [
        PROMETHEUS, f"--config.file={e2e.path('prometheus.yml')}",
        f"--storage.tsdb.path={e2e.path('tsdb')}",
        f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])

    def target_up():
        e2e.procs.check_running("prometheus")
        up = c.query("up")
        return up and up[0]["value"][1] == "1"
    wait_for("Prometheus scraping the daemon (up 1)", target_up, timeout=STEP)

    # The failure: one incident, pushed and alerted on, both with the incident's severity.
    e2e.append_golden(GOLDEN)
    pushed = wait_for("the pushed alert active in Alertmanager", c.pushed_alert, timeout=STEP)
    incident_id = pushed["labels"]["incident_id"]
    assert pushed["labels"]["severity"] == "error", pushed["labels"]
    assert pushed["labels"]["deployment"] == DEPLOYMENT, pushed["labels"]
    assert pushed["generatorURL"] == f"{c.daemon}/incidents?deployment={DEPLOYMENT}", pushed
    status, body = get(pushed["generatorURL"])
    assert status == 200 and incident_id in [i["incident_id"] for i in json.loads(body)], body
    fired = wait_for("FingerprintdDeploymentFailed firing in Prometheus", c.prometheus_alert,
                     timeout=STEP)
    assert fired["labels"] == {"alertname": "FingerprintdDeploymentFailed",
                               "deployment": DEPLOYMENT, "rule": RULE, "class": "resource",
                               "severity": "error"}, fired["labels"]
    wait_for("the webhook notified of both alerts firing", lambda: {
        a["labels"]["alertname"] for note in Webhook.received for a in note["alerts"]
        if a["status"] == "firing"} >= {"FingerprintdIncident", "FingerprintdDeploymentFailed"},
        timeout=STEP)
    active_at = fired["activeAt"]
    starts_at = parse_time(pushed["startsAt"])
    first_push = pushes_of(incident_id)[0][1]
    resolved_before = c.received("resolved")
    assert not c.resolved_notifications(), Webhook.received

    def still_firing(when):
        """Nothing resolved anywhere, both alerts firing as they started."""
        assert c.received("resolved") == resolved_before, \
            f"{when}: Alertmanager received a resolved alert"
        assert not c.resolved_notifications(), f"{when}: resolved notified: {Webhook.received}"
        alert = c.pushed_alert()
        assert alert and alert["labels"]["incident_id"] == incident_id, \
            f"{when}: the pushed alert is not active: {get_json(c.am + '/api/v2/alerts')}"
        assert parse_time(alert["startsAt"]) == starts_at, f"{when}: startsAt {alert['startsAt']}"
        fired = c.prometheus_alert()
        assert fired, f"{when}: FingerprintdDeploymentFailed not firing in Prometheus"
        assert fired["activeAt"] == active_at, f"{when}: activeAt {fired['activeAt']}"

    def stop(sig):
        for name, child in e2e.procs.children:
            if name == c.daemon_name:
                child.send_signal(sig)
                child.wait(timeout=STEP)
                return time.time(), child.returncode
        raise AssertionError(f"no process {c.daemon_name}")

    def start_again(name, stopped_at):
        """Starts the daemon again; waits until it pushed the restored incident
        (with its original startsAt) and Prometheus scrapes its ranks again."""
        c.daemon_name = name
        started_at = time.time()
        e2e.start_daemon(FINGERPRINTD, config, name=name)
        again = wait_for(f"{name}: the restored incident pushed again",
                         lambda: pushes_of(incident_id, started_at), timeout=STEP)
        assert again[0][1]["startsAt"] == first_push["startsAt"], (again[0][1], first_push)
        assert again[0][1]["labels"] == first_push["labels"], (again[0][1], first_push)
        wait_for(f"{name}: Prometheus sums the 2 ranks again", lambda: [
            r for r in c.query("deployment_rule:fingerprintd_worker_failures:sum") or []
            if r["metric"].get("deployment") == DEPLOYMENT and r["value"][1] == "2"],
            timeout=STEP)
        still_firing(f"after {name} started")
        return again[0][0] - stopped_at

    # 1. SIGTERM, away for GAP_SECONDS: the series vanish, nothing resolves.
    stopped_at, code = stop(signal.SIGTERM)
    assert code == 0, f"SIGTERM: exit code {code}"
    assert "closed rule=" not in e2e.procs.log("fingerprintd"), e2e.procs.log("fingerprintd")
    gap_seen = False
    while time.time() < stopped_at + GAP_SECONDS:
        still_firing(f"{time.time() - stopped_at:.0f} s after SIGTERM")
        gap_seen = gap_seen or c.query("fingerprintd_worker_failures") == []
        time.sleep(1)
    assert gap_seen, "Prometheus still had the daemon's series: no gap was tested"
    away_term = start_again("fingerprintd-after-sigterm", stopped_at)

    # 2. SIGKILL (no flush, no last checkpoint), started again at once.
    killed_at, code = stop(signal.SIGKILL)
    assert code == -signal.SIGKILL, f"SIGKILL: exit code {code}"
    time.sleep(1)  # a push the kill overtook arrives now, not as the restarted daemon's
    away_kill = start_again("fingerprintd-after-sigkill", killed_at)

    pushes = pushes_of(incident_id)
    for at, alert in pushes:
        lifetime = parse_time(alert["endsAt"]) - at
        assert lifetime >= MIN_LIFETIME, f"a push arrived at {at} ending {lifetime:.0f} s later"
        assert alert["generatorURL"] == pushed["generatorURL"], alert
    for name in ("fingerprintd", "fingerprintd-after-sigterm", "fingerprintd-after-sigkill"):
        assert "closed rule=" not in e2e.procs.log(name), f"{name} closed the incident"
    ids = {a["labels"]["incident_id"] for _, body in AlertRecorder.posts for a in body}
    assert ids == {incident_id}, f"more than one incident pushed: {ids}"
    print(f"{incident_id}: SIGTERM + {GAP_SECONDS} s away (pushed again {away_term:.1f} s after "
          f"the stop), SIGKILL (pushed again {away_kill:.1f} s after): {len(pushes)} pushes, "
          f"each ending >= {min(parse_time(a['endsAt']) - at for at, a in pushes):.0f} s after "
          f"it arrived; resolved received {c.received('resolved'):.0f} "
          f"(before: {resolved_before:.0f}), resolved notified 0; Prometheus' alert firing "
          f"since {active_at}, severity error on both paths")


if __name__ == "__main__":
    main(test)
