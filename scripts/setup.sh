#!/usr/bin/env bash
# Installs the Debian packages natsd needs to build and test, and nothing else.
# A no-op (no apt-get call at all) when every package is already present.
# Usage: scripts/setup.sh [--tests]   (--tests adds the clients the tests drive)
set -euo pipefail

build_pkgs=(cmake make gcc clang pkg-config libck-dev libmsgpack-dev libjansson-dev libxxhash-dev
            libssl-dev libcriterion-dev libclang-rt-14-dev liblz4-dev
            libcrypt-dev)
test_pkgs=(libnats-dev nats-server openssl # openssl: the TLS tests make their certificates
           python3-prometheus-client) # /metrics read by a real parser (check_metrics.py)

want=("${build_pkgs[@]}")
if [ "${1:-}" = "--tests" ]; then
    want+=("${test_pkgs[@]}")
    # The JavaScript integration tests need node and npm. A machine may have them
    # from outside Debian (not known to dpkg), so Debian's are wanted only when the
    # commands themselves are missing.
    command -v node >/dev/null 2>&1 || want+=(nodejs)
    command -v npm >/dev/null 2>&1 || want+=(npm)
fi

missing=()
for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
