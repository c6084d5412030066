#!/usr/bin/python3
"""Validates natsd's /metrics with the parsers of the Prometheus Python client (Debian's
python3-prometheus-client), as a scraper would read it.

Usage: check_metrics.py PROM_FILE OPENMETRICS_FILE
  PROM_FILE         the body served for a plain request (Prometheus text format 0.0.4)
  OPENMETRICS_FILE  the body served for "Accept: application/openmetrics-text" (OpenMetrics 1.0)

Both must parse; family names must be unique in each; both must carry the same families with the
same types; the counters and the process_* families the issue asks for must be there. Prints
one line per problem and exits 1 on any. Run by tests/integ/test_monitor.c (metrics_parsers).
"""
import sys

from prometheus_client.openmetrics import parser as om_parser
from prometheus_client import parser as prom_parser

REQUIRED = {
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_max_fds": "gauge",
    "process_start_time_seconds": "gauge",
    "natsd_start_time_seconds": "gauge",
    "natsd_connections": "gauge",
    "natsd_connections_accepted": "counter",
    "natsd_in_msgs": "counter",
}


def families(kind, text, parse):
    out = {}
    problems = []
    try:
        for fam in parse(text):
            if fam.name in out:
                problems.append(f"{kind}: family {fam.name} twice")
            out[fam.name] = fam
    except Exception as e:  # the parsers raise ValueError and friends on bad input
        problems.append(f"{kind}: does not parse: {e!r}")
    return out, problems


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        prom_text = f.read()
    with open(sys.argv[2], encoding="utf-8") as f:
        om_text = f.read()
    prom, problems = families("text 0.0.4", prom_text, prom_parser.text_string_to_metric_families)
    om, p2 = families("openmetrics", om_text, om_parser.text_string_to_metric_families)
    problems += p2
    if not om_text.endswith("# EOF\n"):
        problems.append("openmetrics: does not end with # EOF")
    if "# EOF" in prom_text:
        problems.append("text 0.0.4: carries # EOF")
    for name, fam in om.items():
        if name not in prom:
            problems.append(f"{name}: in openmetrics only")
        elif prom[name].type != fam.type:
            problems.append(f"{name}: {prom[name].type} in text 0.0.4, {fam.type} in openmetrics")
        if fam.type == "counter":
            for s in fam.samples:
                if not s.name.endswith("_total"):
                    problems.append(f"counter sample {s.name} does not end in _total")
    for name in prom:
        if name not in om:
            problems.append(f"{name}: in text 0.0.4 only")
    for name, typ in REQUIRED.items():
        for kind, fams in (("text 0.0.4", prom), ("openmetrics", om)):
            if name not in fams:
                problems.append(f"{kind}: no {name}")
            elif fams[name].type != typ:
                problems.append(f"{kind}: {name} is a {fams[name].type}, not a {typ}")
    # A timestamp keeps sub-second resolution (not %.9g's ten seconds).
    for line in om_text.splitlines():
        if line.startswith("natsd_start_time_seconds "):
            value = line.split(" ", 1)[1]
            if len(value.partition(".")[2]) != 9:
                problems.append(f"natsd_start_time_seconds {value}: not to the nanosecond")
    for p in problems:
        print(p)
    print(f"{len(prom)} families in text 0.0.4, {len(om)} in openmetrics, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
