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

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=3
MSGS=2000000
SIZE=16
NSUBS=100000
BUILD=1
BUILD_DIR="$ROOT/build-bench"
NATSD=""
NATS_SERVER="/usr/sbin/nats-server"

while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --msgs) MSGS="$2"; shift ;;
    --size) SIZE="$2"; shift ;;
    --nsubs) NSUBS="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --natsd) NATSD="$2"; shift ;;
    --nats-server) NATS_SERVER="$2"; shift ;;
    --build-dir) BUILD_DIR="$2"; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "cluster.sh: unknown option $1" >&2; exit 1 ;;
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

# start_node BIN NAME CPORT RPORT MPORT [SEED_RPORT]: prints the pid
start_node() {
    local bin=$1 name=$2 cp=$3 rp=$4 mp=$5 seed=${6:-}
    local args=(-a 127.0.0.1 -p "$cp" -m "$mp" -n "$name" --cluster_name bench
        --cluster "nats://127.0.0.1:$rp")
    [ -n "$seed" ] && args+=(--routes "nats://127.0.0.1:$seed")
    "$bin" "${args[@]}" >"$LOG/$name.log" 2>&1 &
    echo $!
}

# wait_json MPORT PATH PYEXPR: polls until the expression over the JSON `d` is true (30 s)
wait_json() {
    local deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
        if curl -s "http://127.0.0.1:$1$2" | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($3) else 1)" 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}

rss() { awk '/VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }

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
printf '\n%-16s %14s %14s %8s\n' metric natsd nats-server ratio
for m in xpubsub xpubsub_cpu_ns xfanout live_s join_s rsub_B; do
    n=$(median "${RES[natsd.$m]:-}"); r=$(median "${RES[ref.$m]:-}")
    ratio=$(python3 -c "print(round($n/$r,2) if '$n' not in ('-','') and '$r' not in ('-','') and float('$r') else '-')")
    printf '%-16s %14s %14s %8s\n' "$m" "$n" "$r" "$ratio"
done
