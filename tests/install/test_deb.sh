#!/usr/bin/env bash
# Builds the .deb from this build tree (scripts/package.sh --build-dir), unpacks it into a fresh
# directory root with dpkg-deb -x and checks it: the control fields and files, the maintainer
# scripts, the installed binary checking and serving the packaged config (INFO on the client
# port, /healthz on the monitoring port, lame duck exit on SIGUSR2, as the unit stops it), the
# packaged library building and running examples/embed.c through its pkg-config file, and
# `systemd-analyze verify` on the unit when systemd is installed.
#   tests/install/test_deb.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

deb=$("$src/scripts/package.sh" --build-dir "$build" --out "$tmp" | tail -n 1)
[ -f "$deb" ] || fail "package.sh made no .deb"
echo "built $(basename "$deb")"

[ "$(dpkg-deb -f "$deb" Package)" = natsd ] || fail "Package field"
depends=$(dpkg-deb -f "$deb" Depends)
grep -q 'libssl3' <<<"$depends" || fail "Depends lacks the shared libraries: $depends"
grep -q 'adduser' <<<"$depends" || fail "Depends lacks adduser: $depends"
root=$tmp/root
dpkg-deb -x "$deb" "$root"
mkdir -p "$tmp/control"
dpkg-deb -e "$deb" "$tmp/control"
for f in postinst prerm postrm; do
    [ -x "$tmp/control/$f" ] || fail "no executable $f"
    sh -n "$tmp/control/$f" || fail "$f: syntax"
done
# postinst with stand-ins for the system commands (nothing on this machine changes): on a first
# install it makes the natsd group and system user and enables the unit; once they exist, it
# makes neither again.
stubs=$tmp/stubs
mkdir -p "$stubs"
for c in addgroup adduser chown chmod deb-systemd-helper deb-systemd-invoke systemctl; do
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$c" "$tmp" >"$stubs/$c"
    chmod +x "$stubs/$c"
done
printf '#!/bin/sh\n[ -f "%s/exists" ]\n' "$tmp" >"$stubs/getent"
chmod +x "$stubs/getent"
PATH=$stubs:$PATH "$tmp/control/postinst" configure || fail "postinst configure failed"
calls=$(cat "$tmp/calls")
grep -q '^addgroup --system --quiet natsd$' <<<"$calls" || fail "postinst: no natsd group: $calls"
grep -q '^adduser --system .*--ingroup natsd .*natsd$' <<<"$calls" ||
    fail "postinst: no natsd system user: $calls"
grep -q '^deb-systemd-helper .*natsd.service' <<<"$calls" || fail "postinst: unit not enabled"
rm -f "$tmp/calls"
touch "$tmp/exists"
PATH=$stubs:$PATH "$tmp/control/postinst" configure 0.0.9 || fail "postinst upgrade failed"
if grep -qE '^add(user|group)' "$tmp/calls" 2>/dev/null; then
    fail "postinst made the user again: $(cat "$tmp/calls")"
fi
for f in prerm postrm; do
    PATH=$stubs:$PATH "$tmp/control/$f" remove || fail "$f remove failed"
done
PATH=$stubs:$PATH "$tmp/control/postrm" purge || fail "postrm purge failed"
grep -qx /etc/natsd/natsd.conf "$tmp/control/conffiles" || fail "natsd.conf is not a conffile"

for f in usr/bin/natsd usr/include/natsd/natsd.h usr/share/man/man8/natsd.8.gz \
         usr/share/bash-completion/completions/natsd lib/systemd/system/natsd.service \
         etc/natsd/natsd.conf; do
    [ -f "$root/$f" ] || fail "missing /$f"
done
pc=$(find "$root" -name natsd.pc | head -n 1)
[ -n "$pc" ] || fail "no natsd.pc"
libdir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir natsd)
for f in libnatsd.so.0 libnatsd.a; do
    [ -f "$libdir/$f" ] || fail "$f missing in $libdir"
