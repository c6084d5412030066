#!/usr/bin/env bash
# Builds natsd's OCI image from scratch, without any registry, with Debian's buildah:
#   /usr/bin/natsd and /usr/bin/nats-server -> natsd (the official chart's preStop runs
#   `nats-server -sl=ldm=/var/run/nats/nats.pid`), the exact shared libraries the binary loads
#   (from ldd, the dynamic loader included), the NSS modules hostname resolution needs
#   (files, dns, and their own libraries) with an nsswitch.conf, passwd/group, a default
#   /etc/nats-config/nats.conf and /var/run/nats for the pid file (the chart mounts both).
#
#   scripts/image.sh [--build-dir DIR] [--out FILE] [--tag NAME] [--rootfs DIR]
#     --build-dir DIR  the build tree holding natsd (default: build)
#     --out FILE       the OCI archive to write (default: DIR/natsd-image.tar)
#     --tag NAME       also commit into local container storage as NAME
#                      (e.g. localhost/natsd:0.1.0, the image deploy/k8s/values.yaml names)
#     --rootfs DIR     only stage the image's file tree into DIR (no buildah needed)
# Prints the archive's path on its last line. Run as root, or rootless where buildah allows it
# (user namespaces); the vfs storage driver is used unless STORAGE_DRIVER is set.
set -euo pipefail
cd "$(dirname "$0")/.."

bdir=build
out=""
tag=""
rootfs_only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) bdir="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        --rootfs) rootfs_only="$2"; shift 2 ;;
        *) echo "usage: $0 [--build-dir DIR] [--out FILE] [--tag NAME] [--rootfs DIR]" >&2
           exit 2 ;;
    esac
done
bin="$bdir/natsd"
[ -x "$bin" ] || { echo "image: no $bin (build it: cmake --build $bdir --target natsd)" >&2; exit 1; }
bin=$(readlink -f "$bin")
version=$("$bin" --version | sed -n 's/.*v\([0-9.]*\).*/\1/p' | head -1)
ndver=$(sed -n 's/^project(natsd VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

if [ -z "$rootfs_only" ]; then
    command -v buildah >/dev/null 2>&1 || {
        echo "image: buildah is missing (Debian: apt-get install buildah)" >&2
        exit 1
    }
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/rootfs"
[ -n "$rootfs_only" ] && root="$rootfs_only"
mkdir -p "$root"

# A library goes where the host has it, under its real directory (merged /usr: /lib is a link
# to usr/lib, recreated below), with the name the loader asks for and the content of the file
# that name resolves to.
copy_lib() {
    local p="$1" dir
    dir=$(readlink -f "$(dirname "$p")")
    mkdir -p "$root$dir"
    cp -L "$p" "$root$dir/$(basename "$p")"
}
# The libraries of an ELF file, by ldd (the vdso has no file).
libs_of() {
    ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }'
}

mkdir -p "$root/usr/bin"
cp "$bin" "$root/usr/bin/natsd"
ln -sf natsd "$root/usr/bin/nats-server"
declare -A seen=()
queue=("$bin")
# NSS: glibc loads these with dlopen when resolving a host name (cluster routes name their
# peers by DNS), so ldd of natsd does not list them.
for m in libnss_files.so.2 libnss_dns.so.2; do
    p=$(ldconfig -p | awk -v m="$m" '$1 == m && $NF ~ /^\// { print $NF; exit }')
    [ -n "$p" ] || { echo "image: $m not found" >&2; exit 1; }
    queue+=("$p")
    copy_lib "$p"
done
while [ ${#queue[@]} -gt 0 ]; do
    f="${queue[0]}"
    queue=("${queue[@]:1}")
    for l in $(libs_of "$f"); do
        [ -n "${seen[$l]:-}" ] && continue
        seen[$l]=1
        copy_lib "$l"
        queue+=("$l")
    done
done
# Merged-/usr links as on the host (/lib -> usr/lib, /lib64 -> usr/lib64, ...).
for d in lib lib32 lib64 libx32 bin sbin; do
    if [ -L "/$d" ] && [ -e "$root/$(readlink "/$d")" ]; then
        ln -sfn "$(readlink "/$d")" "$root/$d"
    fi
done

mkdir -p "$root/etc/nats-config" "$root/var/run/nats" "$root/tmp"
chmod 1777 "$root/tmp"
cat > "$root/etc/nsswitch.conf" <<'EOF'
passwd: files
group: files
hosts: files dns
EOF
cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat > "$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
cat > "$root/etc/nats-config/nats.conf" <<'EOF'
# natsd image default (Kubernetes mounts its ConfigMap over /etc/nats-config).
port: 4222
http_port: 8222
pid_file: "/var/run/nats/nats.pid"
EOF

if [ -n "$rootfs_only" ]; then
    echo "$root"
    exit 0
fi

[ -n "$out" ] || out="$bdir/natsd-image.tar"
out=$(readlink -f "$(dirname "$out")")/$(basename "$out")
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
c=$(buildah from scratch)
trap 'buildah rm "$c" >/dev/null 2>&1 || true; rm -rf "$stage"' EXIT
buildah copy "$c" "$root/" / >/dev/null
buildah config \
    --entrypoint '["/usr/bin/natsd"]' \
    --cmd '--config /etc/nats-config/nats.conf' \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --port 4222/tcp --port 6222/tcp --port 8222/tcp \
    --stop-signal SIGTERM \
    --label org.opencontainers.image.title=natsd \
    --label org.opencontainers.image.version="$ndver" \
    --label org.opencontainers.image.description="natsd, a NATS server in C (nats-server $version compatible)" \
    "$c"
rm -f "$out"
buildah commit --quiet --format oci "$c" "oci-archive:$out" >/dev/null
if [ -n "$tag" ]; then
    buildah commit --quiet --format oci "$c" "$tag" >/dev/null
fi
echo "$out"
