#!/usr/bin/env bash
# Side-by-side benchmark of natsd and the reference nats-server on this machine.
#
# For every mode of ndbench (bench/ndbench.c) it runs natsd and nats-server alternately, a fresh
# server process for every run, with the same flags (-a 127.0.0.1 -p PORT, PORT drawn at random
# from the same range for both), R rounds each, and prints the median of each server and the
# ratio natsd/nats-server. The order inside a round alternates (natsd first in odd rounds,
# nats-server first in even ones) so that a drift in machine load does not favour either.
#
# The JetStream modes (js*) start both servers with `-js -sd <fresh store dir>` (a new directory
# for every run, removed after it), and jsfsync with a config file instead:
# `jetstream { store_dir: <fresh dir>, sync_interval: always }`. nats-server 2.9.10 does not know
# sync_interval (it came in 2.10); when the reference rejects it (checked with -t), it runs
# jsfsync with `-js -sd` and the table says so. The store directories lie under --store-dir
# (default: ${TMPDIR:-/tmp}, or when that is tmpfs the build directory, else $HOME), which must
# not be tmpfs or ramfs, so that an fsync reaches a disk; the header prints where and which file
# system. jsfsync also measures, in every round, one write + fsync per message on that directory
# without a server (ndbench fsync): the one-fsync-per-message rate that group commit is compared
# with, printed below the table.
#
# The consumer and KV modes (cons) run the same way, with `-js -sd <fresh dir>`: jspull (a durable
# pull consumer fetching 100 at a time and acking each message), jspush and jspushack (a push
# consumer delivering to a core subscriber, ack none / explicit with each message acked), kvput
# and kvget (a KV bucket's stream: puts waiting for their PubAck, direct gets; latency),
# jspending (server RSS per delivered, unacked message; the messages sit in a memory stream
# filled before the first reading) and jsidle (server RSS per idle durable pull consumer).
# Their targets (natsd against nats-server 2.9.10) are printed in the goal column.
#
# Usage: bench/compare.sh [options]
#   --quick              3 rounds, 30% of the messages, 2000 connections, 20000 subscriptions,
#                        30% of the JetStream messages and streams (core modes: about one
#                        minute on 2 cores)
#   --rounds R           runs per server and mode (default 5)
#   --modes LIST         comma-separated subset of: pub,pubsub,fanout,queue,reqrep,idleconns,subs
#                        (core, the default), jspub,jspubid,jssync,jsmem,jscreate,jsfsync (js),
#                        jspull,jspush,jspushack,kvput,kvget,jspending,jsidle (cons); the words
#                        core, js, cons and all stand for those groups
#   --size BYTES         payload size (default 16)
#   --scale F            multiplies the message and request counts (default 1)
#   --conns C            idle connections (default 10000)
#   --nsubs N            subscriptions (default 100000)
#   --consumers C        idle consumers of jsidle (default 10000; --quick: 2000)
#   --server-args "..."  extra flags given to both servers
#   --store-dir DIR      where the JetStream modes make their store directories (see above)
#   --natsd PATH         natsd binary (default: built in --build-dir)
#   --nats-server PATH   reference binary (default: /usr/sbin/nats-server, else from PATH)
#   --ndbench PATH       ndbench binary (default: built in --build-dir)
#   --build-dir DIR      Release build directory (default: build-bench at the repository root)
#   --no-build           use the binaries as they are
#   --log-dir DIR        where raw results and server logs go (default: a new temporary folder)
#   --stat median|best   statistic of the runs (default median; best = highest rate, lowest
#                        latency, memory or CPU: useful on a machine shared with other work)
#   -v, --verbose        also print every run's human-readable line
#   -h, --help
#
# Output: a table with one row per metric. Throughput rows (msgs/s, deliveries/s): higher is
# better. Latency rows (microseconds), memory rows (bytes per connection, subscription or stored
# message) and
# server CPU rows (srv_cpu_ns: the server's user+system CPU time per message, delivery or request,
# from /proc/<pid>/stat; it hardly moves when other processes compete for the CPUs, unlike the
# rates): lower is better. A run that fails is logged and left out of the median; the row then says how
# many runs succeeded.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS=5
CORE_MODES="pub,pubsub,fanout,queue,reqrep,idleconns,subs"
JS_MODES="jspub,jspubid,jssync,jsmem,jscreate,jsfsync"
CONS_MODES="jspull,jspush,jspushack,kvput,kvget,jspending,jsidle"
MODES="core"
STORE_DIR=""
SIZE=16
SCALE=1
CONNS=10000
NSUBS=100000
CONSUMERS=10000
SERVER_ARGS=""
NATSD=""
NATS_SERVER=""
NDBENCH=""
BUILD_DIR="$ROOT/build-bench"
BUILD=1
LOG_DIR=""
QUICK=0
VERBOSE=""
STAT=median

