#!/usr/bin/env bash
# Side-by-side cluster benchmark: a natsd cluster and a nats-server cluster of the same size on
# this machine, run alternately (a fresh cluster for every run, natsd first in odd rounds).
#
# Metrics (median of R rounds, ratio natsd/nats-server):
#   xpubsub   ndbench pubsub, the publisher on server A and the subscriber on server B:
#             messages/s crossing one route
#   xfanout   ndbench fanout, the publisher on A and one subscriber on each of A, B and C:
#             deliveries/s
#   live_s    seconds from a client on A starting to subscribe 100,000 subjects until B's
#             /subsz shows them all (propagation of live interest; includes the client's time)
#   rsub_B    B's RSS growth per remote subscription meanwhile
#   join_s    seconds from starting a server that joins A until its /subsz shows them all
#             (interest sent to a joining server; includes the server's start)
# The server CPU of A per message is printed beside the rates (ndbench's srv_cpu_ns).
#
# Usage: bench/cluster.sh [--rounds R] [--msgs N] [--size B] [--nsubs N] [--no-build]
#                         [--natsd PATH] [--nats-server PATH] [--build-dir DIR]
set -uo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NSUBS=100000
bench_args "$0" "nsubs=NSUBS" "$@"
bench_setup

# start_node BIN NAME CPORT RPORT MPORT [SEED_RPORT]: prints the pid
start_node() {
    local bin=$1 name=$2 cp=$3 rp=$4 mp=$5 seed=${6:-}
    local args=(-a 127.0.0.1 -p "$cp" -m "$mp" -n "$name" --cluster_name bench
        --cluster "nats://127.0.0.1:$rp")
    [ -n "$seed" ] && args+=(--routes "nats://127.0.0.1:$seed")
    "$bin" "${args[@]}" >"$LOG/$name.log" 2>&1 &
    echo $!
}


# run_kind BIN: one round of every metric; prints "xpubsub=.. xfanout=.. join_s=.. rsub_B=.."
run_kind() {
    local bin=$1 out=""
    local a b c ra rb rc ma mb mc pa pb pc
    a=$(port); b=$(port); c=$(port); ra=$(port); rb=$(port); rc=$(port)
    ma=$(port); mb=$(port); mc=$(port)
    pa=$(start_node "$bin" A "$a" "$ra" "$ma")
    pb=$(start_node "$bin" B "$b" "$rb" "$mb" "$ra")
    pc=$(start_node "$bin" C "$c" "$rc" "$mc" "$ra")
    for m in "$ma" "$mb" "$mc"; do wait_json "$m" /routez 'd["num_routes"]==2' || { echo "mesh did not form" >&2; return 1; }; done
    local r
    r=$("$NDBENCH" pubsub -p "$a" --sub-ports "$b" -n "$MSGS" -z "$SIZE" --pid "$pa" | grep '^RESULT')
    out+="xpubsub=$(sed 's/.* msgs_per_s=\([0-9]*\).*/\1/' <<<"$r") "
    out+="xpubsub_cpu_ns=$(sed -n 's/.*srv_cpu_ns_per_op=\([0-9]*\).*/\1/p' <<<"$r") "
    r=$("$NDBENCH" fanout -p "$a" --sub-ports "$a,$b,$c" -k 3 -n "$((MSGS / 2))" -z "$SIZE" --pid "$pa" | grep '^RESULT')
    out+="xfanout=$(sed 's/.* deliveries_per_s=\([0-9]*\).*/\1/' <<<"$r") "
    kill "$pc"; wait "$pc" 2>/dev/null
    # A client on A subscribes NSUBS subjects: we time until B has them all (propagation of
    # live interest) and take B's RSS growth per remote subscription; then a fresh server C
    # joins and we time until it has them all (interest sent to a joining server).
    local rss0 t0 t1
    rss0=$(rss "$pb")
    t0=$(date +%s.%N)
    python3 - "$a" "$NSUBS" >"$LOG/holder.out" <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
n = int(sys.argv[2])
s.sendall(b'CONNECT {"verbose":false}\r\n' + b"".join(b"SUB bench.%d %d\r\n" % (i, i) for i in range(n)) + b"PING\r\n")
buf = b""
while b"PONG" not in buf:
    buf += s.recv(65536)
print("ready", flush=True)
time.sleep(600)
EOF
    local holder=$!
    wait_json "$mb" /subsz "d['num_subscriptions'] >= $NSUBS" || echo "propagation did not complete" >&2
    t1=$(date +%s.%N)
    out+="live_s=$(python3 -c "print(round($t1-$t0,3))") "
    out+="rsub_B=$(python3 -c "print(round(($(rss "$pb")-$rss0)/$NSUBS))") "
    t0=$(date +%s.%N)
    pc=$(start_node "$bin" C2 "$c" "$rc" "$mc" "$ra")
    wait_json "$mc" /subsz "d['num_subscriptions'] >= $NSUBS" || echo "join did not complete" >&2
    t1=$(date +%s.%N)
    out+="join_s=$(python3 -c "print(round($t1-$t0,3))")"
    kill "$holder" "$pa" "$pb" "$pc" 2>/dev/null; wait 2>/dev/null
    echo "$out"
}

bench_rounds
bench_table 16 xpubsub xpubsub_cpu_ns xfanout live_s join_s rsub_B
