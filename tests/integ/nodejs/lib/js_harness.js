// Test harness for natsd's JavaScript integration tests.
//
// Each test starts its own server process on a random loopback port, talks to
// it with the official NATS JavaScript client and stops it with SIGINT,
// asserting that the process exits with status 0. The server binary comes from
// the NATSD_TEST_SERVER environment variable, so the same tests run against
// natsd and against the reference nats-server (which is how the expectations
// were checked).
//
// Synchronisation never relies on sleeping: the tests use flush (PING/PONG)
// and request round trips, or wait for a known number of messages. Every wait
// is wrapped in a generous timeout that exists only to turn a hang into a
// readable failure.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";

// How long a single wait may take before it is reported as a hang. Generous
// because the test machines are small and shared.
export const HANG_MS = 20000;

// The line every NATS server logs once it accepts clients; the port is parsed
// from it because the tests ask for a random one with `-p -1`.
const LISTEN_RE = /Listening for client connections on ([^\s]+):(\d+)/;

// Returns the server binary or fails the test with a clear message, because a
// missing variable would otherwise surface as a confusing spawn error.
function serverBinary() {
  const bin = process.env.NATSD_TEST_SERVER;
  assert.ok(bin, "NATSD_TEST_SERVER must name the server binary to test");
  return bin;
}

// Races `promise` against a timer so that a hang fails the test with `what`
// in the message instead of stalling the whole run.
export async function within(promise, what, ms = HANG_MS) {
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

// A promise with its resolve function exposed, used to wait for a count of
// messages from inside subscription callbacks.
export function latch() {
  let resolve;
  const promise = new Promise((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

// Makes a fresh temporary directory for a test's config files, keys and
// certificates and removes it when the test ends. `dir.file(name, text)`
// writes a file there and returns its path.
export function tempDir(t) {
  const path = mkdtempSync(join(tmpdir(), "natsd-js-"));
  t.after(() => rmSync(path, { recursive: true, force: true }));
  return {
    path,
    file(name, text) {
      const p = join(path, name);
      writeFileSync(p, text);
      return p;
    },
  };
}

// A running server process. `log` accumulates everything the server wrote so
// that failures can show it.
class ServerProcess {
  constructor(child) {
    this.child = child;
    this.log = "";
    this.port = 0;
    this.host = "";
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    this.exitStatus = null;
    this.exited.then((s) => {
      this.exitStatus = s;
    });
  }

  get url() {
    return `${this.host}:${this.port}`;
  }

  // Sends SIGINT and waits for the process to exit; returns {code, signal}.
  async stop() {
    if (this.exitStatus === null) {
      this.child.kill("SIGINT");
    }
    return within(this.exited, "the server to exit after SIGINT");
  }

  // Last resort used by cleanup hooks when a test failed before stop().
  kill() {
    if (this.exitStatus === null) {
      this.child.kill("SIGKILL");
    }
  }
}

// Starts the server under test on 127.0.0.1 with a random port and resolves
// once it has logged its listening line on stderr.
export async function startServer(extraArgs = []) {
  const child = spawn(serverBinary(), ["-a", "127.0.0.1", "-p", "-1", ...extraArgs], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const srv = new ServerProcess(child);
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (s) => {
    srv.log += s;
  });
  const listening = new Promise((resolve, reject) => {
    let pending = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (s) => {
      srv.log += s;
      pending += s;
      // Only complete lines are matched so that a port split across two
      // reads is never parsed short.
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        const m = LISTEN_RE.exec(line);
        if (m) {
          srv.host = m[1];
          srv.port = Number(m[2]);
          resolve(srv);
        }
      }
    });
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      reject(new Error(`server exited (code ${code}, signal ${signal}) before listening:\n${srv.log}`)),
    );
  });
  try {
    return await within(listening, "the server's listening line");
  } catch (err) {
    srv.kill();
    throw err;
  }
}

// Runs `body(srv)` against a fresh server, then stops it with SIGINT and
// asserts a clean exit. Clients the body opens with `srv.connect` are closed
// first if the body left them open, so a failing assertion never leaves a
// process behind.
export async function withServer(t, body, extraArgs = []) {
  const srv = await startServer(extraArgs);
  const clients = [];
  srv.connect = async (opts = {}) => {
    const nc = await within(
      connect({ servers: srv.url, reconnect: false, ...opts }),
      `a client connection to ${srv.url}`,
    );
    clients.push(nc);
    return nc;
  };
  t.after(() => srv.kill());
  try {
    await body(srv);
  } catch (err) {
    err.message += `\n--- server log ---\n${srv.log}`;
    throw err;
  } finally {
    for (const nc of clients) {
      if (!nc.isClosed()) {
        await within(nc.close(), "a client to close").catch(() => {});
      }
    }
  }
  const st = await srv.stop();
  assert.deepEqual(st, { code: 0, signal: null }, `server did not exit cleanly on SIGINT:\n${srv.log}`);
}

// True when the server under test is the reference nats-server rather than
// natsd (the same test as nd_integ_is_reference() in tests/integ/harness.c).
// The reference here is 2.9.10, so a test of behaviour that nats-server only
// gained in 2.10 or 2.11 (which natsd implements) is skipped against it, and
// only against it.
export function isReference() {
  return (process.env.NATSD_TEST_SERVER || "").includes("nats-server");
}