die() { echo "compare.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
    --quick) QUICK=1 ;;
    --rounds) ROUNDS="$2"; shift ;;
    --modes) MODES="$2"; shift ;;
    --size) SIZE="$2"; shift ;;
    --scale) SCALE="$2"; shift ;;
    --conns) CONNS="$2"; shift ;;
    --nsubs) NSUBS="$2"; shift ;;
    --consumers) CONSUMERS="$2"; shift ;;
    --server-args) SERVER_ARGS="$2"; shift ;;
    --store-dir) STORE_DIR="$2"; shift ;;
    --natsd) NATSD="$2"; shift ;;
    --nats-server) NATS_SERVER="$2"; shift ;;
    --ndbench) NDBENCH="$2"; shift ;;
    --build-dir) BUILD_DIR="$2"; shift ;;
    --no-build) BUILD=0 ;;
    --log-dir) LOG_DIR="$2"; shift ;;
    -v | --verbose) VERBOSE=1 ;;
    --stat) STAT="$2"; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
    esac
    [ $# -gt 0 ] && shift
done

case "$STAT" in median | best) ;; *) die "--stat must be median or best" ;; esac

# --quick only lowers what was not given explicitly.
if [ "$QUICK" = 1 ]; then
    [ "$ROUNDS" = 5 ] && ROUNDS=3
    [ "$SCALE" = 1 ] && SCALE=0.3
    [ "$CONNS" = 10000 ] && CONNS=2000
    [ "$NSUBS" = 100000 ] && NSUBS=20000
    [ "$CONSUMERS" = 10000 ] && CONSUMERS=2000
fi

# ---- binaries --------------------------------------------------------------------------------
if [ -z "$NATS_SERVER" ]; then
    if [ -x /usr/sbin/nats-server ]; then NATS_SERVER=/usr/sbin/nats-server
    else NATS_SERVER="$(command -v nats-server || true)"; fi
fi
if [ -z "$NATS_SERVER" ] || [ ! -x "$NATS_SERVER" ]; then die "nats-server not found (use --nats-server)"; fi
NS_VERSION="$("$NATS_SERVER" --version 2>&1 | head -1)"
case "$NS_VERSION" in
*2.9.10*) ;;
*) echo "compare.sh: warning: reference is '$NS_VERSION', not nats-server 2.9.10" >&2 ;;
esac

if [ "$BUILD" = 1 ] && { [ -z "$NATSD" ] || [ -z "$NDBENCH" ]; }; then
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
        # ND_TESTS: the benchmarks are built with the tests (criterion is needed).
        cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DND_TESTS=ON >/dev/null ||
            die "cmake configure of $BUILD_DIR failed"
    fi
    targets=()
    [ -z "$NATSD" ] && targets+=(natsd)
    [ -z "$NDBENCH" ] && targets+=(ndbench)
    cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${targets[@]}" >"${TMPDIR:-/tmp}/compare-build.$$.log" 2>&1 ||
        { tail -30 "${TMPDIR:-/tmp}/compare-build.$$.log" >&2; die "build of ${targets[*]} failed"; }
    rm -f "${TMPDIR:-/tmp}/compare-build.$$.log"
fi
[ -n "$NATSD" ] || NATSD="$BUILD_DIR/natsd"
[ -n "$NDBENCH" ] || NDBENCH="$BUILD_DIR/bench/ndbench"
[ -x "$NATSD" ] || die "natsd not found at $NATSD"
[ -x "$NDBENCH" ] || die "ndbench not found at $NDBENCH"

# Both servers and ndbench inherit the hard descriptor limit: idleconns needs one per connection
# on each side.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((CONNS + 100)) ]; then
    echo "compare.sh: warning: descriptor limit $(ulimit -n) is below $((CONNS + 100)); lowering --conns" >&2
    CONNS=$(($(ulimit -n) - 100))
