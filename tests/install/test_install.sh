#!/usr/bin/env bash
# Installs this build tree into a temporary prefix (cmake --install) and checks what an
# embedder and an operator get from it: the layout, libnatsd.so's SONAME and exported symbols
# (the natsd_ API only), the man page and the bash completion; then builds examples/embed.c
# against the installed prefix and runs it: with pkg-config alone (shared), with pkg-config
# --static (libnatsd.a), and with find_package(natsd) in a CMake project (both libraries).
#   tests/install/test_install.sh BUILD_DIR SOURCE_DIR [SANITIZER]
# SANITIZER (address) compiles the example with the build's sanitizer flags, so the ASan run
# checks the embedding program too.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
sanitize=${3:-}

cflags="-Wall -Wextra -Werror"
case "$sanitize" in
    "") ;;
    address) cflags+=" -fsanitize=address,undefined -fno-omit-frame-pointer" ;;
    *) echo "skip: the install test runs in plain and ASan builds only (not $sanitize)"; exit 0 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }

export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name natsd.pc | head -n 1)")
[ -f "$PKG_CONFIG_PATH/natsd.pc" ] || fail "no natsd.pc installed"
libdir=$(pkg-config --variable=libdir natsd)
libdir=$(cd "$libdir" && pwd)
echo "installed into $prefix (libdir $libdir)"

for f in bin/natsd include/natsd/natsd.h share/man/man8/natsd.8 \
         share/bash-completion/completions/natsd; do
    [ -f "$prefix/$f" ] || fail "missing $f"
done
[ -x "$prefix/bin/natsd" ] || fail "bin/natsd is not executable"
# Public headers only: include/natsd holds the embedding API and nothing from src/.
extra=$(cd "$prefix/include" && find . -type f ! -path './natsd/natsd.h')
[ -z "$extra" ] || fail "headers beyond the public API: $extra"
[ -f "$libdir/libnatsd.a" ] || fail "missing libnatsd.a"
[ -L "$libdir/libnatsd.so" ] || fail "libnatsd.so is not the development symlink"
soname=$(readelf -d "$libdir/libnatsd.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libnatsd.so.0" ] || fail "SONAME is '$soname', not libnatsd.so.0"
[ -f "$libdir/$soname" ] || fail "no $soname"
# Only natsd_* is exported (the toolchain's own markers aside).
leaked=$(nm -D --defined-only "$libdir/libnatsd.so" | awk '{print $3}' |
         grep -vE '^natsd_|^_(init|fini|edata|end|_bss_start)$' || true)
[ -z "$leaked" ] || fail "libnatsd.so exports more than natsd_*: $(echo "$leaked" | head -n 5)"
leaked=$(nm -g --defined-only "$libdir/libnatsd.a" | awk 'NF == 3 {print $3}' | grep -v '^natsd_' ||
         true)
[ -z "$leaked" ] || fail "libnatsd.a has global symbols beyond natsd_*: $(echo "$leaked" | head -n 5)"
nexp=$(nm -D --defined-only "$libdir/libnatsd.so" | grep -c ' natsd_')
echo "libnatsd.so: SONAME $soname, $nexp natsd_ symbols exported, nothing else; libnatsd.a too"

# The man page renders without warnings; the completion loads.
groff -man -Tutf8 -ww -z "$prefix/share/man/man8/natsd.8" 2>"$tmp/groff.log"
[ ! -s "$tmp/groff.log" ] || { cat "$tmp/groff.log"; fail "natsd.8 has troff warnings"; }
bash -c "source '$prefix/share/bash-completion/completions/natsd' && complete -p natsd" >/dev/null ||
    fail "bash completion does not load"
# Every flag of `natsd --help` (the flag table of src/cfg/opts.c) is in the man page and the
# completion, so neither falls behind the table.
help=$("$prefix/bin/natsd" --help)
flags=$(grep -E '^ +-' <<<"$help" | sed -E 's/^ +//; s/   .*//' |
        grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z_]*' | tr -d ' ,' | sort -u)
man=$(cat "$prefix/share/man/man8/natsd.8")
comp=$(cat "$prefix/share/bash-completion/completions/natsd")
for f in $flags --passwd; do
    grep -qF -- "${f//-/\\-}" <<<"$man" || fail "natsd.8 does not document $f"
    grep -qE -- "(^|[ \"|])$f([ \"|)]|$)" <<<"$comp" || fail "the completion lacks $f"
done
echo "man page and completion: all $(wc -w <<<"$flags") flags of --help"
version=$("$prefix/bin/natsd" --version)
grep -q '^natsd: v' <<<"$version" || fail "installed natsd --version: $version"

cd "$tmp"
run() { # name, then the command; its output is shown on failure
    local name=$1
    shift
    if ! "$@" >"$tmp/$name.log" 2>&1; then
        cat "$tmp/$name.log"
        fail "$name"
    fi
    tail -n 1 "$tmp/$name.log"
}

# 1. Shared, with pkg-config only (the README's line). No rpath: the loader is told.
# shellcheck disable=SC2046,SC2086
run build-shared cc $cflags "$src/examples/embed.c" -o embed_shared \
    $(pkg-config --cflags --libs natsd libnats)
# (ldd's output is read whole: grep -q stopping early would fail the pipe under pipefail.)
deps=$(LD_LIBRARY_PATH=$libdir ldd ./embed_shared)
grep -q "libnatsd.so.0 => $libdir/" <<<"$deps" ||
    fail "embed_shared does not load the installed libnatsd.so.0: $deps"
run embed-shared env LD_LIBRARY_PATH="$libdir" ./embed_shared

# 2. Static: libnatsd.a plus the Libs.private of natsd.pc.
static_libs=$(pkg-config --static --libs natsd | sed 's/-lnatsd\b/-l:libnatsd.a/')
# shellcheck disable=SC2046,SC2086
run build-static cc $cflags "$src/examples/embed.c" -o embed_static \
    $(pkg-config --cflags natsd libnats) $static_libs $(pkg-config --libs libnats)
deps=$(ldd ./embed_static)
if grep -q libnatsd <<<"$deps"; then fail "embed_static links libnatsd.so"; fi
run embed-static ./embed_static

# 3. CMake: find_package(natsd) with natsd::natsd and natsd::natsd_static.
mkdir -p cm
cat >cm/CMakeLists.txt <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(embed_cmake C)
find_package(natsd 0.1 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(NATS REQUIRED IMPORTED_TARGET libnats)
add_executable(embed_cmake "$src/examples/embed.c")
target_link_libraries(embed_cmake PRIVATE natsd::natsd PkgConfig::NATS)
add_executable(embed_cmake_static "$src/examples/embed.c")
target_link_libraries(embed_cmake_static PRIVATE natsd::natsd_static PkgConfig::NATS)
CMAKE
run cmake-configure cmake -S cm -B cm/build -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_BUILD_RPATH="$libdir"
run cmake-build cmake --build cm/build
run embed-cmake ./cm/build/embed_cmake
run embed-cmake-static ./cm/build/embed_cmake_static
echo "install test passed"
