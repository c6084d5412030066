#!/usr/bin/env bash
# Side-by-side MQTT benchmark: natsd, the reference nats-server (2.9.10) and mosquitto (2.0) on
# this machine, measured with the same client (bench/mqttbench.c, raw MQTT 3.1.1 over TCP).
#
# Every run gets a fresh server process on a fresh port (and for natsd and nats-server a fresh
# JetStream store directory, which their MQTT sessions need); the servers take turns inside a
# round, the order rotating from round to round so that a drift in machine load favours none.
# The table shows the median of R rounds per server and the ratios natsd/nats-server and
# natsd/mosquitto.
#
# Metrics:
#   qos0     msgs/s: mqttbench pubsub -q 0, one publisher and one subscriber on one topic, the
#            publisher never more than --window messages ahead of the subscriber; from the first
#            publish to the N-th message received. srv_cpu_ns/msg: the server's user+system CPU
#            time per message (it hardly moves when other work competes for the CPUs).
#   qos1     the same at QoS 1: the publisher waits for PUBACKs (at most 1000 outstanding), the
#            subscriber acks every message.
#   idle     bytes of server RSS per idle MQTT connection (clean session, keep-alive off):
#            --conns connections, RSS read before and after (after a --settle pause each).
#   idlesub  the same with one QoS 1 subscription per connection (a session with state: in
#            nats-server a JetStream consumer each).
# Higher is better for msgs/s; lower for the rest.
#
# natsd is skipped (its column says "no MQTT") when it does not answer a CONNECT on its MQTT
# port within 5 s of starting: natsd before issue 17 ignores the mqtt block of its config.
#
# Usage: bench/mqtt.sh [options]
#   --rounds R          runs per server and metric (default 3)
#   --msgs N            QoS 0 messages (default 200000)
#   --msgs1 N           QoS 1 messages (default 50000)
#   --size BYTES        payload size (default 16)
#   --conns C           idle connections (default 1000)
#   --settle S          seconds before each RSS reading (default 1)
#   --quick             1 round, a quarter of the messages
#   --modes LIST        comma-separated subset of qos0,qos1,idle,idlesub (default all)
#   --natsd PATH        natsd binary (default: build/natsd at the repository root; "" or none
#                       to leave it out)
#   --nats-server PATH  reference (default /usr/sbin/nats-server; none to leave it out)
#   --mosquitto PATH    mosquitto broker (default /usr/sbin/mosquitto; none to leave it out)
#   --mqttbench PATH    load generator (default: build/bench/mqttbench, else compiled from
#                       bench/mqttbench.c with cc -O2 into the log directory)
#   --log-dir DIR       raw results and server logs (default: a new temporary folder)
#   -v, --verbose       also print every run's human-readable line
#   -h, --help
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=3
MSGS=200000
MSGS1=50000
SIZE=16
CONNS=1000
SETTLE=1
MODES="qos0,qos1,idle,idlesub"
NATSD="$ROOT/build/natsd"
NATS_SERVER=/usr/sbin/nats-server
MOSQUITTO=/usr/sbin/mosquitto
MQTTBENCH=""
LOG_DIR=""
VERBOSE=""
QUICK=0

die() { echo "mqtt.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --msgs) MSGS="$2"; shift ;;
    --msgs1) MSGS1="$2"; shift ;;
    --size) SIZE="$2"; shift ;;
    --conns) CONNS="$2"; shift ;;
    --settle) SETTLE="$2"; shift ;;
    --quick) QUICK=1 ;;
    --modes) MODES="$2"; shift ;;
    --natsd) NATSD="$2"; shift ;;
    --nats-server) NATS_SERVER="$2"; shift ;;
    --mosquitto) MOSQUITTO="$2"; shift ;;
    --mqttbench) MQTTBENCH="$2"; shift ;;
    --log-dir) LOG_DIR="$2"; shift ;;
    -v | --verbose) VERBOSE=1 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    [ $# -gt 0 ] && shift
done
if [ "$QUICK" = 1 ]; then
    [ "$ROUNDS" = 3 ] && ROUNDS=1
    [ "$MSGS" = 200000 ] && MSGS=50000
    [ "$MSGS1" = 50000 ] && MSGS1=12500
fi

if [ -z "$LOG_DIR" ]; then LOG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/natsd-mqtt.XXXXXX")"; fi
mkdir -p "$LOG_DIR" || die "cannot create $LOG_DIR"

# ---- binaries ----------------------------------------------------------------------------------
SERVERS=()
absent() { [ -z "$1" ] || [ "$1" = none ]; }
if ! absent "$NATSD"; then
    [ -x "$NATSD" ] || die "natsd not found at $NATSD (build it, pass --natsd PATH, or --natsd none)"
    SERVERS+=(natsd)
fi
if ! absent "$NATS_SERVER"; then
    [ -x "$NATS_SERVER" ] || die "nats-server not found at $NATS_SERVER"
    case "$("$NATS_SERVER" --version 2>&1)" in
    *2.9.10*) ;;
    *) echo "mqtt.sh: warning: reference is '$("$NATS_SERVER" --version 2>&1)', not 2.9.10" >&2 ;;
    esac
    SERVERS+=(nats-server)