fi

if [ -z "$LOG_DIR" ]; then LOG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/natsd-compare.XXXXXX")"; fi
mkdir -p "$LOG_DIR" || die "cannot create $LOG_DIR"

scaled() { awk -v n="$1" -v f="$SCALE" 'BEGIN { v = int(n * f + 0.5); if (v < 1) v = 1; print v }'; }
PUB_N=$(scaled 10000000)
PUBSUB_N=$(scaled 4000000)
FANOUT_N=$(scaled 2000000)
QUEUE_N=$(scaled 3000000)
REQ_N=$(scaled 20000)
JSPUB_N=$(scaled 1000000)
JSPUBID_N=$(scaled 500000)
JSSYNC_N=$(scaled 20000)
JSMEM_N=$(scaled 1000000)
JSCREATE_N=$(scaled 1000)
JSFSYNC_N=$(scaled 50000)
FSYNC_N=$(scaled 2000)
JSPULL_N=$(scaled 200000)
JSPUSH_N=$(scaled 500000)
JSPUSHACK_N=$(scaled 50000)
KV_N=$(scaled 20000)
JSPENDING_N=$(scaled 200000)

# Expand the group words of --modes.
expanded=""
IFS=, read -r -a requested <<<"$MODES"
for m in "${requested[@]}"; do
    case "$m" in
    core) m="$CORE_MODES" ;;
    js) m="$JS_MODES" ;;
    cons) m="$CONS_MODES" ;;
    all) m="$CORE_MODES,$JS_MODES,$CONS_MODES" ;;
    esac
    expanded="${expanded:+$expanded,}$m"
done
MODES="$expanded"

# mode -> ndbench arguments; mode -> "metric:label:goal" triples (goal: higher or lower).
mode_args() {
    case "$1" in
    pub) echo "-n $PUB_N -z $SIZE" ;;
    pubsub) echo "-n $PUBSUB_N -z $SIZE" ;;
    fanout) echo "-n $FANOUT_N -z $SIZE -k 5" ;;
    queue) echo "-n $QUEUE_N -z $SIZE -q 4" ;;
    reqrep) echo "-n $REQ_N -z $SIZE" ;;
    idleconns) echo "-c $CONNS" ;;
    subs) echo "-N $NSUBS" ;;
    jspub) echo "-n $JSPUB_N -z $SIZE" ;;
    jspubid) echo "-n $JSPUBID_N -z $SIZE" ;;
    jssync) echo "-n $JSSYNC_N -z $SIZE" ;;
    jsmem) echo "-n $JSMEM_N -z $SIZE" ;;
    jscreate) echo "-n $JSCREATE_N" ;;
    jsfsync) echo "-n $JSFSYNC_N -z $SIZE" ;;
    jspull) echo "-n $JSPULL_N -z $SIZE" ;;
    jspush) echo "-n $JSPUSH_N -z $SIZE" ;;
    jspushack) echo "-n $JSPUSHACK_N -z $SIZE" ;;
    kvput | kvget) echo "-n $KV_N -z $SIZE" ;;
    jspending) echo "-n $JSPENDING_N -z $SIZE" ;;
    jsidle) echo "--consumers $CONSUMERS" ;;
    *) die "unknown mode $1" ;;
    esac
}
is_js_mode() { case "$1" in js* | kv*) return 0 ;; *) return 1 ;; esac; }
mode_metrics() {
    case "$1" in
    pub) echo "msgs_per_s:msgs/s:higher srv_cpu_ns_per_op:srv_cpu_ns/msg:lower" ;;
    pubsub) echo "msgs_per_s:msgs/s:higher srv_cpu_ns_per_op:srv_cpu_ns/msg:lower" ;;
    fanout) echo "deliveries_per_s:deliveries/s:higher srv_cpu_ns_per_op:srv_cpu_ns/dlvry:lower" ;;
    queue) echo "msgs_per_s:msgs/s:higher srv_cpu_ns_per_op:srv_cpu_ns/msg:lower" ;;
    reqrep) echo "p50_us:p50_us:lower p90_us:p90_us:lower p99_us:p99_us:lower srv_cpu_ns_per_op:srv_cpu_ns/req:lower" ;;
    idleconns) echo "bytes_per_conn:B/conn:lower" ;;
    subs) echo "bytes_per_sub:B/sub:lower" ;;
    jspub | jspubid | jsfsync) echo "msgs_per_s:msgs/s:higher srv_cpu_ns_per_op:srv_cpu_ns/msg:lower" ;;
    jssync) echo "p50_us:ack_p50_us:lower p99_us:ack_p99_us:lower srv_cpu_ns_per_op:srv_cpu_ns/msg:lower" ;;
    jsmem) echo "bytes_per_msg:B/msg:lower" ;;
    jscreate) echo "p50_us:p50_us:lower p99_us:p99_us:lower" ;;
    jspull | jspush | jspushack) echo "msgs_per_s:msgs/s:higher srv_cpu_ns_per_op:srv_cpu_ns/msg:lower" ;;
    kvput) echo "p50_us:put_p50_us:lower p99_us:put_p99_us:lower srv_cpu_ns_per_op:srv_cpu_ns/put:lower" ;;
    kvget) echo "p50_us:get_p50_us:lower p99_us:get_p99_us:lower srv_cpu_ns_per_op:srv_cpu_ns/get:lower" ;;
    jspending) echo "bytes_per_pending:B/pending:lower" ;;
    jsidle) echo "bytes_per_consumer:B/consumer:lower creates_per_s:creates/s:higher" ;;
    esac
}

