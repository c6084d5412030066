#!/usr/bin/env bash
# Side-by-side WebSocket benchmark: natsd and nats-server, each with a plain (no_tls) websocket
# port on this machine, run alternately (a fresh server for every metric, natsd first in odd
# rounds). Every client is ndbench --ws: an RFC 6455 upgrade, then the protocol in binary
# frames, masked by the client as browsers and nats.ws do; no compression is offered.
#
# Metrics (median of R rounds, ratio natsd/nats-server):
#   ws_pub      ndbench pub: one WebSocket publisher, N messages of S bytes, msgs/s
#   ws_pubsub   ndbench pubsub: one WebSocket publisher and one WebSocket subscriber on one
#               subject, msgs/s received
#   ws_idle_B   ndbench idleconns: C WebSocket clients upgraded, CONNECT, PING/PONG, then idle:
#               the server's RSS growth per connection, in bytes
# The server CPU per message is printed beside the rates (ndbench's srv_cpu_ns_per_op).
#
# Usage: bench/ws.sh [--rounds R] [--msgs N] [--size B] [--conns C] [--no-build]
#                    [--natsd PATH] [--nats-server PATH] [--build-dir DIR]
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=3
MSGS=2000000
SIZE=16
CONNS=5000
BUILD=1
BUILD_DIR="$ROOT/build-bench"
NATSD=""
NATS_SERVER="/usr/sbin/nats-server"

while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --msgs) MSGS="$2"; shift ;;
    --size) SIZE="$2"; shift ;;
    --conns) CONNS="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --natsd) NATSD="$2"; shift ;;
    --nats-server) NATS_SERVER="$2"; shift ;;
    --build-dir) BUILD_DIR="$2"; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ws.sh: unknown option $1" >&2; exit 1 ;;
    esac
    shift
done

if [ "$BUILD" = 1 ]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DND_TESTS=ON >/dev/null &&
        cmake --build "$BUILD_DIR" -j2 --target natsd ndbench >/dev/null || exit 1
fi
NATSD="${NATSD:-$BUILD_DIR/natsd}"
NDBENCH="$BUILD_DIR/bench/ndbench"
LOG="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$LOG"' EXIT

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# start BIN: starts a server with a websocket port; sets PID and WSPORT
start() {
    local bin=$1 cp
    cp=$(port)
    WSPORT=$(port)
    printf 'listen: 127.0.0.1:%s\nwebsocket { host: 127.0.0.1, port: %s, no_tls: true }\n' \
        "$cp" "$WSPORT" >"$LOG/ws.conf"
    "$bin" -c "$LOG/ws.conf" >"$LOG/server.log" 2>&1 &
    PID=$!
    "$NDBENCH" wait -p "$cp" --timeout 20 >/dev/null || { echo "server did not start" >&2; return 1; }
}

stop() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }

field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }

# run_kind BIN: one round of every metric; prints "ws_pub=.. ws_pub_cpu_ns=.. ..."
run_kind() {
    local bin=$1 out="" r
    start "$bin" || return 1
    r=$("$NDBENCH" pub --ws -p "$WSPORT" -n "$MSGS" -z "$SIZE" --pid "$PID" | grep '^RESULT')
    out+="ws_pub=$(field msgs_per_s "$r") ws_pub_cpu_ns=$(field srv_cpu_ns_per_op "$r") "
    stop
    start "$bin" || return 1
    r=$("$NDBENCH" pubsub --ws -p "$WSPORT" -n "$MSGS" -z "$SIZE" --pid "$PID" | grep '^RESULT')
    out+="ws_pubsub=$(field msgs_per_s "$r") ws_pubsub_cpu_ns=$(field srv_cpu_ns_per_op "$r") "
    stop
    start "$bin" || return 1
    r=$("$NDBENCH" idleconns --ws -p "$WSPORT" -c "$CONNS" --pid "$PID" | grep '^RESULT')
    out+="ws_idle_B=$(field bytes_per_conn "$r")"
    stop
    echo "$out"
}

declare -A RES
for ((i = 1; i <= ROUNDS; i++)); do
    if ((i % 2)); then order="natsd ref"; else order="ref natsd"; fi
    for k in $order; do
        bin=$NATSD; [ "$k" = ref ] && bin=$NATS_SERVER
        line=$(run_kind "$bin") || continue
        echo "round $i $k: $line"
        for kv in $line; do RES[$k.${kv%%=*}]+="${kv#*=} "; done
    done
done

median() { tr ' ' '\n' <<<"$1" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
printf '\n%-18s %14s %14s %8s\n' metric natsd nats-server ratio
for m in ws_pub ws_pub_cpu_ns ws_pubsub ws_pubsub_cpu_ns ws_idle_B; do
    n=$(median "${RES[natsd.$m]:-}"); r=$(median "${RES[ref.$m]:-}")
    ratio=$(python3 -c "print(round($n/$r,2) if '$n' not in ('-','') and '$r' not in ('-','') and float('$r') else '-')")
    printf '%-18s %14s %14s %8s\n' "$m" "$n" "$r" "$ratio"
done