fi
if ! absent "$MOSQUITTO"; then
    [ -x "$MOSQUITTO" ] || die "mosquitto not found at $MOSQUITTO"
    SERVERS+=(mosquitto)
fi
[ ${#SERVERS[@]} -gt 0 ] || die "no server to measure"

if [ -z "$MQTTBENCH" ]; then
    if [ -x "$ROOT/build/bench/mqttbench" ]; then
        MQTTBENCH="$ROOT/build/bench/mqttbench"
    else
        MQTTBENCH="$LOG_DIR/mqttbench"
        cc -O2 -Wall -o "$MQTTBENCH" "$ROOT/bench/mqttbench.c" || die "cannot compile bench/mqttbench.c"
    fi
fi
[ -x "$MQTTBENCH" ] || die "mqttbench not found at $MQTTBENCH"

bin_of() {
    case "$1" in
    natsd) echo "$NATSD" ;;
    nats-server) echo "$NATS_SERVER" ;;
    mosquitto) echo "$MOSQUITTO" ;;
    esac
}

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# A free port below the ephemeral range (nothing answering on it).
EPHEMERAL_LO=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
PORT_LO=10000
PORT_SPAN=$((EPHEMERAL_LO - PORT_LO))
[ "$PORT_SPAN" -ge 1000 ] || { PORT_LO=20000; PORT_SPAN=10000; }
pick_port() {
    local p tries=50
    while [ $tries -gt 0 ]; do
        tries=$((tries - 1))
        p=$((PORT_LO + (RANDOM * 32768 + RANDOM) % PORT_SPAN))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    die "no free port found"
}

SERVER_PID=""
PORT=""
RUN_DIR=""
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null
    local tries=100
    while [ $tries -gt 0 ] && kill -0 "$SERVER_PID" 2>/dev/null; do
        sleep 0.1
        tries=$((tries - 1))
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "mqtt.sh: server $SERVER_PID ignored SIGTERM for 10 s; killing it" >&2
        kill -KILL "$SERVER_PID" 2>/dev/null
    fi
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
    [ -n "$RUN_DIR" ] && rm -rf "$RUN_DIR"
    RUN_DIR=""
}
trap 'stop_server; exit 130' INT TERM
trap 'stop_server' EXIT

# start_server NAME LOG: a fresh server with MQTT on PORT; waits until it answers a CONNECT
# (natsd: 5 s, then it counts as having no MQTT). Returns 1 when it does not, 2 when the server
# exited. Sets SERVER_PID, PORT.
start_server() {
    local name="$1" log="$2" bin conf wait_s=20
    bin="$(bin_of "$name")"
    PORT=$(pick_port)
    case "$name" in
    mosquitto)
        "$bin" -p "$PORT" >"$log" 2>&1 &
        ;;
    *)
        RUN_DIR="$(mktemp -d "$LOG_DIR/run.XXXXXX")"
        conf="$RUN_DIR/server.conf"
        printf 'server_name: mqttbench\nlisten: "127.0.0.1:%d"\njetstream { store_dir: "%s/store" }\nmqtt { host: 127.0.0.1, port: %d }\n' \
            "$(pick_port)" "$RUN_DIR" "$PORT" >"$conf"
        "$bin" -c "$conf" >"$log" 2>&1 &
        [ "$name" = natsd ] && wait_s=5
        ;;
    esac
    SERVER_PID=$!
    if "$MQTTBENCH" wait -p "$PORT" --timeout "$wait_s" >/dev/null 2>&1; then return 0; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { SERVER_PID=""; return 2; }
    stop_server
    return 1
}

mode_args() {
    case "$1" in
    qos0) echo "pubsub -q 0 -n $MSGS -z $SIZE" ;;
    qos1) echo "pubsub -q 1 -n $MSGS1 -z $SIZE" ;;
    idle) echo "idle -c $CONNS --settle $SETTLE" ;;
    idlesub) echo "idle -c $CONNS --settle $SETTLE --sub-qos 1" ;;
    *) die "unknown mode $1" ;;
    esac
}
# mode -> "key:label:goal" triples
mode_metrics() {
    case "$1" in
    qos0 | qos1) echo "msgs_per_s:msgs/s:higher srv_cpu_ns_per_op:srv_cpu_ns/msg:lower" ;;
    idle | idlesub) echo "bytes_per_conn:B/conn:lower" ;;
    esac
}

IFS=, read -r -a MODE_LIST <<<"$MODES"
for m in "${MODE_LIST[@]}"; do mode_args "$m" >/dev/null; done

