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

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CONNS=5000
bench_args "$0" "conns=CONNS" "$@"
bench_setup

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

bench_rounds
bench_table 18 ws_pub ws_pub_cpu_ns ws_pubsub ws_pubsub_cpu_ns ws_idle_B
