#!/usr/bin/env python3
"""End to end: a real Prometheus (1 s scrape and evaluation, temp storage,
deploy/prometheus/alerts.yml with its deployment alerts' keep_firing_for cut
from 10m to 5s, so that their resolution is seen here; promtool checks the
10 minutes, alerting_restart_e2e_test.py the restart they carry the alerts
through) scrapes a real `fingerprintd run --config`
(http on 127.0.0.1:0, its port read from its log). A TP=2 DeepGEMM `Unknown SF
transformation` failure is written into a tailed file; the test waits until
Prometheus's /api/v1/alerts shows FingerprintdHardwareSupportGap firing for the
deployment with its rule, class, severity and remedy. With `correlation:
{window: 2s}` the incident's old lifetime closed it 4 s after its last hit,
and the alert resolved while the server was still down: the test checks that
it is still firing more than 3 evaluation intervals past that, then writes the
deployment's healthy start (vLLM's `Application startup complete.`) and waits
until the alert resolves. It also checks, on the real scrape, that every
fingerprintd_* metric alerts.yml and the Grafana dashboard name is served.
Every process started is stopped, even on failure.

usage: prometheus_e2e_test.py FINGERPRINTD PROMETHEUS SOURCE_DIR
"""

import json
import os
import re
import sys
import time

from prometheus_e2e_support import HEALTHY_START, E2e, free_port, get, get_json, main, wait_for

FINGERPRINTD, PROMETHEUS, SOURCE_DIR = sys.argv[1:4]
ALERTS = os.path.join(SOURCE_DIR, "deploy/prometheus/alerts.yml")
DASHBOARD = os.path.join(SOURCE_DIR, "deploy/grafana/fingerprintd.json")
GOLDEN = os.path.join(SOURCE_DIR, "tests/golden/vllm_tp2_unknown_sf.log")
DEPLOYMENT = "qwen3-fp8-rtx5090"


def metric_names(text):
    return set(re.findall(r"(?<![A-Za-z0-9_:])fingerprintd_[a-z0-9_]+", text))


def served_families(metrics_text):
    return set(re.findall(r"^# TYPE (\S+) ", metrics_text, re.M))


def hardware_alert(alerts):
    for alert in alerts:
        labels = alert["labels"]
        if labels.get("alertname") == "FingerprintdHardwareSupportGap" and \
                alert["state"] == "firing":
            return alert
    return None


def test():
    with E2e("prometheus-e2e") as e2e:
        port = e2e.start_daemon(FINGERPRINTD, e2e.daemon_config(DEPLOYMENT,
                                                                "correlation: {window: 2s}\n"))
        status, _ = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200, f"/metrics answered {status}"

        prom_port = free_port()
        shipped = open(ALERTS).read()
        kept = shipped.count("keep_firing_for: 10m")
        assert kept == 3, f"alerts.yml: {kept} keep_firing_for: 10m, expected 3"
        e2e.write("alerts.yml", shipped.replace("keep_firing_for: 10m", "keep_firing_for: 5s"))
        e2e.write("prometheus.yml", f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["{e2e.path('alerts.yml')}"]
scrape_configs:
  - job_name: fingerprintd
    static_configs: [{{targets: ["127.0.0.1:{port}"]}}]
""")
        e2e.procs.start("prometheus", [
            PROMETHEUS, f"--config.file={e2e.path('prometheus.yml')}",
            f"--storage.tsdb.path={e2e.path('tsdb')}",
            f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])
        api = f"http://127.0.0.1:{prom_port}/api/v1"

        def target_up():
            e2e.procs.check_running("prometheus")
            targets = get_json(f"{api}/targets")
            return targets and any(t["health"] == "up"
                                   for t in targets["data"]["activeTargets"])
        wait_for("Prometheus scraping the daemon (target up)", target_up, timeout=60)

        e2e.append_golden(GOLDEN)
        wait_for("the 2/2 incident in the daemon's JSONL log",
                 lambda: '"affected":2' in open(e2e.path("incidents.jsonl")).read()
                 if os.path.exists(e2e.path("incidents.jsonl")) else False, timeout=60)

        def firing():
            e2e.procs.check_running("fingerprintd")
            alerts = get_json(f"{api}/alerts")
            return alerts and hardware_alert(alerts["data"]["alerts"])
        alert = wait_for("FingerprintdHardwareSupportGap firing in Prometheus", firing, timeout=60)
        labels = alert["labels"]
        expected = {"alertname": "FingerprintdHardwareSupportGap", "deployment": DEPLOYMENT,
                    "rule": "deepgemm-unknown-sf-transformation", "class": "hardware_support",
                    "severity": "critical"}
        assert labels == expected, f"labels {labels} != {expected}"
        assert alert["annotations"]["description"].startswith(
            f"2 rank(s) of {DEPLOYMENT} failed"), alert["annotations"]
        assert "per-tensor FP8" in alert["annotations"]["remediation"], alert["annotations"]

        rules = get_json(f"{api}/rules")
        for group in rules["data"]["groups"]:
            for rule in group["rules"]:
                assert rule["health"] == "ok", f"{rule['name']}: {rule.get('lastError')}"

        # Every metric the alerts and the dashboard name is served by the daemon.
        _, scrape = get(f"http://127.0.0.1:{port}/metrics")
        served = served_families(scrape)
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        wanted = metric_names(open(ALERTS).read()) | metric_names(" ".join(exprs))
        missing = sorted(wanted - served)
        assert not missing, f"not on /metrics: {missing}"

        # Nothing recovers: the old close (2 windows after the last hit) plus 3 evaluation
        # intervals later, the alert still fires and the ranks' series are still 1.
        time.sleep(4 + 3 + 1)
        assert firing(), "the alert resolved while nothing had recovered"
        _, scrape = get(f"http://127.0.0.1:{port}/metrics")
        ranks = re.findall(r'^fingerprintd_worker_failures\{.*\} 1$', scrape, re.M)
        assert len(ranks) == 2, f"fingerprintd_worker_failures of the 2 ranks: {ranks}"

        # The deployment starts healthy: the incident closes (recovered), the alert resolves
        # (keep_firing_for, 5 s here, later).
        e2e.append(HEALTHY_START)
        wait_for("the recovered close in the daemon's JSONL log",
                 lambda: '"closed":"recovered"' in open(e2e.path("incidents.jsonl")).read(),
                 timeout=60)
        wait_for("FingerprintdHardwareSupportGap resolved in Prometheus",
                 lambda: not firing(), timeout=60)
        print(f"alert firing with {labels} past the old close, resolved after the healthy "
              f"start; {len(wanted)} metric names checked on /metrics")


if __name__ == "__main__":
    main(test)
