#!/usr/bin/python3
"""The Kubernetes pod lifecycle of deploy/k8s/natsd.yaml, played on one machine.

usage: lifecycle.py <natsd binary> <deploy/k8s/natsd.yaml>

What a cluster would do, step by step, with three natsd processes standing in for the pods
nats-0..2 of the StatefulSet:

 1. The manifest's shape: ConfigMap, headless Service, Service, PodDisruptionBudget, StatefulSet
    with the official chart's probes (startup /healthz, readiness /healthz?js-server-only=true,
    liveness /healthz?js-enabled-only=true), the preStop `nats-server -sl=ldm=<pid file>`, the
    pid volume shared with the reloader, and a nats.conf whose routes name every replica.
 2. Pods start: each gets the ConfigMap's nats.conf as the kubelet mounts it (nats.conf ->
    ..data/nats.conf, ..data -> ..<timestamp>), POD_NAME in its environment (the config's bare
    $POD_NAME), and runs `natsd --config <dir>/nats.conf`. The routes still name all three
    servers, each itself included: natsd skips the route to itself. The startup probe is polled
    until it passes, then readiness and liveness, as the kubelet does (faster periods).
 3. A client connects through "the Service" (any ready pod), subscribes and publishes to itself
    in a loop for the whole run: every message it publishes must come back; the only error it may
    see is a closed connection, after which it reconnects to another ready pod, subscribes again
    and carries on.
 4. ConfigMap change: a new ..<timestamp> directory with max_connections changed, the ..data
    symlink swapped atomically, then SIGHUP to the pid in the pid file (the chart's reloader);
    /varz shows the new value on every pod. Then another change with no SIGHUP: natsd follows
    the ..data swap itself (server/confwatch.h).
 5. Rolling restart (StatefulSet order: highest ordinal first): preStop runs
    `nats-server -sl=ldm=<pid file>` (nats-server is a symlink to natsd, as in the image), then
    SIGTERM, which natsd ignores in lame duck mode; the process must exit on its own before
    terminationGracePeriodSeconds. The pod starts again, its probes pass, and its routes come
    back before the next pod is restarted (the PodDisruptionBudget's maxUnavailable: 1).
 6. After the last restart the mesh is whole again: two routes on every pod, and a message
    published on nats-0 reaches a subscriber on nats-2.

Changes to the rendered config, and only these: the pods' DNS names become 127.0.0.1 with a port
per pod (one machine), the pid file moves into the pod's directory, and lame_duck_grace_period
is LIFECYCLE_GRACE (default 2s; the chart's 10s would make a 3-pod rolling restart take 40 s).
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import yaml

REPLICAS_EXPECTED = 3


def fail(msg):
    print("lifecycle: FAIL: " + msg, flush=True)
    raise SystemExit(1)


def log(msg):
    print("lifecycle: " + msg, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


# ---- 1. the manifest -------------------------------------------------------------------------

def load_manifest(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    for k in ("ConfigMap", "Service", "PodDisruptionBudget", "StatefulSet"):
        if k not in by_kind:
            fail("manifest has no %s" % k)
    sts = by_kind["StatefulSet"][0]
    spec = sts["spec"]
    headless = [s for s in by_kind["Service"] if s["spec"].get("clusterIP") == "None"]
    if not headless or headless[0]["metadata"]["name"] != spec["serviceName"]:
        fail("no headless Service named by the StatefulSet's serviceName")
    if not headless[0]["spec"].get("publishNotReadyAddresses"):
        fail("the headless Service must publish not-ready addresses (routes form before ready)")
    pdb = by_kind["PodDisruptionBudget"][0]
    if pdb["spec"].get("maxUnavailable") != 1:
        fail("PodDisruptionBudget maxUnavailable is not 1")
    if pdb["spec"]["selector"]["matchLabels"] != spec["selector"]["matchLabels"]:
        fail("PodDisruptionBudget does not select the StatefulSet's pods")
    pod = spec["template"]["spec"]
    nats = [c for c in pod["containers"] if c["name"] == "nats"][0]
    probes = {
        "startupProbe": "/healthz",
        "readinessProbe": "/healthz?js-server-only=true",
        "livenessProbe": "/healthz?js-enabled-only=true",
    }
    for p, path in probes.items():
        got = nats.get(p, {}).get("httpGet", {})
        if got.get("path") != path or got.get("port") != "monitor":
            fail("%s is %r, the chart sets %s on port monitor" % (p, got, path))
    pre = nats["lifecycle"]["preStop"]["exec"]["command"]
    if len(pre) != 2 or pre[0] != "nats-server" or not pre[1].startswith("-sl=ldm="):
        fail("preStop is %r" % pre)
    pid_file = pre[1][len("-sl=ldm="):]
    mounts = {m["name"]: m["mountPath"] for m in nats["volumeMounts"]}
    if os.path.dirname(pid_file) != mounts.get("pid"):
        fail("the pid file %s is not on the pid volume" % pid_file)
    if nats["args"] != ["--config", mounts["config"] + "/nats.conf"]:
        fail("args %r do not name the mounted config" % nats["args"])
    env = [e for e in nats["env"] if e["name"] == "POD_NAME"]
    if not env or env[0]["valueFrom"]["fieldRef"]["fieldPath"] != "metadata.name":
        fail("POD_NAME is not the pod's name")
    if pod.get("shareProcessNamespace") is not True:
        fail("the reloader needs shareProcessNamespace to signal natsd")
    conf = by_kind["ConfigMap"][0]["data"]["nats.conf"]
    # The chart writes JSON with a bare $POD_NAME: make it JSON to read the values.
    parsed = json.loads(conf.replace("$POD_NAME", '"$POD_NAME"'))
    if parsed.get("pid_file") != pid_file:
        fail("config pid_file %s is not the preStop's %s" % (parsed.get("pid_file"), pid_file))
    replicas = spec["replicas"]
    if replicas != REPLICAS_EXPECTED or len(parsed["cluster"]["routes"]) != replicas:
        fail("%d replicas, %d routes" % (replicas, len(parsed["cluster"]["routes"])))
    return {
        "conf": conf,
        "parsed": parsed,
        "sts": sts,
        "replicas": replicas,
        "grace_s": pod.get("terminationGracePeriodSeconds", 30),
        "probes": probes,
        "headless": spec["serviceName"],
    }


# ---- 2. pods -----------------------------------------------------------------------------------

class Pod:
    def __init__(self, m, i, root, binary, ports):
        self.name = "%s-%d" % (m["sts"]["metadata"]["name"], i)
        self.i = i
        self.dir = os.path.join(root, self.name)
        self.binary = binary
        self.client_port, self.route_port, self.http_port = ports[i]
        self.proc = None
        self.pid_file = os.path.join(self.dir, "run", "nats.pid")
        self.conf_dir = os.path.join(self.dir, "config")
        os.makedirs(os.path.join(self.dir, "run"))
        os.makedirs(self.conf_dir)
        self.log = open(os.path.join(self.dir, "natsd.log"), "ab")
        self.version = 0

    def localize(self, m, conf, ports):
        """The ConfigMap's text for this one machine (see the module's comment)."""
        p = m["parsed"]
        for k in range(m["replicas"]):
            host = "%s-%d.%s:%d" % (m["sts"]["metadata"]["name"], k, m["headless"],
                                    p["cluster"]["port"])
            conf = conf.replace(host, "127.0.0.1:%d" % ports[k][1])
        conf = conf.replace('"port": %d,\n    "routes"' % p["cluster"]["port"],
                            '"port": %d,\n    "routes"' % self.route_port)
        conf = conf.replace('"http_port": %d' % p["http_port"], '"http_port": %d' % self.http_port)
        conf = conf.replace('\n  "port": %d' % p["port"], '\n  "port": %d' % self.client_port)
        conf = conf.replace('"pid_file": "%s"' % p["pid_file"], '"pid_file": "%s"' % self.pid_file)
        grace = os.environ.get("LIFECYCLE_GRACE", "2s")
        conf = conf.replace('"lame_duck_grace_period": "%s"' % p["lame_duck_grace_period"],
                            '"lame_duck_grace_period": "%s"' % grace)
        for must in ('"port": %d' % self.client_port, '"port": %d' % self.route_port,
                     str(self.http_port), self.pid_file):
            if must not in conf:
                fail("could not localize the config (%s): %s" % (must, conf))
        return conf

    def mount(self, text):
        """Writes the ConfigMap volume as the kubelet does: a new timestamped directory, then
        ..data swapped to it with one rename, the key a symlink through ..data."""
        self.version += 1
        ts = "..2026_01_01_00_00_%02d.%d" % (self.version, random.randrange(1 << 30))
        d = os.path.join(self.conf_dir, ts)
        os.makedirs(d)
        with open(os.path.join(d, "nats.conf"), "w") as f:
            f.write(text)
        tmp = os.path.join(self.conf_dir, "..data_tmp")
        os.symlink(ts, tmp)
        os.rename(tmp, os.path.join(self.conf_dir, "..data"))
        key = os.path.join(self.conf_dir, "nats.conf")
        if not os.path.islink(key):
            os.symlink("..data/nats.conf", key)

    def start(self):
        env = dict(os.environ, POD_NAME=self.name)
        self.proc = subprocess.Popen([self.binary, "--config",
                                      os.path.join(self.conf_dir, "nats.conf")],
                                     env=env, stdout=self.log, stderr=self.log,
                                     cwd=self.dir)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def probe(self, path, timeout=5):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.http_port, path),
                                        timeout=timeout) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def get_json(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.http_port, path),
                                    timeout=5) as r:
            return json.loads(r.read())

    def wait_probes(self, m, deadline_s=20):
        """startupProbe until it passes, then readiness and liveness (as the kubelet: the
        others are not run before the startup probe succeeded)."""
        end = time.time() + deadline_s
        for p in ("startupProbe", "readinessProbe", "livenessProbe"):
            while True:
                if not self.alive():
                    fail("%s exited during its %s (rc %s)" % (self.name, p, self.proc.poll()))
                st = self.probe(m["probes"][p])
                if st == 200:
                    break
                if time.time() > end:
                    fail("%s: %s %s is %s" % (self.name, p, m["probes"][p], st))
                time.sleep(0.1)

    def wait_routes(self, n, deadline_s=15):
        end = time.time() + deadline_s
        while True:
            try:
                got = self.get_json("/routez")["num_routes"]
            except OSError:
                got = None
            if got == n:
                return
            if time.time() > end:
                fail("%s has %s routes, not %d" % (self.name, got, n))
            time.sleep(0.1)

    def read_pid(self):
        with open(self.pid_file) as f:
            return int(f.read().strip())


# ---- 3. the client ---------------------------------------------------------------------------

class Client(threading.Thread):
    """One connection that subscribes to its own subject and publishes to it in a loop. Each
    message must come back before the next is sent; a closed connection is the only error
    allowed: the client then reconnects to a ready pod, subscribes again and publishes the
    message it had not seen again."""

    def __init__(self, pods, first):
        super().__init__(daemon=True)
        self.pods = pods
        self.first = first
        self.stop = threading.Event()
        self.error = None
        self.sent = 0
        self.received = 0
        self.reconnects = 0
        self.max_outage = 0.0
        self.sock = None
        self.buf = b""
        self.subject = b"lifecycle.%d" % id(self)

    def _connect(self):
        start = time.time()
        order = list(self.pods)
        random.shuffle(order)
        if self.first is not None:  # the first connection goes to this pod
            order.remove(self.first)
            order.insert(0, self.first)
            self.first = None
        while not self.stop.is_set():
            for p in order:
                if not p.alive():
                    continue
                try:
                    s = socket.create_connection(("127.0.0.1", p.client_port), timeout=2)
                    s.settimeout(2)
                    self.sock, self.buf = s, b""
                    line = self._line()
                    if not line.startswith(b"INFO "):
                        raise OSError("no INFO: %r" % line)
                    info = json.loads(line[5:])
                    if info.get("ldm"):
                        raise OSError("lame duck")
                    s.sendall(b'CONNECT {"verbose":false,"pedantic":true,"protocol":1,'
                              b'"name":"lifecycle"}\r\nSUB %s 1\r\nPING\r\n' % self.subject)
                    self._until_pong()
                    self.max_outage = max(self.max_outage, time.time() - start)
                    return True
                except OSError:
                    self._drop()
            if time.time() - start > 10:
                self.error = "no pod took the client for 10 s"
                return False
            time.sleep(0.05)
        return False

    def _drop(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.sock.recv(65536)
            if not d:
                raise OSError("closed")
            self.buf += d
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self, n):
        while len(self.buf) < n:
            d = self.sock.recv(65536)
            if not d:
                raise OSError("closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _op(self):
        """The next server op that is not a PING or an INFO (both handled here)."""
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"INFO "):
                continue  # connect_urls, ldm: a reconnect follows the close
            elif line.startswith(b"-ERR"):
                self.error = "server error: %r" % line
                raise OSError("error")
            else:
                return line

    def _until_pong(self):
        while True:
            if self._op() == b"PONG":
                return

    def run(self):
        if not self._connect():
            return
        seq = 0
        while not self.stop.is_set() and self.error is None:
            payload = b"%d" % seq
            try:
                self.sock.sendall(b"PUB %s %d\r\n%s\r\n" % (self.subject, len(payload), payload))
                self.sent += 1
                while True:
                    op = self._op()
                    if op.startswith(b"MSG "):
                        parts = op.split()
                        data = self._read(int(parts[-1]) + 2)[:-2]
                        if data != payload:
                            self.error = "got %r, expected %r" % (data, payload)
                            return
                        self.received += 1
                        seq += 1
                        break
                    if op in (b"+OK", b"PONG"):
                        continue
                    self.error = "unexpected %r" % op
                    return
            except socket.timeout:
                if self.error is None:
                    self.error = "message %d did not come back within 2 s" % seq
                return
            except OSError:
                if self.error is not None:
                    return
                self._drop()
                self.reconnects += 1
                if not self._connect():
                    return
            time.sleep(0.002)
        self._drop()


class Kubelet(threading.Thread):
    """Polls every running pod's liveness probe (and readiness, to report it) while the test
    runs, as the kubelet does; a pod whose liveness fails failureThreshold times in a row
    while it is not being stopped would be restarted by the kubelet: the test fails."""

    def __init__(self, m, pods, period=0.3):
        super().__init__(daemon=True)
        self.m, self.pods, self.period = m, pods, period
        self.stop = threading.Event()
        self.stopping = set()
        self.error = None
        self.polls = 0
        self.threshold = m["sts"]["spec"]["template"]["spec"]["containers"][0][
            "livenessProbe"]["failureThreshold"]

    def run(self):
        misses = {}
        while not self.stop.wait(self.period):
            for p in self.pods:
                if not p.alive() or p.name in self.stopping:
                    misses[p.name] = 0
                    continue
                st = p.probe(self.m["probes"]["livenessProbe"], timeout=5)
                self.polls += 1
                misses[p.name] = 0 if st == 200 else misses.get(p.name, 0) + 1
                if misses[p.name] >= self.threshold and self.error is None:
                    self.error = "%s failed its liveness probe %d times (last: %s)" % (
                        p.name, misses[p.name], st)


def cross_node(a, b):
    """A message published on pod a reaches a subscriber on pod b (over the routes)."""
    sub = socket.create_connection(("127.0.0.1", b.client_port), timeout=5)
    pub = socket.create_connection(("127.0.0.1", a.client_port), timeout=5)
    for s in (sub, pub):
        s.recv(65536)
    sub.sendall(b'CONNECT {"verbose":false}\r\nSUB cross 1\r\nPING\r\n')
    got = b""
    while b"PONG" not in got:
        got += sub.recv(65536)
    pub.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
    end = time.time() + 10
    got = b""
    # Interest crosses the route asynchronously: publish until one arrives.
    while b"MSG cross" not in got:
        if time.time() > end:
            fail("no message from %s reached %s" % (a.name, b.name))
        pub.sendall(b"PUB cross 2\r\nhi\r\n")
        sub.settimeout(0.2)
        try:
            got += sub.recv(65536)
        except socket.timeout:
            pass
    sub.close()
    pub.close()


# ---- the run -----------------------------------------------------------------------------------

def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, manifest = os.path.abspath(sys.argv[1]), sys.argv[2]
    t0 = time.time()
    m = load_manifest(manifest)
    log("manifest: %d replicas, probes, preStop, pid volume, PDB ok" % m["replicas"])
    root = tempfile.mkdtemp(prefix="nd_k8s_")
    # The image's nats-server name for the binary, which the preStop hook runs.
    bindir = os.path.join(root, "bin")
    os.makedirs(bindir)
    os.symlink(binary, os.path.join(bindir, "nats-server"))
    ports = [(free_port(), free_port(), free_port()) for _ in range(m["replicas"])]
    pods = [Pod(m, i, root, binary, ports) for i in range(m["replicas"])]
    clients = []
    ok = False
    try:
        for p in pods:
            p.mount(p.localize(m, m["conf"], ports))
            p.start()
        for p in pods:
            p.wait_probes(m)
        for p in pods:
            p.wait_routes(m["replicas"] - 1)
            v = p.get_json("/varz")
            if v.get("server_name") != p.name:
                fail("%s: server_name %r ($POD_NAME)" % (p.name, v.get("server_name")))
        log("pods started, probes pass, full mesh (%.1fs)" % (time.time() - t0))

        kubelet = Kubelet(m, pods)
        kubelet.start()
        clients = [Client(pods, p) for p in pods]  # one starts on each pod
        for c in clients:
            c.start()
        time.sleep(0.5)
        for c in clients:
            if c.received == 0:
                fail("a client received nothing: %s" % c.error)

        # 4. ConfigMap change and the reloader's SIGHUP.
        new_conf = m["conf"].replace('"http_port"', '"max_connections": 4321,\n  "http_port"')
        for p in pods:
            p.mount(p.localize(m, new_conf, ports))
            os.kill(p.read_pid(), signal.SIGHUP)
        for p in pods:
            end = time.time() + 5
            while p.get_json("/varz").get("max_connections") != 4321:
                if time.time() > end:
                    fail("%s did not reload the ConfigMap's change" % p.name)
                time.sleep(0.05)
        log("ConfigMap swap + SIGHUP reloaded on every pod (%.1fs)" % (time.time() - t0))
        # The same without the reloader: natsd follows the ..data swap itself.
        new_conf = m["conf"].replace('"http_port"', '"max_connections": 4322,\n  "http_port"')
        for p in pods:
            p.mount(p.localize(m, new_conf, ports))
        for p in pods:
            end = time.time() + 5
            while p.get_json("/varz").get("max_connections") != 4322:
                if time.time() > end:
                    fail("%s did not follow the ..data swap without SIGHUP" % p.name)
                time.sleep(0.05)
        log("ConfigMap swap alone (natsd watching ..data) reloaded on every pod (%.1fs)" %
            (time.time() - t0))

        # 5. Rolling restart, highest ordinal first.
        for p in reversed(pods):
            before = sum(c.received for c in clients)
            nconns = p.get_json("/connz")["num_connections"]
            kubelet.stopping.add(p.name)
            pre = subprocess.run([os.path.join(bindir, "nats-server"),
                                  "-sl=ldm=%s" % p.pid_file], capture_output=True, timeout=10)
            if pre.returncode != 0:
                fail("preStop on %s: rc %d %s" % (p.name, pre.returncode, pre.stderr))
            p.proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            if not p.alive() and nconns > 0:
                fail("%s: SIGTERM was not ignored in lame duck mode" % p.name)
            try:
                p.proc.wait(timeout=m["grace_s"])
            except subprocess.TimeoutExpired:
                p.proc.kill()
                fail("%s still running after terminationGracePeriodSeconds" % p.name)
            if p.proc.returncode not in (0, 1):
                fail("%s exited with %d" % (p.name, p.proc.returncode))
            p.start()
            p.wait_probes(m)
            kubelet.stopping.discard(p.name)
            for q in pods:
                q.wait_routes(m["replicas"] - 1)
            end = time.time() + 10
            while sum(c.received for c in clients) <= before + 30 and time.time() < end:
                time.sleep(0.05)
            for c in clients:
                if c.error is not None:
                    fail("client: %s" % c.error)
            if kubelet.error is not None:
                fail(kubelet.error)
            log("%s restarted: lame duck (%d clients), exit, probes, routes (%.1fs; clients %d "
                "msgs, %d reconnects)" % (p.name, nconns, time.time() - t0,
                                          sum(c.received for c in clients),
                                          sum(c.reconnects for c in clients)))

        # 6. The mesh is whole again.
        cross_node(pods[0], pods[-1])
        kubelet.stop.set()
        kubelet.join(timeout=10)
        if kubelet.error is not None:
            fail(kubelet.error)
        for c in clients:
            c.stop.set()
            c.join(timeout=5)
            if c.error is not None:
                fail("client: %s" % c.error)
            # A message in flight when its connection closed is sent again after the reconnect.
            if c.received < c.sent - c.reconnects - 1:
                fail("client sent %d, received %d" % (c.sent, c.received))
            if c.reconnects == 0:
                fail("a client was never moved by the rolling restart")
        log("done in %.1fs: %d liveness polls; clients sent %d, received %d, %d reconnects, "
            "longest outage %.2fs" % (time.time() - t0, kubelet.polls,
                                      sum(c.sent for c in clients),
                                      sum(c.received for c in clients),
                                      sum(c.reconnects for c in clients),
                                      max(c.max_outage for c in clients)))
        ok = True
        return 0
    finally:
        for c in clients:
            c.stop.set()
        for p in pods:
            if p.alive():
                p.proc.kill()
                p.proc.wait()
        if ok and not os.environ.get("LIFECYCLE_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
        else:
            log("pod logs kept in %s" % root)


if __name__ == "__main__":
    sys.exit(main())