# The targets of the consumer and KV modes (from the issues that asked for them): "ratio OP X"
# compares natsd/nats-server with X, "abs OP X" natsd's own value.
mode_target() {
    case "$1:$2" in
    jspull:msgs_per_s) echo "ratio >= 2.0" ;;
    kvput:p50_us | kvget:p50_us) echo "ratio <= 0.7" ;;
    jspending:bytes_per_pending) echo "abs <= 64" ;;
    jsidle:bytes_per_consumer) echo "abs < 1024" ;;
    esac
}

# A free port from one range for both servers, below the kernel's ephemeral range so that no
# client socket (idleconns leaves thousands in TIME_WAIT) can hold it; something answering on it
# means it is taken.
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

# start_server BINARY LOG [FLAGS...]: starts it on a fresh port, with FLAGS after the common
# ones, and waits for its PONG; a server that exits at once (the port was taken after all) is
# retried on another port. Sets SERVER_PID and PORT.
start_server() {
    local bin="$1" log="$2" attempt waited
    shift 2
    for attempt in 1 2 3; do
        PORT=$(pick_port)
        # shellcheck disable=SC2086 # SERVER_ARGS is a list of flags.
        "$bin" -a 127.0.0.1 -p "$PORT" $SERVER_ARGS "$@" >"$log" 2>&1 &
        SERVER_PID=$!
        waited=0
        while [ $waited -lt 40 ] && kill -0 "$SERVER_PID" 2>/dev/null; do
            if "$NDBENCH" wait -p "$PORT" --timeout 0.25 >/dev/null 2>&1; then return 0; fi
            waited=$((waited + 1))
        done
        stop_server
        echo "compare.sh: $bin did not start on port $PORT (attempt $attempt, see $log)" >&2
    done
    return 1
}

SERVER_PID=""
PORT=""
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null
    local tries=100
    while [ $tries -gt 0 ] && kill -0 "$SERVER_PID" 2>/dev/null; do
        sleep 0.1
        tries=$((tries - 1))
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "compare.sh: server $SERVER_PID ignored SIGTERM for 10 s; killing it" >&2
        kill -KILL "$SERVER_PID" 2>/dev/null
    fi
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
}
trap 'stop_server; exit 130' INT TERM
trap 'stop_server' EXIT

# js_flags NAME MODE ROUND: the JetStream flags of one run (none for the core modes), with a
# fresh store directory, in JS_FLAGS; the directory (to remove after the run) in RUN_STORE.
JS_FLAGS=()
RUN_STORE=""
js_flags() {
    local name="$1" mode="$2" round="$3" conf
    JS_FLAGS=()
    RUN_STORE=""
    is_js_mode "$mode" || return 0
    RUN_STORE="$STORE_ROOT/$name.$mode.$round"
    rm -rf "$RUN_STORE"
    mkdir -p "$RUN_STORE" || die "cannot create $RUN_STORE"
    if [ "$mode" = jsfsync ] && { [ "$name" = natsd ] || [ "$NS_SYNC_ALWAYS" = 1 ]; }; then
        conf="$LOG_DIR/$name.$mode.$round.conf"
        printf 'jetstream {\n    store_dir: "%s"\n    sync_interval: always\n}\n' "$RUN_STORE" >"$conf"
        JS_FLAGS=(-c "$conf")
    else
        JS_FLAGS=(-js -sd "$RUN_STORE")
    fi
}