done
zcat "$root/usr/share/man/man8/natsd.8.gz" | groff -man -Tutf8 -ww -z || fail "man page"

unit=$root/lib/systemd/system/natsd.service
grep -q '^User=natsd$' "$unit" || fail "unit: User=natsd"
grep -q '^ExecReload=/bin/kill -HUP [$]MAINPID$' "$unit" || fail "unit: ExecReload"
grep -q '^KillSignal=SIGUSR2$' "$unit" || fail "unit: stop through lame duck (SIGUSR2)"
grep -q '^ExecStart=/usr/bin/natsd -c /etc/natsd/natsd.conf$' "$unit" || fail "unit: ExecStart"

# The installed binary with the installed config: -t, then serve on free ports (the flags
# override the config's ports), answer a client and /healthz, stop on SIGUSR2 with status 0.
natsd=$root/usr/bin/natsd
conf=$root/etc/natsd/natsd.conf
"$natsd" -c "$conf" -t >"$tmp/check.log" 2>&1 || { cat "$tmp/check.log"; fail "natsd -t"; }
mkdir -p "$tmp/ports"
"$natsd" -c "$conf" -a 127.0.0.1 -p -1 -m -1 --ports_file_dir "$tmp/ports" >"$tmp/natsd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    [ -n "$(ls "$tmp/ports")" ] && break
    sleep 0.05
done
ports=$(cat "$tmp/ports"/* 2>/dev/null) || { cat "$tmp/natsd.log"; fail "no ports file"; }
cport=$(echo "$ports" | sed -n 's|.*nats://127.0.0.1:\([0-9]*\).*|\1|p')
mport=$(echo "$ports" | sed -n 's|.*http://127.0.0.1:\([0-9]*\).*|\1|p')
exec 3<>"/dev/tcp/127.0.0.1/$cport"
read -r -t 5 info <&3 || fail "no INFO from the installed natsd"
exec 3>&-
case "$info" in "INFO {"*) ;; *) fail "unexpected first line: $info" ;; esac
exec 3<>"/dev/tcp/127.0.0.1/$mport"
printf 'GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
health=$(timeout 5 cat <&3)
exec 3>&-
[[ "${health%%$'\r'*}" == *" 200 "* ]] || fail "/healthz: $health"
kill -USR2 "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
[ "$rc" -eq 0 ] || { cat "$tmp/natsd.log"; fail "lame duck exit status $rc"; }
grep -q 'Entering lame duck mode' "$tmp/natsd.log" || fail "SIGUSR2 did not enter lame duck mode"
echo "installed natsd served on $cport (monitoring $mport) and left through lame duck mode"

# The packaged library, through its own pkg-config file.
# shellcheck disable=SC2046
cc -Wall -Werror "$src/examples/embed.c" -o "$tmp/embed" \
    $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs natsd libnats) ||
    fail "embed.c against the packaged library"
LD_LIBRARY_PATH=$libdir "$tmp/embed" >"$tmp/embed.log" 2>&1 || { cat "$tmp/embed.log"; fail "embed"; }
tail -n 1 "$tmp/embed.log"

if command -v systemd-analyze >/dev/null 2>&1; then
    # The unit as packaged, its /usr/bin/natsd pointed at the unpacked binary (verify checks that
    # every command exists) and man:natsd(8) looked up in the unpacked man pages.
    sed "s|/usr/bin/natsd|$root/usr/bin/natsd|g" "$unit" >"$tmp/natsd.service"
    if ! MANPATH=$root/usr/share/man systemd-analyze verify "$tmp/natsd.service" \
            >"$tmp/verify.log" 2>&1; then
        cat "$tmp/verify.log"
        fail "systemd-analyze verify natsd.service"
    fi
    if [ -s "$tmp/verify.log" ]; then
        cat "$tmp/verify.log"
        fail "systemd-analyze verify printed warnings"
    fi
    echo "systemd-analyze verify natsd.service: clean"
else
    echo "skip: systemd-analyze is not installed, the unit was not verified"
fi
echo "deb test passed"
