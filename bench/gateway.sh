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

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_args "$0" "" "$@"
bench_setup

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

bench_rounds
bench_table 16 gwpubsub gwpubsub_cpu_ns gwfanout gwreq_p50
