#!/usr/bin/env python3
"""End to end (issue 42): a real `fingerprintd run` pushing to a real
Alertmanager that, as managed ones do, serves only HTTPS, asks for a client
certificate and for basic auth (`--web.config.file`).

Certificates are made here with the openssl command: a CA, Alertmanager's
certificate for 127.0.0.1, the daemon's client certificate, and a second CA
that signed nothing. The basic-auth password's bcrypt hash is written below,
computed once (its password is a test's, used nowhere else).

The daemon starts with the wrong CA file and the wrong password, as a
misconfigured Secret would give it:
1. the push fails the TLS handshake, and the daemon's log says so
   ("certificate verify failed"), and never falls back to plain HTTP;
2. the CA file is replaced with the right CA (no restart: the files are read
   for each POST): the handshake passes and Alertmanager refuses the
   password; the log says HTTP 401 and which keys to check;
3. the password file is fixed: the incident's alert reaches Alertmanager,
   whose API (asked over HTTPS with the client certificate and the password)
   lists it with its labels.
Every process started is stopped, even on failure.

usage: alertmanager_tls_e2e_test.py FINGERPRINTD ALERTMANAGER SOURCE_DIR
"""

import base64
import json
import os
import ssl
import subprocess
import sys
import urllib.request

from prometheus_e2e_support import E2e, free_port, main, wait_for

FINGERPRINTD, ALERTMANAGER, SOURCE_DIR = sys.argv[1:4]
GOLDEN = os.path.join(SOURCE_DIR, "tests/golden/vllm_tp2_unknown_sf.log")
DEPLOYMENT = "qwen3-fp8-rtx5090"
RULE = "deepgemm-unknown-sf-transformation"
USER = "fingerprintd"
PASSWORD = "e2e-only-password"
# bcrypt (cost 10) of PASSWORD, as Alertmanager's basic_auth_users takes it.
PASSWORD_HASH = "$2b$10$WN8s6Je6UUjM/0lUS51SVutDBTte.XqSryIEPGAEjOEF8FjpYyLX2"


def openssl(e2e, *args):
    subprocess.run(["openssl", *args], cwd=e2e.dir, check=True, capture_output=True)


def make_certificates(e2e):
    """ca.crt signs am.crt (127.0.0.1) and client.crt; other-ca.crt signs nothing."""
    for ca in ("ca", "other-ca"):
        openssl(e2e, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-subj", f"/CN=fingerprintd e2e {ca}")
    for name, extension in (("am", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                            ("client", "extendedKeyUsage=clientAuth")):
        openssl(e2e, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                "-out", f"{name}.csr", "-subj", f"/CN=fingerprintd e2e {name}")
        e2e.write(f"{name}.ext", extension + "\n")
        openssl(e2e, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", f"{name}.crt",
                "-extfile", f"{name}.ext")


def replace(e2e, name, text):
    """Writes NAME whole, as a Secret update does (a new file renamed over it)."""
    e2e.write(name + ".new", text)
    os.rename(e2e.path(name + ".new"), e2e.path(name))


def api_alerts(e2e, am_port):
    """Alertmanager's /api/v2/alerts over HTTPS, with the client certificate and the password."""
    context = ssl.create_default_context(cafile=e2e.path("ca.crt"))
    context.load_cert_chain(e2e.path("client.crt"), e2e.path("client.key"))
    login = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    request = urllib.request.Request(f"https://127.0.0.1:{am_port}/api/v2/alerts",
                                     headers={"Authorization": "Basic " + login})
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as reply:
            return json.loads(reply.read())
    except OSError:
        return None


def test():
    with E2e("alertmanager-tls-e2e") as e2e:
        run(e2e)


def run(e2e):
    make_certificates(e2e)
    am_port = free_port()
    e2e.write("web.yml", f"""
tls_server_config:
  cert_file: {e2e.path('am.crt')}
  key_file: {e2e.path('am.key')}
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: {e2e.path('ca.crt')}
basic_auth_users:
  {USER}: '{PASSWORD_HASH}'
""")
    e2e.write("alertmanager.yml", """
route: {receiver: none, group_wait: 1s, group_interval: 1s, repeat_interval: 1h}
receivers: [{name: none}]
""")
    e2e.procs.start("alertmanager", [
        ALERTMANAGER, f"--config.file={e2e.path('alertmanager.yml')}",
        f"--web.config.file={e2e.path('web.yml')}", f"--storage.path={e2e.path('am')}",
        f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address=",
        "--log.level=warn"])

    # The daemon's Secrets, both wrong at first.
    replace(e2e, "daemon-ca.crt", open(e2e.path("other-ca.crt")).read())
    replace(e2e, "password", "not-the-password\n")
    e2e.start_daemon(FINGERPRINTD, e2e.daemon_config(DEPLOYMENT, f"""
alertmanager:
  url: https://127.0.0.1:{am_port}
  tls_config:
    ca_file: {e2e.path('daemon-ca.crt')}
    cert_file: {e2e.path('client.crt')}
    key_file: {e2e.path('client.key')}
  basic_auth: {{username: {USER}, password_file: {e2e.path('password')}}}
  resend_interval: 1s
  timeout: 2s
"""))
    e2e.append_golden(GOLDEN)
    log = lambda: e2e.procs.log("fingerprintd")  # noqa: E731
    wait_for("the daemon to report the failed TLS handshake",
             lambda: "certificate verify failed" in log(), timeout=60)
    assert api_alerts(e2e, am_port) == [], "an alert arrived past a certificate nobody trusts"

    replace(e2e, "daemon-ca.crt", open(e2e.path("ca.crt")).read())
    wait_for("the daemon to report the refused password",
             lambda: "HTTP 401: the credentials were refused" in log(), timeout=60)
    assert api_alerts(e2e, am_port) == [], "an alert arrived with the wrong password"

    replace(e2e, "password", PASSWORD + "\n")

    def delivered():
        e2e.procs.check_running("alertmanager")
        e2e.procs.check_running("fingerprintd")
        alerts = [a for a in api_alerts(e2e, am_port) or []
                  if a["labels"].get("alertname") == "FingerprintdIncident"]
        return alerts[0] if alerts else None
    alert = wait_for("the alert delivered over TLS with the password", delivered, timeout=60)
    assert alert["labels"]["rule"] == RULE, alert
    assert alert["labels"]["class"] == "hardware_support", alert
    assert alert["labels"]["deployment"] == DEPLOYMENT, alert
    assert "reachable again" in log(), log()[-2000:]
    assert PASSWORD not in log() and "not-the-password" not in log(), "a secret reached the log"
    for line in log().splitlines():
        if "alertmanager https://" in line:
            print("daemon:", line)
    print(f"alert {alert['labels']['incident_id']} delivered over TLS with a client "
          "certificate and basic auth, after a wrong CA and a wrong password")


if __name__ == "__main__":
    main(test)
