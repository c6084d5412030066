# shellcheck shell=bash
# shellcheck disable=SC2034 # MSGS, SIZE, NDBENCH, ...: read by the scripts that source this
# What the side-by-side benchmarks (bench/cluster.sh, leaf.sh, gateway.sh, ws.sh) share, sourced
# by each after its header comment and `set -uo pipefail`: the options every one takes, the
# build, the helpers, and the rounds that run natsd and nats-server alternately (natsd first in
# odd rounds) with the table of medians at the end.
#
# A script sets the defaults of its own options, calls bench_args, then bench_setup, defines
# run_kind BIN (one round of every metric, printing "metric=value ..."), then calls bench_rounds
# and bench_table. Invariants: the script's header comment ends at the `set -uo pipefail` line
# (--help prints it); run_kind's metrics are the names bench_table is given.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=3
MSGS=2000000
SIZE=16
BUILD=1
BUILD_DIR="$ROOT/build-bench"
NATSD=""
NATS_SERVER="/usr/sbin/nats-server"
WAIT_JSON_SLEEP=0.05

# bench_args SCRIPT OWN "$@": parses the options every benchmark takes and the script's own,
# OWN being "name=VAR ..." for options --name VALUE that set VAR. Exits on --help (the script's
# header comment) and on an unknown option.
bench_args() {
    local script=$1 own=$2 e var
    shift 2
    while [ $# -gt 0 ]; do
        case "$1" in
        --rounds) ROUNDS="$2"; shift ;;
        --msgs) MSGS="$2"; shift ;;
        --size) SIZE="$2"; shift ;;
        --no-build) BUILD=0 ;;
        --natsd) NATSD="$2"; shift ;;
        --nats-server) NATS_SERVER="$2"; shift ;;
        --build-dir) BUILD_DIR="$2"; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$script" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *)
            var=""
            for e in $own; do
                [ "$1" = "--${e%%=*}" ] && var=${e#*=}
            done
            if [ -z "$var" ]; then
                echo "$(basename "$script"): unknown option $1" >&2
                exit 1
            fi
            printf -v "$var" '%s' "$2"
            shift
            ;;
        esac
        shift
    done
}

# bench_setup: builds natsd and ndbench (unless --no-build) and sets NATSD, NDBENCH and LOG (a
# temporary folder, removed at exit, when the servers still running are killed).
bench_setup() {
    if [ "$BUILD" = 1 ]; then
        cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DND_TESTS=ON >/dev/null &&
            cmake --build "$BUILD_DIR" -j2 --target natsd ndbench >/dev/null || exit 1
    fi
    NATSD="${NATSD:-$BUILD_DIR/natsd}"
    NDBENCH="$BUILD_DIR/bench/ndbench"
    LOG="$(mktemp -d)"
    trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$LOG"' EXIT
}

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# wait_json MPORT PATH PYEXPR: polls (every WAIT_JSON_SLEEP seconds) until the expression over
# the JSON `d` is true (60 s)
wait_json() {
    local deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
        if curl -s "http://127.0.0.1:$1$2" | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($3) else 1)" 2>/dev/null; then
            return 0
        fi
        sleep "$WAIT_JSON_SLEEP"
    done
    return 1
}

rss() { awk '/VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }

median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }

# bench_rounds: ROUNDS rounds of run_kind, natsd and nats-server alternately; the values go to
# RES[natsd.<metric>] and RES[ref.<metric>].
declare -A RES
bench_rounds() {
    local i k order bin line kv
    for ((i = 1; i <= ROUNDS; i++)); do
        if ((i % 2)); then order="natsd ref"; else order="ref natsd"; fi
        for k in $order; do
            bin=$NATSD; [ "$k" = ref ] && bin=$NATS_SERVER
            line=$(run_kind "$bin") || continue
            echo "round $i $k: $line"
            for kv in $line; do RES[$k.${kv%%=*}]+="${kv#*=} "; done
        done
    done
}

# bench_table WIDTH METRIC...: the medians of natsd and nats-server and their ratio, the metric
# column WIDTH wide.
bench_table() {
    local w=$1 m n r ratio
    shift
    printf "\n%-${w}s %14s %14s %8s\n" metric natsd nats-server ratio
    for m in "$@"; do
        n=$(median "${RES[natsd.$m]:-}"); r=$(median "${RES[ref.$m]:-}")
        ratio=$(python3 -c "print(round($n/$r,2) if '$n' not in ('-','') and '$r' not in ('-','') and float('$r') else '-')")
        printf "%-${w}s %14s %14s %8s\n" "$m" "$n" "$r" "$ratio"
    done
}