# run_one NAME BINARY MODE ROUND: one fresh server, one ndbench run; appends the RESULT line (or
# FAIL) to $LOG_DIR/NAME.MODE.results.
run_one() {
    local name="$1" bin="$2" mode="$3" round="$4" log out
    log="$LOG_DIR/$name.$mode.$round.server.log"
    out="$LOG_DIR/$name.$mode.$round.ndbench.log"
    js_flags "$name" "$mode" "$round"
    if ! start_server "$bin" "$log" "${JS_FLAGS[@]}"; then
        [ -n "$RUN_STORE" ] && rm -rf "$RUN_STORE"
        echo "FAIL start" >>"$LOG_DIR/$name.$mode.results"
        printf '  %-11s %-9s round %d: server did not start (see %s)\n' "$name" "$mode" "$round" "$log" >&2
        return
    fi
    local limit=300
    # jsidle creates its consumers one request each: allow for a slow server with many.
    [ "$mode" = jsidle ] && limit=$((300 + CONSUMERS / 50))
    # shellcheck disable=SC2046 # mode_args is a list of flags.
    if timeout "$limit" "$NDBENCH" "$mode" -p "$PORT" --pid "$SERVER_PID" $(mode_args "$mode") >"$out" 2>&1 &&
        grep -q '^RESULT ' "$out"; then
        grep '^RESULT ' "$out" | head -1 >>"$LOG_DIR/$name.$mode.results"
        [ -n "$VERBOSE" ] && grep -v '^RESULT ' "$out" | sed "s/^/  $name: /" >&2
    else
        echo "FAIL run" >>"$LOG_DIR/$name.$mode.results"
        printf '  %-11s %-9s round %d failed: %s\n' "$name" "$mode" "$round" "$(tail -1 "$out")" >&2
    fi
    stop_server
    [ -n "$RUN_STORE" ] && rm -rf "$RUN_STORE"
    return 0
}

# run_fsync_base ROUND: one write + fsync per message on the store's file system, no server.
run_fsync_base() {
    local out="$LOG_DIR/fsync-base.$1.ndbench.log"
    if timeout 300 "$NDBENCH" fsync --dir "$STORE_ROOT" -n "$FSYNC_N" -z "$SIZE" >"$out" 2>&1 &&
        grep -q '^RESULT ' "$out"; then
        grep '^RESULT ' "$out" | head -1 >>"$LOG_DIR/fsync-base.jsfsync.results"
    else
        echo "FAIL run" >>"$LOG_DIR/fsync-base.jsfsync.results"
        printf '  %-11s %-9s round %d failed: %s\n' fsync-base jsfsync "$1" "$(tail -1 "$out")" >&2
    fi
}

