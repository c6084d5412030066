#!/usr/bin/env bash
# Side-by-side gateway benchmark: two one-server clusters A and B joined by gateways, natsd
# against nats-server, run alternately (fresh servers for every run, natsd first in odd rounds).
#
# Metrics (median of R rounds, ratio natsd/nats-server):
#   gwpubsub  ndbench pubsub, the publisher on A and the subscriber on B: messages/s crossing
#             one gateway connection
#   gwfanout  ndbench fanout, the publisher on A, one subscriber on A and two on B:
#             deliveries/s
#   gwreq_p50 ndbench reqrep, the requester on A and the responder on B: median round trip in
#             microseconds (the reply crosses back as a "_GR_." gateway reply)
# The server CPU of A per message is printed beside the rates (ndbench's srv_cpu_ns).
#
# Usage: bench/gateway.sh [--rounds R] [--msgs N] [--size B] [--no-build]
#                         [--natsd PATH] [--nats-server PATH] [--build-dir DIR]
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=3
MSGS=2000000
SIZE=16
BUILD=1
BUILD_DIR="$ROOT/build-bench"
NATSD=""
NATS_SERVER="/usr/sbin/nats-server"

while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --msgs) MSGS="$2"; shift ;;
    --size) SIZE="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --natsd) NATSD="$2"; shift ;;
    --nats-server) NATS_SERVER="$2"; shift ;;
    --build-dir) BUILD_DIR="$2"; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gateway.sh: unknown option $1" >&2; exit 1 ;;
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

# start_node BIN NAME CPORT MPORT GPORT OTHER_NAME OTHER_GPORT: prints the pid
start_node() {
    local bin=$1 name=$2 cp=$3 mp=$4 gp=$5 oname=$6 ogp=$7
    cat >"$LOG/$name.conf" <<EOF
server_name: $name
listen: 127.0.0.1:$cp
http: 127.0.0.1:$mp
gateway {
  name: $name
  listen: 127.0.0.1:$gp
  gateways: [ {name: $oname, url: "nats://127.0.0.1:$ogp"} ]
}
EOF
    "$bin" -c "$LOG/$name.conf" >"$LOG/$name.log" 2>&1 &
    echo $!
}

# wait_json MPORT PATH PYEXPR: polls until the expression over the JSON `d` is true (60 s)
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

# run_kind BIN: one round of every metric; prints "gwpubsub=.. gwpubsub_cpu_ns=.. gwfanout=.."
run_kind() {
    local bin=$1 out=""
    local a b ma mb ga gb pa pb
    a=$(port); b=$(port); ma=$(port); mb=$(port); ga=$(port); gb=$(port)
    pa=$(start_node "$bin" A "$a" "$ma" "$ga" B "$gb")
    pb=$(start_node "$bin" B "$b" "$mb" "$gb" A "$ga")
    for m in "$ma" "$mb"; do
        wait_json "$m" /gatewayz 'len(d["outbound_gateways"])==1' || { echo "gateways did not connect" >&2; return 1; }
    done
    local r
    r=$("$NDBENCH" pubsub -p "$a" --sub-ports "$b" -n "$MSGS" -z "$SIZE" --pid "$pa" | grep '^RESULT')
    out+="gwpubsub=$(sed 's/.* msgs_per_s=\([0-9]*\).*/\1/' <<<"$r") "
    out+="gwpubsub_cpu_ns=$(sed -n 's/.*srv_cpu_ns_per_op=\([0-9]*\).*/\1/p' <<<"$r") "
    r=$("$NDBENCH" fanout -p "$a" --sub-ports "$a,$b,$b" -k 3 -n "$((MSGS / 2))" -z "$SIZE" --pid "$pa" | grep '^RESULT')
    out+="gwfanout=$(sed 's/.* deliveries_per_s=\([0-9]*\).*/\1/' <<<"$r") "
    r=$("$NDBENCH" reqrep -p "$a" --sub-ports "$b" -n 20000 -z "$SIZE" | grep '^RESULT')
    out+="gwreq_p50=$(sed 's/.* p50_us=\([0-9.]*\).*/\1/' <<<"$r")"
    kill "$pa" "$pb" 2>/dev/null; wait 2>/dev/null
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
for m in gwpubsub gwpubsub_cpu_ns gwfanout gwreq_p50; do
    n=$(median "${RES[natsd.$m]:-}"); r=$(median "${RES[ref.$m]:-}")
    ratio=$(python3 -c "print(round($n/$r,2) if '$n' not in ('-','') and '$r' not in ('-','') and float('$r') else '-')")
    printf '%-16s %14s %14s %8s\n' "$m" "$n" "$r" "$ratio"
done
