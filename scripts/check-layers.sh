#!/usr/bin/env bash
# The layering check of docs/architecture.md ("Rooms"): every #include "<room>/<file>.h" in
# src/ must point to the file's own room or to a room listed below as one it may use, and a
# private header (*_int.h) may only be included inside its own room. A lower room never includes
# a higher one, so there are no cycles. Exit status 1 and one line per offending include.
set -euo pipefail
cd "$(dirname "$0")/.."

# room: the rooms it may include (besides itself). natsd/ (the public API) is open to all;
# "." is src/ itself (main.c).
rules='
actors:
util: actors
cfg: actors util
subj: actors util cfg
auth: actors util cfg subj
js/store: actors util subj
net: actors util cfg subj auth
mon: actors util cfg subj auth net
js: actors util cfg subj auth net js/store
mqtt: actors util cfg subj auth net
raft: actors util cfg net
server: actors util cfg subj auth net mon js js/store raft mqtt
.: actors util cfg subj auth net mon js js/store raft server mqtt
'

nfiles=$(find src -name '*.[ch]' | wc -l)
find src -name '*.[ch]' -print0 | sort -z |
    xargs -0 grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' /dev/null |
    awk -v rules="$rules" -v nfiles="$nfiles" '
    BEGIN {
        n = split(rules, lines, "\n")
        for (i = 1; i <= n; i++) {
            if (lines[i] == "") continue
            split(lines[i], kv, ":")
            known[kv[1]] = 1
            m = split(kv[2], rs, " ")
            for (j = 1; j <= m; j++) may[kv[1] " " rs[j]] = 1
        }
        bad = 0
    }
    {
        # src/net/conn.c:12:#include "net/conn_int.h"
        file = $0; sub(/:.*/, "", file)
        rest = substr($0, length(file) + 2)
        line = rest; sub(/:.*/, "", line)
        inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
        from = file; sub(/^src\//, "", from)
        if (from ~ /\//) sub(/\/[^\/]*$/, "", from); else from = "."
        if (!(from in known)) { print file ": unknown room \"" from "\" (add it to scripts/check-layers.sh)"; bad = 1; next }
        if (inc ~ /^natsd\//) next
        if (inc !~ /\//) { print file ":" line ": include \"" inc "\" without its room (write \"" from "/" inc "\")"; bad = 1; next }
        to = inc; sub(/\/[^\/]*$/, "", to)
        if (to == from) next
        if (inc ~ /_int\.h$/) { print file ":" line ": \"" inc "\" is private to src/" to; bad = 1; next }
        if (!((from " " to) in may)) { print file ":" line ": room \"" from "\" may not include \"" inc "\" (room \"" to "\")"; bad = 1 }
    }
    END {
        if (bad) { print "layering check failed" > "/dev/stderr"; exit 1 }
        print "layering check: " nfiles " files, every include goes down or stays in its room"
    }'
