#!/usr/bin/python3
"""integ.image: scripts/image.sh builds the OCI archive, and the image's file tree runs natsd.

usage: test_image.py <build dir> <source dir>

Skips (exit 77) without buildah or without root (buildah's vfs storage and chroot need it
here). Checks: the archive's OCI layout and config (entrypoint, cmd the chart's args replace,
ports, PATH for the preStop's bare `nats-server`); the layer's files (natsd, the nats-server
link, every library ldd names and the NSS modules, nsswitch.conf, /var/run/nats); then, in a
chroot of the unpacked layer (what a container runtime gives, /etc/hosts mounted in as the
runtime does): `nats-server --version`, natsd started with a route to the host's natsd *by
host name* (NSS files), the route up on both sides, and the chart's preStop
`nats-server -sl=ldm=/var/run/nats/nats.pid` ending it.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request


CHROOT = None


def fail(msg):
    print("integ.image: FAIL: " + msg, flush=True)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get_json(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
        return json.loads(r.read())


def wait_routes(port, n, what):
    end = time.time() + 15
    got = None
    while time.time() < end:
        try:
            got = get_json(port, "/routez")["num_routes"]
            if got == n:
                return
        except OSError:
            pass
        time.sleep(0.1)
    fail("%s has %s routes, not %d" % (what, got, n))


def main():
    bdir, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if shutil.which("buildah") is None:
        print("SKIP: buildah is not installed (Debian: apt-get install buildah)")
        return 77
    global CHROOT
    CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
    if os.geteuid() != 0:
        print("SKIP: needs root here (buildah's vfs storage, and chroot to run the image)")
        return 77
    tmp = tempfile.mkdtemp(prefix="nd_image_")
    procs = []
    try:
        out = os.path.join(tmp, "natsd.tar")
        r = subprocess.run([os.path.join(src, "scripts/image.sh"), "--build-dir", bdir,
                            "--out", out], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            fail("image.sh: %s%s" % (r.stdout, r.stderr))
        if r.stdout.strip().splitlines()[-1] != out:
            fail("image.sh printed %r" % r.stdout)
        oci = os.path.join(tmp, "oci")
        with tarfile.open(out) as t:
            t.extractall(oci)
        blob = lambda d: os.path.join(oci, "blobs", *d.split(":"))
        if json.load(open(os.path.join(oci, "oci-layout")))["imageLayoutVersion"] != "1.0.0":
            fail("not an OCI layout")
        man = json.load(open(blob(json.load(open(os.path.join(oci, "index.json")))
                                  ["manifests"][0]["digest"])))
        cfg = json.load(open(blob(man["config"]["digest"])))["config"]
        if cfg["Entrypoint"] != ["/usr/bin/natsd"]:
            fail("entrypoint %r" % cfg["Entrypoint"])
        if cfg["Cmd"] != ["--config", "/etc/nats-config/nats.conf"]:
            fail("cmd %r" % cfg["Cmd"])
        if set(cfg["ExposedPorts"]) != {"4222/tcp", "6222/tcp", "8222/tcp"}:
            fail("ports %r" % cfg["ExposedPorts"])
        if not any(e.startswith("PATH=") and "/usr/bin" in e for e in cfg["Env"]):
            fail("no PATH with /usr/bin: the preStop runs a bare nats-server")
        rootfs = os.path.join(tmp, "rootfs")
        os.makedirs(rootfs)
        for layer in man["layers"]:
            with tarfile.open(blob(layer["digest"])) as t:
                t.extractall(rootfs)
        if os.readlink(os.path.join(rootfs, "usr/bin/nats-server")) != "natsd":
            fail("usr/bin/nats-server is not a link to natsd")
        ldd = subprocess.run(["ldd", os.path.join(bdir, "natsd")], capture_output=True,
                             text=True).stdout
        for line in ldd.splitlines():
            parts = line.split()
            path = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
            if path.startswith("/") and not os.path.exists(rootfs + path):
                fail("the image lacks %s" % path)
        for must in ("etc/nsswitch.conf", "etc/passwd", "var/run/nats",
                     "etc/nats-config/nats.conf"):
            if not os.path.exists(os.path.join(rootfs, must)):
                fail("the image lacks /" + must)
        if not [f for d, _, fs in os.walk(rootfs) for f in fs if f == "libnss_files.so.2"]:
            fail("no libnss_files.so.2")
        env = {"PATH": "/usr/bin:/bin"}
        v = subprocess.run([CHROOT, rootfs, "nats-server", "--version"], env=env,
                           capture_output=True, text=True)
        if v.returncode != 0 or "nats-server" not in v.stdout:
            fail("nats-server --version in the image: %r %r" % (v.stdout, v.stderr))

        # The host's natsd, and the image's with a route naming it by host name.
        shutil.copy("/etc/hosts", os.path.join(rootfs, "etc/hosts"))
        host_c, host_r, host_m = free_port(), free_port(), free_port()
        img_c, img_r, img_m = free_port(), free_port(), free_port()
        hconf = os.path.join(tmp, "host.conf")
        with open(hconf, "w") as f:
            f.write('listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\nserver_name: host\n'
                    'cluster { name: img, listen: 127.0.0.1:%d }\n' % (host_c, host_m, host_r))
        with open(os.path.join(rootfs, "etc/nats-config/nats.conf"), "w") as f:
            f.write('listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\nserver_name: image\n'
                    'pid_file: "/var/run/nats/nats.pid"\n'
                    'lame_duck_duration: "30s"\nlame_duck_grace_period: "1s"\n'
                    'cluster { name: img, listen: 127.0.0.1:%d, routes: ["nats://localhost:%d"] }\n'
                    % (img_c, img_m, img_r, host_r))
        log = open(os.path.join(tmp, "natsd.log"), "ab")
        procs.append(subprocess.Popen([os.path.join(bdir, "natsd"), "-c", hconf],
                                      stdout=log, stderr=log))
        img = subprocess.Popen([CHROOT, rootfs, "/usr/bin/natsd", "--config",
                                "/etc/nats-config/nats.conf"], env=env, stdout=log, stderr=log)
        procs.append(img)
        wait_routes(img_m, 1, "the image's natsd")
        wait_routes(host_m, 1, "the host's natsd")
        pre = subprocess.run([CHROOT, rootfs, "nats-server",
                              "-sl=ldm=/var/run/nats/nats.pid"], env=env, capture_output=True,
                             text=True)
        if pre.returncode != 0:
            fail("preStop: %s %s" % (pre.stdout, pre.stderr))
        try:
            img.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fail("the image's natsd did not leave after lame duck mode")
        print("integ.image: ok (%d MB archive)" % (os.path.getsize(out) >> 20))
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
