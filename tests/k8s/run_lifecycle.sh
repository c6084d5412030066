#!/bin/sh
# CTest entry of tests/k8s/lifecycle.py: Debian's python3 with its yaml module, or a skip.
# usage: run_lifecycle.sh <natsd> <deploy/k8s/natsd.yaml>
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import yaml' 2>/dev/null; then
    echo "SKIP: /usr/bin/python3 with the yaml module is needed (apt-get install python3-yaml)"
    exit 77
fi
exec "$PY" "$(dirname "$0")/lifecycle.py" "$@"
