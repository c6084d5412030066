#!/usr/bin/python3
"""integ.observability: deploy/prometheus and deploy/grafana name only metrics natsd exports.

usage: test_observability.py <natsd> <source dir>

Starts natsd, reads a live /metrics with a real parser (Debian's python3-prometheus-client),
then takes every PromQL expression of deploy/prometheus/natsd-rules.yml and of the Grafana
dashboard (panel targets and template queries) apart and checks each metric name it uses
against the exported ones (`up` is Prometheus's own). With promtool (Debian's prometheus
package) it also runs `promtool check config` (which checks the rule files),
`promtool check rules` and `promtool check metrics` on the live output.
Skips (77) without python3-prometheus-client or python3-yaml.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

try:
    import yaml
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:
    print("SKIP: %s (apt-get install python3-prometheus-client python3-yaml)" % e)
    sys.exit(77)

PROMETHEUS_OWN = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def fail(msg):
    print("integ.observability: FAIL: " + msg, flush=True)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def metric_names(expr):
    """The metric names a PromQL expression selects."""
    m = re.fullmatch(r"\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*\w+\s*\)\s*", expr)
    if m:
        return {m.group(1)}
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for t in re.finditer(r"(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*", s):
        rest = s[t.end():].lstrip()
        if rest.startswith("(") or t.group(0) in KEYWORDS:
            continue
        names.add(t.group(0))
    return names


def main():
    binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    port, mport = free_port(), free_port()
    proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-m", str(mport)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        text = None
        end = time.time() + 10
        while text is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                            timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                if time.time() > end:
                    fail("no /metrics")
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait()
    exported = set()
    for fam in text_string_to_metric_families(text):
        exported.add(fam.name)
        for smp in fam.samples:
            exported.add(smp.name)

    exprs = []  # (where, expression)
    rules = os.path.join(src, "deploy/prometheus/natsd-rules.yml")
    for g in yaml.safe_load(open(rules))["groups"]:
        for r in g["rules"]:
            exprs.append(("rule %s" % r.get("alert", r.get("record")), str(r["expr"])))
    dash = json.load(open(os.path.join(src, "deploy/grafana/natsd-dashboard.json")))
    for p in dash["panels"]:
        for t in p.get("targets", []):
            exprs.append(("panel %r" % p["title"], t["expr"]))
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            exprs.append(("variable %s" % v["name"], v["query"]))
    # The extractor itself, on an expression with every construct it strips.
    got = metric_names('sum by (a) (rate(x_total{l=~"$v"}[$__rate_interval])) / on(i) y > 0 '
                       'and time() - z offset 5m')
    if got != {"x_total", "y", "z"}:
        fail("metric_names self-check: %r" % got)
    k8s = yaml.safe_load(open(os.path.join(src, "deploy/prometheus/prometheus-kubernetes.yml")))
    if k8s["rule_files"] != ["natsd-rules.yml"] or not k8s["scrape_configs"][0].get(
            "kubernetes_sd_configs"):
        fail("prometheus-kubernetes.yml: no rules or no kubernetes_sd_configs")
    used = set()
    for where, e in exprs:
        names = metric_names(e)
        if not names:
            fail("%s: no metric in %r" % (where, e))
        for n in names:
            if n not in exported and n not in PROMETHEUS_OWN:
                fail("%s: %s is not a metric natsd exports (%r)" % (where, n, e))
        used |= names
    print("integ.observability: %d expressions, %d metrics, all exported" % (len(exprs),
                                                                            len(used)))

    promtool = shutil.which("promtool")
    if promtool is None:
        print("integ.observability: promtool not installed: config and rule syntax not checked"
              " (apt-get install prometheus)")
        return 0
    for args in (["check", "config", os.path.join(src, "deploy/prometheus/prometheus.yml")],
                 ["check", "rules", rules]):
        r = subprocess.run([promtool] + args, capture_output=True, text=True)
        if r.returncode != 0:
            fail("promtool %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail("promtool check metrics: %s%s" % (r.stdout, r.stderr))
    print("integ.observability: promtool check config, rules and metrics pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