# stat NAME MODE KEY GOAL: "value count" over the successful runs (the median, or with --stat
# best the highest value when GOAL is higher and the lowest otherwise), or "- 0".
stat() {
    awk -v key="$3" -v goal="$4" -v how="$STAT" '
        /^RESULT / { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == key) v[n++] = kv[2] + 0 } }
        END {
            if (n == 0) { print "- 0"; exit }
            for (i = 1; i < n; i++) { x = v[i]; for (j = i - 1; j >= 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
            if (how == "best") m = (goal == "higher") ? v[n - 1] : v[0]
            else m = (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
            print m, n
        }' "$LOG_DIR/$1.$2.results" 2>/dev/null || echo "- 0"
}

fmt_num() {
    awk -v v="$1" 'BEGIN {
        if (v == "-") { print "n/a"; exit }
        if (v >= 1e6) printf "%.2fM\n", v / 1e6
        else if (v >= 1e4) printf "%.1fk\n", v / 1e3
        else if (v == int(v)) printf "%d\n", v
        else printf "%.1f\n", v }'
}

IFS=, read -r -a MODE_LIST <<<"$MODES"
for mode in "${MODE_LIST[@]}"; do mode_args "$mode" >/dev/null; done

# The JetStream store: on a disk, never tmpfs or ramfs (an fsync there reaches no disk).
STORE_ROOT=""
NS_SYNC_ALWAYS=0
HAVE_JS=0
for mode in "${MODE_LIST[@]}"; do is_js_mode "$mode" && HAVE_JS=1; done
on_ram() { case "$(command stat -f -c %T "$1" 2>/dev/null)" in tmpfs | ramfs | "") return 0 ;; *) return 1 ;; esac; }
if [ "$HAVE_JS" = 1 ]; then
    if [ -n "$STORE_DIR" ]; then
        mkdir -p "$STORE_DIR" || die "cannot create --store-dir $STORE_DIR"
        on_ram "$STORE_DIR" && die "--store-dir $STORE_DIR is on $(command stat -f -c %T "$STORE_DIR"), not a disk"
        base="$STORE_DIR"
    else
        base=""
        for cand in "${TMPDIR:-/tmp}" "$BUILD_DIR" "$HOME"; do
            if [ -d "$cand" ] && [ -w "$cand" ] && ! on_ram "$cand"; then base="$cand"; break; fi
        done
        [ -n "$base" ] || die "no directory on a disk among ${TMPDIR:-/tmp}, $BUILD_DIR, $HOME (use --store-dir)"
    fi
    STORE_ROOT="$(mktemp -d "$base/natsd-compare-js.XXXXXX")" || die "cannot create a store directory under $base"
    trap 'stop_server; rm -rf "$STORE_ROOT"' EXIT
    # Does the reference know `sync_interval: always` (nats-server 2.10 and later)?
    printf 'jetstream {\n    store_dir: "%s/probe"\n    sync_interval: always\n}\n' "$STORE_ROOT" >"$LOG_DIR/probe.conf"
    if "$NATS_SERVER" -c "$LOG_DIR/probe.conf" -t >/dev/null 2>&1; then NS_SYNC_ALWAYS=1; fi
    rm -rf "$STORE_ROOT/probe"
fi

started=$(date +%s)
echo "# natsd:       $NATSD"
echo "# nats-server: $NATS_SERVER ($NS_VERSION)"
echo "# $ROUNDS rounds per mode, servers alternating, fresh process per run, -a 127.0.0.1 -p <random port> $SERVER_ARGS"
HAVE_CORE=0
for mode in "${MODE_LIST[@]}"; do is_js_mode "$mode" || HAVE_CORE=1; done
if [ "$HAVE_CORE" = 1 ]; then
    echo "# payload $SIZE B; pub $PUB_N, pubsub $PUBSUB_N, fanout $FANOUT_N x 5 subs, queue $QUEUE_N x 4 members,"
    echo "# reqrep $REQ_N requests, $CONNS idle connections, $NSUBS subscriptions; $(nproc) CPUs; raw results in $LOG_DIR"
else
    echo "# payload $SIZE B; $(nproc) CPUs; raw results in $LOG_DIR"
fi
if [ "$HAVE_JS" = 1 ]; then
    echo "# JetStream: -js -sd <fresh dir per run> under $STORE_ROOT ($(command stat -f -c %T "$STORE_ROOT")); file streams unless said"
    case ",$MODES," in
    *,jspub,* | *,jspubid,* | *,jssync,* | *,jsmem,* | *,jscreate,* | *,jsfsync,*)
        echo "# jspub $JSPUB_N, jspubid $JSPUBID_N, jsfsync $JSFSYNC_N msgs with 256 PubAcks in flight; jssync $JSSYNC_N one"
        echo "# at a time; jsmem $JSMEM_N msgs in a memory stream; jscreate $JSCREATE_N file streams"
        ;;
    esac
    case ",$MODES," in
    *,jspull,* | *,jspush,* | *,jspushack,* | *,kvput,* | *,kvget,* | *,jspending,* | *,jsidle,*)
        echo "# consumers: jspull $JSPULL_N preloaded msgs fetched 100 at a time, each acked; jspush $JSPUSH_N (ack none),"
        echo "# jspushack $JSPUSHACK_N (each acked) to one subscriber; kvput/kvget $KV_N ops over 1000 keys one at a time;"
        echo "# jspending $JSPENDING_N unacked msgs of a memory stream; jsidle $CONSUMERS idle durable pull consumers"
        ;;
    esac
    case ",$MODES," in
    *,jsfsync,*)
        if [ "$NS_SYNC_ALWAYS" = 1 ]; then
            echo "# jsfsync: both servers with -c <conf>: jetstream { store_dir: <fresh dir>, sync_interval: always }"
        else
            echo "# jsfsync: natsd with -c <conf>: jetstream { store_dir: <fresh dir>, sync_interval: always };"
            echo "#   nats-server ($NS_VERSION) rejects sync_interval, so it runs with -js -sd: NO fsync per message"
        fi
        ;;
    esac
