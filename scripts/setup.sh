#!/usr/bin/env bash
# Installs the Debian packages natsd needs, and nothing else.
# A no-op (no apt-get call at all) when every package is already present.
# Usage: scripts/setup.sh [--tests] [--fuzz]
#   (none)    what building natsd needs (scripts/run.sh, scripts/package.sh)
#   --tests   also what the tests need: criterion, the clients they drive, the packaging tools
#   --fuzz    also clang and its libFuzzer runtime (scripts/test.sh --fuzz)
# On a system without dpkg and apt-get it installs nothing: it names the packages to install
# with the system's own package manager and leaves the rest to CMake's checks.
set -euo pipefail

build_pkgs=(cmake make gcc pkg-config libck-dev libmsgpack-dev libjansson-dev libxxhash-dev
            libssl-dev liblz4-dev libcrypt-dev zlib1g-dev)
# openssl: the TLS tests make their certificates; dpkg-dev, fakeroot: scripts/package.sh;
# groff-base: the man page check; python3-prometheus-client: /metrics read by a real parser
# (check_metrics.py); python3-yaml: the Prometheus and Kubernetes files read by the
# observability and lifecycle tests; buildah: the container image (scripts/image.sh);
# mosquitto-clients: mosquitto_pub/mosquitto_sub in the MQTT tests (tests/integ/test_mqtt.c);
# mosquitto: the third broker of bench/mqtt.sh.
test_pkgs=(libcriterion-dev libnats-dev nats-server openssl dpkg-dev fakeroot groff-base
           python3-prometheus-client python3-yaml buildah mosquitto-clients mosquitto)
fuzz_pkgs=(clang libclang-rt-14-dev)

want=("${build_pkgs[@]}")
tests=false
for arg in "$@"; do
    case "$arg" in
        --tests) tests=true; want+=("${test_pkgs[@]}") ;;
        --fuzz) want+=("${fuzz_pkgs[@]}") ;;
        *) echo "usage: $0 [--tests] [--fuzz]" >&2; exit 2 ;;
    esac
done
if $tests; then
    # The JavaScript integration tests need node and npm. A machine may have them
    # from outside Debian (not known to dpkg), so Debian's are wanted only when the
    # commands themselves are missing.
    command -v node >/dev/null 2>&1 || want+=(nodejs)
    command -v npm >/dev/null 2>&1 || want+=(npm)
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    cat >&2 <<MSG
setup: this is not a Debian system (no dpkg-query and apt-get), so nothing was installed.
setup: natsd is built and tested on Debian 12; install these packages (Debian's names; use your
setup: package manager's equivalents: the libraries with their headers and pkg-config files):
setup:   ${want[*]}
setup: CMake names any library it still cannot find.
MSG
    exit 0
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
