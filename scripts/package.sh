#!/usr/bin/env bash
# Builds the Debian package natsd_<version>_<arch>.deb: the binary, libnatsd.so and libnatsd.a,
# the headers, natsd.pc and the CMake package, the man page, the bash completion, the systemd
# unit (deploy/systemd/natsd.service), the default config /etc/natsd/natsd.conf (a conffile) and
# the maintainer scripts (deploy/debian: the natsd user, the service enabled and started).
#   scripts/package.sh                      release build in build-pkg (prefix /usr), then the .deb
#   scripts/package.sh --build-dir DIR      package an existing (non-sanitizer) build tree instead
#   scripts/package.sh --out DIR            where the .deb goes (default: the build directory)
# Prints the path of the .deb on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

bdir=""
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) bdir="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        *) echo "usage: $0 [--build-dir DIR] [--out DIR]" >&2; exit 2 ;;
    esac
done

for tool in dpkg-deb dpkg-shlibdeps fakeroot; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "package: $tool is missing (Debian: apt-get install dpkg-dev fakeroot)" >&2
        exit 1
    }
done

if [ -z "$bdir" ]; then
    scripts/setup.sh
    bdir=build-pkg
    cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
        -DND_TESTS=OFF >/dev/null
    cmake --build "$bdir" -j"$(nproc)" --target natsd natsd_shared nd_core
fi
bdir=$(cd "$bdir" && pwd)
if grep -qE '^ND_SANITIZE:STRING=.+' "$bdir/CMakeCache.txt"; then
    echo "package: $bdir is a sanitizer build; package a plain one" >&2
    exit 1
fi
out=$(mkdir -p "${out:-$bdir}" && cd "${out:-$bdir}" && pwd)

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$bdir/CMakeCache.txt")
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/root

# The files, as `cmake --install` lays them out under /usr, stripped.
DESTDIR=$stage cmake --install "$bdir" --prefix /usr --strip >/dev/null
install -D -m 0644 deploy/systemd/natsd.service "$stage/lib/systemd/system/natsd.service"
install -D -m 0640 deploy/natsd.conf "$stage/etc/natsd/natsd.conf"
find "$stage" -name 'libnatsd.a' -exec strip --strip-debug {} +
gzip -9n "$stage/usr/share/man/man8/natsd.8"
install -D -m 0644 README.md "$stage/usr/share/doc/natsd/README.md"

# Depends: the shared libraries the binary and the library load (dpkg-shlibdeps reads a
# debian/control, so it runs in a scratch source tree), plus adduser for postinst.
mkdir -p "$work/src/debian"
printf 'Source: natsd\n\nPackage: natsd\nArchitecture: any\n' >"$work/src/debian/control"
elfs=$(find "$stage" -type f \( -name natsd -o -name 'libnatsd.so.*' \) -perm -u+x)
# shellcheck disable=SC2086
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O $elfs 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
depends="adduser${shlibs:+, $shlibs}"

mkdir -p "$stage/DEBIAN"
install -m 0755 deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm "$stage/DEBIAN/"
echo /etc/natsd/natsd.conf >"$stage/DEBIAN/conffiles"
echo "activate-noawait ldconfig" >"$stage/DEBIAN/triggers" # libnatsd.so.0 in ld.so's cache
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: natsd
Version: $version
Architecture: $arch
Maintainer: natsd developers <natsd@localhost>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Description: NATS server written in C, compatible with nats-server
 natsd speaks the NATS client protocol and takes nats-server's flags and
 configuration files, so existing NATS clients connect to it unchanged.
 .
 This package has the natsd binary and its systemd service (natsd user,
 /etc/natsd/natsd.conf, stop through lame duck mode), and libnatsd for
 embedding a server in a C program (headers, pkg-config and CMake files).
CONTROL

deb="$out/natsd_${version}_${arch}.deb"
fakeroot dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