fi
for mode in "${MODE_LIST[@]}"; do
    rm -f "$LOG_DIR/natsd.$mode.results" "$LOG_DIR/nats-server.$mode.results"
    [ "$mode" = jsfsync ] && rm -f "$LOG_DIR/fsync-base.jsfsync.results"
    for round in $(seq 1 "$ROUNDS"); do
        [ "$mode" = jsfsync ] && run_fsync_base "$round"
        if [ $((round % 2)) = 1 ]; then
            run_one natsd "$NATSD" "$mode" "$round"
            run_one nats-server "$NATS_SERVER" "$mode" "$round"
        else
            run_one nats-server "$NATS_SERVER" "$mode" "$round"
            run_one natsd "$NATSD" "$mode" "$round"
        fi
    done
done

echo
if [ "$STAT" = best ]; then echo "Best of $ROUNDS runs each."; else echo "Medians of $ROUNDS runs each."; fi
echo "Throughput (msgs/s, deliveries/s): higher is better. Latency (us), memory (B) and server CPU (ns per op): LOWER is better."
printf '%-10s %-16s %12s %12s %12s  %s\n' mode metric natsd nats-server natsd/nats-srv goal
for mode in "${MODE_LIST[@]}"; do
    for triple in $(mode_metrics "$mode"); do
        IFS=: read -r key label goal <<<"$triple"
        read -r a an <<<"$(stat natsd "$mode" "$key" "$goal")"
        read -r b bn <<<"$(stat nats-server "$mode" "$key" "$goal")"
        ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "n/a"; else printf "%.2f\n", a / b }')
        note="$goal is better"
        target="$(mode_target "$mode" "$key")"
        if [ -n "$target" ]; then
            read -r kind op want <<<"$target"
            if [ "$kind" = ratio ]; then v="$ratio"; what="target natsd/nats-srv $op $want"
            else v="$a"; what="target natsd $op $want"; fi
            met=$(awk -v v="$v" -v op="$op" -v w="$want" 'BEGIN {
                if (v == "-" || v == "n/a") { print "?"; exit }
                v += 0; ok = (op == ">=") ? v >= w : (op == "<=") ? v <= w : (op == "<") ? v < w : v > w
                print ok ? "met" : "MISSED" }')
            note="$note; $what: $met"
        fi
        if [ "$an" != "$ROUNDS" ]; then note="$note; natsd ok $an/$ROUNDS"; fi
        if [ "$bn" != "$ROUNDS" ]; then note="$note; nats-server ok $bn/$ROUNDS"; fi
        printf '%-10s %-16s %12s %12s %12s  %s\n' "$mode" "$label" "$(fmt_num "$a")" "$(fmt_num "$b")" "$ratio" "$note"
    done
    if [ "$mode" = jsfsync ]; then
        # The one-fsync-per-message baseline, against natsd's rate with sync_interval: always.
        read -r f fn <<<"$(stat fsync-base jsfsync msgs_per_s higher)"
        read -r a an <<<"$(stat natsd jsfsync msgs_per_s higher)"
        ratio=$(awk -v a="$a" -v b="$f" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "n/a"; else printf "%.1f\n", a / b }')
        printf '%-10s %-16s %12s %12s %12s  %s\n' jsfsync fsync/msg_base "$(fmt_num "$f")" "" "$ratio" \
            "natsd msgs/s / (one write+fsync per msg, ok $fn/$ROUNDS); target >= 10"
        if [ "$NS_SYNC_ALWAYS" != 1 ]; then
            echo "           (nats-server column: $NS_VERSION without fsync per message, it has no sync_interval)"
        fi
    fi
done
echo "# finished in $(($(date +%s) - started)) s"
