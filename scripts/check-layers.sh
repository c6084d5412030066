#!/usr/bin/env bash
# The layering check of docs/architecture.md ("Rooms"): every #include "<room>/<file>.h" in
# src/ must point to the file's own room or to a room listed below as one it may use, and a
# private header (*_int.h) may only be included inside its own room. A lower room never includes
# a higher one, so there are no cycles. Exit status 1 and one line per offending include.
set -euo pipefail
cd "$(dirname "$0")/.."

# room: the rooms it may include (besides itself). natsd/ (the public API) is open to all.
declare -A may=(
    [actors]=""
    [util]="actors"
    [cfg]="actors util"
    [subj]="actors util cfg"
    [auth]="actors util cfg subj"
    [js/store]="actors util subj"
    [net]="actors util cfg subj auth"
    [mon]="actors util cfg subj auth net"
    [js]="actors util cfg subj auth net js/store"
    [raft]="actors util cfg net"
    [server]="actors util cfg subj auth net mon js js/store raft"
    [.]="actors util cfg subj auth net mon js js/store raft server"
)

room_of() { # src/js/store/x.c -> js/store, src/net/x.c -> net, src/main.c -> .
    local d
    d=$(dirname "${1#src/}")
    echo "$d"
}

bad=0
while IFS= read -r f; do
    from=$(room_of "$f")
    if [ -z "${may[$from]+x}" ]; then
        echo "$f: unknown room '$from' (add it to scripts/check-layers.sh)"
        bad=1
        continue
    fi
    while IFS=: read -r line inc; do
        [ -n "$inc" ] || continue
        case "$inc" in natsd/*) continue ;; esac
        to=$(dirname "$inc")
        if [ "$to" = "." ]; then
            echo "$f:$line: include \"$inc\" without its room (write \"$from/$inc\")"
            bad=1
            continue
        fi
        base=$(basename "$inc")
        if [ "$to" != "$from" ]; then
            case "$base" in *_int.h)
                echo "$f:$line: \"$inc\" is private to src/$to"
                bad=1
                continue ;;
            esac
            if [[ " ${may[$from]} " != *" $to "* ]]; then
                echo "$f:$line: room '$from' may not include \"$inc\" (room '$to')"
                bad=1
            fi
        fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$f" \
             | sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/')
done < <(find src -name '*.[ch]' | sort)
if [ "$bad" -ne 0 ]; then
    echo "layering check failed" >&2
    exit 1
fi
echo "layering check: $(find src -name '*.[ch]' | wc -l) files, every include goes down or stays in its room"