NATSD_SKIP=""
run_one() {
    local name="$1" mode="$2" round="$3" log out rc
    log="$LOG_DIR/$name.$mode.$round.server.log"
    out="$LOG_DIR/$name.$mode.$round.bench.log"
    if [ "$name" = natsd ] && [ -n "$NATSD_SKIP" ]; then return; fi
    start_server "$name" "$log"
    rc=$?
    if [ $rc -ne 0 ]; then
        if [ "$name" = natsd ]; then
            NATSD_SKIP="no MQTT"
            [ $rc = 2 ] && NATSD_SKIP="exited"
            echo "mqtt.sh: natsd does not serve MQTT ($NATSD_SKIP; see $log): skipped" >&2
            return
        fi
        echo "FAIL start" >>"$LOG_DIR/$name.$mode.results"
        echo "mqtt.sh: $name did not start (see $log)" >&2
        return
    fi
    # shellcheck disable=SC2046 # mode_args is a list of words.
    if timeout 600 "$MQTTBENCH" $(mode_args "$mode") -p "$PORT" --pid "$SERVER_PID" >"$out" 2>&1 &&
        grep -q '^RESULT ' "$out"; then
        grep '^RESULT ' "$out" | head -1 >>"$LOG_DIR/$name.$mode.results"
        [ -n "$VERBOSE" ] && grep -v '^RESULT ' "$out" | sed "s/^/  $name: /" >&2
    else
        echo "FAIL run" >>"$LOG_DIR/$name.$mode.results"
        printf '  %-11s %-8s round %d failed: %s\n' "$name" "$mode" "$round" "$(tail -1 "$out")" >&2
    fi
    stop_server
}

# stat NAME MODE KEY: "median count" of the successful runs, or "- 0".
stat() {
    awk -v key="$3" '
        /^RESULT / { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == key) v[n++] = kv[2] + 0 } }
        END {
            if (n == 0) { print "- 0"; exit }
            for (i = 1; i < n; i++) { x = v[i]; for (j = i - 1; j >= 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
            m = (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
            print m, n
        }' "$LOG_DIR/$1.$2.results" 2>/dev/null || echo "- 0"
}
fmt_num() {
    awk -v v="$1" 'BEGIN {
        if (v == "-") { print "n/a"; exit }
        if (v >= 1e6) printf "%.2fM\n", v / 1e6
        else if (v >= 1e4) printf "%.1fk\n", v / 1e3
        else printf "%d\n", v + 0.5 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f\n", a / b }'; }

echo "MQTT benchmark: ${SERVERS[*]}; $ROUNDS round(s), payload $SIZE B, $MSGS QoS 0 / $MSGS1 QoS 1 messages, $CONNS idle connections"
for s in "${SERVERS[@]}"; do
    b="$(bin_of "$s")"
    case "$s" in
    mosquitto) v="$("$b" -h 2>&1 | head -1)" ;;
    *) v="$("$b" --version 2>&1 | head -1)" ;;
    esac
    printf '  %-11s %s (%s)\n' "$s" "$b" "$v"
done
if [[ " ${SERVERS[*]} " == *" natsd "* ]] && [ -f "$(dirname "$NATSD")/CMakeCache.txt" ]; then
    bt="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$(dirname "$NATSD")/CMakeCache.txt")"
    [ "$bt" = Release ] || echo "  (natsd is a ${bt:-default} build: configure a Release build for numbers that mean something)"
fi
echo "  logs: $LOG_DIR"

for ((round = 1; round <= ROUNDS; round++)); do
    for mode in "${MODE_LIST[@]}"; do
        n=${#SERVERS[@]}
        for ((k = 0; k < n; k++)); do
            run_one "${SERVERS[$(((k + round - 1) % n))]}" "$mode" "$round"
        done
    done
done

# ---- the table ------------------------------------------------------------------------------
cols=("${SERVERS[@]}")
have_natsd=0
[[ " ${SERVERS[*]} " == *" natsd "* ]] && have_natsd=1
printf '\n%-9s %-17s' mode metric
for s in "${cols[@]}"; do printf ' %12s' "$s"; done
if [ $have_natsd = 1 ]; then
    for s in "${cols[@]}"; do [ "$s" = natsd ] || printf ' %16s' "natsd/$s"; done
fi
printf '\n'
for mode in "${MODE_LIST[@]}"; do
    for triple in $(mode_metrics "$mode"); do
        IFS=: read -r key label _ <<<"$triple"
        declare -A val=()
        printf '%-9s %-17s' "$mode" "$label"
        for s in "${cols[@]}"; do
            read -r v cnt <<<"$(stat "$s" "$mode" "$key")"
            val[$s]="$v"
            if [ "$s" = natsd ] && [ -n "$NATSD_SKIP" ]; then
                printf ' %12s' "$NATSD_SKIP"
            elif [ "$cnt" -lt "$ROUNDS" ] && [ "$v" != - ]; then
                printf ' %12s' "$(fmt_num "$v") ($cnt/$ROUNDS)"
            else
                printf ' %12s' "$(fmt_num "$v")"
            fi
        done
        if [ $have_natsd = 1 ]; then
            for s in "${cols[@]}"; do
                [ "$s" = natsd ] && continue
                printf ' %16s' "$(ratio "${val[natsd]}" "${val[$s]}")"
            done
        fi
        printf '\n'
        unset val
    done
done
echo
echo "msgs/s: higher is better; srv_cpu_ns/msg and B/conn: lower is better; ratios are natsd/other."
