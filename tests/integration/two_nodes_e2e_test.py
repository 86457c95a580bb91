#!/usr/bin/env python3
"""End to end (issue 41): a TP=4 deployment split over two nodes recovers on
both.

Two real `fingerprintd run` daemons, as two nodes' DaemonSet pods: node A reads
the leader's processes (the API server and engine core, ranks 0 and 1), node B
ranks 2 and 3, both labelling them deployment `tp4`; a real Prometheus (1 s
scrape and evaluation) scrapes both with the shipped deploy/prometheus/alerts.yml
(its deployment alerts' keep_firing_for, which carries them through a restart
of a daemon, cut from 10m to 5s so that the resolution is seen here). The TP=4
DeepGEMM failure (tests/golden/vllm_tp4_unknown_sf_per_worker) is written into
both nodes' files; each daemon holds 2 of the 4 ranks, so it reports its share
when its window (2 s here) has passed; the test waits until
FingerprintdHardwareSupportGap fires for `tp4` with its four ranks. Then the deployment starts again healthy: each
rank's new process captures its CUDA graphs (vLLM's "Graph capturing finished",
the rank-scoped ready rule), and only node A sees the API server's "Application
startup complete.". Node B's share of the incident must close as recovered
within 30 s of the leader's ready line (it never sees it), and Prometheus must
resolve the alert. Every process started is stopped, even on failure.

usage: two_nodes_e2e_test.py FINGERPRINTD PROMETHEUS SOURCE_DIR
"""

import json
import os
import re
import sys
import time

from prometheus_e2e_support import E2e, free_port, get, get_json, main, wait_for

FINGERPRINTD, PROMETHEUS, SOURCE_DIR = sys.argv[1:4]
ALERTS = os.path.join(SOURCE_DIR, "deploy/prometheus/alerts.yml")
PER_WORKER = os.path.join(SOURCE_DIR, "tests/golden/vllm_tp4_unknown_sf_per_worker")
NODES = {"node-a": ["engine_core.log", "worker_tp0.log", "worker_tp1.log"],
         "node-b": ["worker_tp2.log", "worker_tp3.log"]}
STEP = 60  # seconds each wait may take (CI runs this under sanitizers at -j2)


def incidents(e2e, node):
    path = e2e.path(node, "incidents.jsonl")
    if not os.path.exists(path):
        return {}
    latest = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):
                j = json.loads(line)
                latest[j["incident_id"]] = j
    return latest


def start_node(e2e, node):
    os.makedirs(e2e.path(node, "logs"), exist_ok=True)
    e2e.write(f"{node}.yaml", f"""
sources:
  - type: file
    paths: ["{e2e.path(node, 'logs')}/*.log"]
    start_at: beginning
    labels: {{deployment: tp4}}
incidents: {{path: {e2e.path(node, 'incidents.jsonl')}}}
http: {{listen: 127.0.0.1:0}}
correlation: {{window: 2s}}
""")
    e2e.procs.start(node, [FINGERPRINTD, "run", "--config", e2e.path(f"{node}.yaml")])

    def port():
        e2e.procs.check_running(node)
        m = re.search(r"http: listening on 127\.0\.0\.1:(\d+)", e2e.procs.log(node))
        return int(m.group(1)) if m else None
    return wait_for(f"{node}'s http: listening line", port, timeout=STEP)


def append(e2e, node, name, text):
    with open(e2e.path(node, "logs", name), "a", encoding="utf-8") as f:
        f.write(text)


def test():
    with E2e("two-nodes-e2e") as e2e:
        ports = {node: start_node(e2e, node) for node in NODES}
        shipped = open(ALERTS).read()
        assert shipped.count("keep_firing_for: 10m") == 3, "alerts.yml: expected 3 keep_firing_for"
        e2e.write("alerts.yml", shipped.replace("keep_firing_for: 10m", "keep_firing_for: 5s"))
        targets = ", ".join(f'"127.0.0.1:{p}"' for p in ports.values())
        e2e.write("prometheus.yml", f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["{e2e.path('alerts.yml')}"]
scrape_configs:
  - job_name: fingerprintd
    static_configs: [{{targets: [{targets}]}}]
""")
        prom_port = free_port()
        e2e.procs.start("prometheus", [
            PROMETHEUS, f"--config.file={e2e.path('prometheus.yml')}",
            f"--storage.tsdb.path={e2e.path('tsdb')}",
            f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])
        api = f"http://127.0.0.1:{prom_port}/api/v1"

        # The failure, each node its own processes' files.
        for node, names in NODES.items():
            for name in names:
                with open(os.path.join(PER_WORKER, name), encoding="utf-8") as f:
                    append(e2e, node, name, f.read())

        def firing():
            for node in NODES:
                e2e.procs.check_running(node)
            alerts = get_json(f"{api}/alerts")
            for a in (alerts or {}).get("data", {}).get("alerts", []):
                if a["labels"].get("alertname") == "FingerprintdHardwareSupportGap" and \
                        a["labels"].get("deployment") == "tp4" and a["state"] == "firing":
                    return a
            return None
        # The two nodes' ranks add up to 4 (each daemon exports its own).
        wait_for("FingerprintdHardwareSupportGap firing for tp4 with 4 ranks",
                 lambda: (firing() or {}).get("value") in ("4", "4e+00"), timeout=STEP)
        for node in NODES:
            assert len(incidents(e2e, node)) == 1, f"{node}: {incidents(e2e, node)}"

        # The deployment starts again: every rank's new process captures its graphs, then the
        # leader's API server comes up (node A alone sees that line).
        for node, names in NODES.items():
            for name in names:
                m = re.match(r"worker_tp(\d)\.log", name)
                if m:
                    rank = int(m.group(1))
                    append(e2e, node, name,
                           f"(Worker_TP{rank} pid={900 + rank}) INFO 02-17 08:20:3{rank} "
                           "[gpu_model_runner.py:3480] Graph capturing finished in 8 secs, "
                           "took 0.58 GiB\n")
        append(e2e, "node-a", "engine_core.log",
               "(APIServer pid=2) INFO 02-17 08:20:10 [api_server.py:1885] vLLM API server "
               "version 0.11.2\n"
               "(APIServer pid=2) INFO:     Application startup complete.\n")
        ready_at = time.monotonic()

        def closed(node):
            return all(j.get("closed") == "recovered" for j in incidents(e2e, node).values())
        wait_for("node B's share closed as recovered", lambda: closed("node-b"), timeout=30)
        took = time.monotonic() - ready_at
        wait_for("node A's share closed as recovered", lambda: closed("node-a"), timeout=STEP)
        wait_for("FingerprintdHardwareSupportGap resolved in Prometheus",
                 lambda: not firing(), timeout=STEP)
        print(f"node B's share recovered {took:.1f} s after the leader's ready line; "
              "the deployment alert resolved")


if __name__ == "__main__":
    main(test)
