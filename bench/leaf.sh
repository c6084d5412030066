#!/usr/bin/env bash
# Side-by-side leaf node benchmark: a natsd hub with a natsd leaf, and a nats-server hub with a
# nats-server leaf, on this machine, run alternately (fresh servers for every run, natsd first in
# odd rounds).
#
# Metrics (median of R rounds, ratio natsd/nats-server):
#   leafpubsub  ndbench pubsub, the publisher on the leaf and the subscriber on the hub: messages/s
#               crossing one leaf connection (16 B by default)
#   hubpubsub   the same the other way: publisher on the hub, subscriber on the leaf
#   idle_B      the hub's RSS growth per idle leaf connection (LEAFS connections made by a script
#               that speaks the leaf protocol: INFO, CONNECT, then nothing but PONGs)
#   resync_s    seconds from the leaf's connection (after a hub restart) to the hub's /leafz showing
#               all NSUBS subscriptions of a client on the leaf (the leaf re-sends its interest)
#   reconn_s    seconds from the hub's restart to the leaf connected again (the leaf's reconnect
#               interval, 1 s, dominates)
# The server CPU of the publishing server per message is printed beside the rates.
#
# Usage: bench/leaf.sh [--rounds R] [--msgs N] [--size B] [--nsubs N] [--leafs N] [--no-build]
#                      [--natsd PATH] [--nats-server PATH] [--build-dir DIR]
set -uo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NSUBS=100000
LEAFS=500
WAIT_JSON_SLEEP=0.02
bench_args "$0" "nsubs=NSUBS leafs=LEAFS" "$@"
bench_setup

# start_hub BIN NAME CPORT LPORT MPORT: prints the pid
start_hub() {
    printf 'listen: 127.0.0.1:%s\nhttp: 127.0.0.1:%s\nleafnodes { listen: 127.0.0.1:%s }\n' \
        "$3" "$5" "$4" >"$LOG/$2.conf"
    "$1" -c "$LOG/$2.conf" >"$LOG/$2.log" 2>&1 &
    echo $!
}

# start_leaf BIN NAME CPORT MPORT HUB_LPORT: prints the pid
start_leaf() {
    printf 'listen: 127.0.0.1:%s\nhttp: 127.0.0.1:%s\nleafnodes { reconnect: 1, remotes [ { url: "nats-leaf://127.0.0.1:%s" } ] }\n' \
        "$3" "$4" "$5" >"$LOG/$2.conf"
    "$1" -c "$LOG/$2.conf" >"$LOG/$2.log" 2>&1 &
    echo $!
}

now() { date +%s.%N; }
secs() { python3 -c "print(round($2-$1,3))"; }

# run_kind BIN: one round of every metric; prints "leafpubsub=.. ..."
run_kind() {
    local bin=$1 out="" h l lh ml mh ph pl r
    h=$(port); l=$(port); lh=$(port); mh=$(port); ml=$(port)
    ph=$(start_hub "$bin" hub "$h" "$lh" "$mh")
    wait_json "$mh" /varz 'True' || { echo "hub did not start" >&2; return 1; }
    pl=$(start_leaf "$bin" leaf "$l" "$ml" "$lh")
    wait_json "$mh" /leafz 'd["leafnodes"]==1' || { echo "leaf did not connect" >&2; return 1; }
    wait_json "$ml" /leafz 'd["leafnodes"]==1' || { echo "leaf did not connect" >&2; return 1; }
    # Idle leaf connections on the hub (measured first, on a fresh hub: the throughput runs
    # leave buffers behind): a script opens LEAFS of them and holds them.
    local rss0 holder
    rss0=$(rss "$ph")
    python3 - "$lh" "$LEAFS" >"$LOG/idle.out" <<'EOF' &
import select, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.recv(65536)  # INFO
    s.sendall(b'CONNECT {"version":"2.9.10","server_id":"NIDLE%d","name":"idle%d","headers":true}\r\n' % (i, i))
    socks.append(s)
print("ready", flush=True)
end = time.time() + 600
while time.time() < end:
    r, _, _ = select.select(socks, [], [], 1.0)
    for s in r:
        data = s.recv(65536)
        if b"PING" in data:
            s.sendall(b"PONG\r\n")
EOF
    holder=$!
    wait_json "$mh" /leafz "d['leafnodes'] >= $LEAFS + 1" || echo "idle leafs did not connect" >&2
    sleep 1 # let the hub's allocations for the new connections settle before reading its RSS
    out+="idle_B=$(python3 -c "print(round(($(rss "$ph")-$rss0)/$LEAFS))") "
    kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
    wait_json "$mh" /leafz "d['leafnodes'] == 1" || echo "idle leafs did not go" >&2

    r=$("$NDBENCH" pubsub -p "$l" --sub-ports "$h" -n "$MSGS" -z "$SIZE" --pid "$pl" | grep '^RESULT')
    out+="leafpubsub=$(sed 's/.* msgs_per_s=\([0-9]*\).*/\1/' <<<"$r") "
    out+="leafpubsub_cpu_ns=$(sed -n 's/.*srv_cpu_ns_per_op=\([0-9]*\).*/\1/p' <<<"$r") "
    r=$("$NDBENCH" pubsub -p "$h" --sub-ports "$l" -n "$MSGS" -z "$SIZE" --pid "$ph" | grep '^RESULT')
    out+="hubpubsub=$(sed 's/.* msgs_per_s=\([0-9]*\).*/\1/' <<<"$r") "
    out+="hubpubsub_cpu_ns=$(sed -n 's/.*srv_cpu_ns_per_op=\([0-9]*\).*/\1/p' <<<"$r") "

    # A client on the leaf holds NSUBS subscriptions; the hub restarts; we time the leaf's
    # return and its interest's.
    python3 - "$l" "$NSUBS" >"$LOG/holder.out" <<'EOF' &
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
    holder=$!
    wait_json "$mh" /leafz "d['leafs'][0]['subscriptions'] >= $NSUBS" || echo "interest did not arrive" >&2
    kill "$ph"; wait "$ph" 2>/dev/null
    local t0 t1 t2
    t0=$(now)
    ph=$(start_hub "$bin" hub2 "$h" "$lh" "$mh")
    wait_json "$mh" /leafz 'd["leafnodes"]==1' || echo "leaf did not come back" >&2
    t1=$(now)
    wait_json "$mh" /leafz "d['leafs'][0]['subscriptions'] >= $NSUBS" || echo "resync did not complete" >&2
    t2=$(now)
    out+="reconn_s=$(secs "$t0" "$t1") resync_s=$(secs "$t1" "$t2")"
    kill "$holder" "$ph" "$pl" 2>/dev/null; wait 2>/dev/null
    echo "$out"
}

bench_rounds
bench_table 18 leafpubsub leafpubsub_cpu_ns hubpubsub hubpubsub_cpu_ns idle_B reconn_s resync_s
