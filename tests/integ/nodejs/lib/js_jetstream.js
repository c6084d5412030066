// Helpers shared by the JetStream tests in test/jetstream (consumers, KV,
// object store): a fresh JetStream server per test, listers collected into
// arrays, API errors checked by code and text, and a bounded poll for state
// the server updates asynchronously (acks are fire-and-forget).

import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { jetstream, jetstreamManager, JetStreamApiError } from "@nats-io/jetstream";
import { withServer, within, tempDir, HANG_MS } from "./js_harness.js";

// Runs body(nc, jsm, js, srv) against a fresh server started with -js and a
// store directory of its own.
export async function withJs(t, body) {
  const dir = tempDir(t);
  await withServer(
    t,
    async (srv) => {
      const nc = await srv.connect();
      const jsm = await within(jetstreamManager(nc), "the JetStream manager (account info)");
      const js = jetstream(nc);
      await body(nc, jsm, js, srv);
    },
    ["-js", "-sd", dir.path],
  );
}

// Collects an async iterable (a lister, a KV keys iterator) into an array.
export async function all(iterable) {
  const out = [];
  for await (const x of iterable) {
    out.push(x);
  }
  return out;
}

// Asserts that `promise` rejects with a JetStream API error with this err_code
// and, when given, exactly this description.
export async function rejectsApi(promise, errCode, description, what) {
  await assert.rejects(within(promise, what), (err) => {
    assert.ok(err instanceof JetStreamApiError, `${what}: not an API error: ${err}`);
    assert.equal(err.code, errCode, `${what}: err_code (${err.message})`);
    if (description !== undefined) {
      assert.equal(err.message, description, `${what}: description`);
    }
    return true;
  });
}

// Retries `check` (an async function that throws an assertion error while the
// expected state has not been reached) until it passes; the last failure is
// reported after `ms`. Used only where the protocol offers no round trip that
// orders the effect (a plain +ACK, -NAK, +TERM has no reply), never to wait
// for a timer to fire blindly.
export async function eventually(check, what, ms = HANG_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) {
        err.message = `${what}: still failing after ${ms} ms: ${err.message}`;
        throw err;
      }
    }
    await sleep(25);
  }
}

// True when the connected server announces at least version `want`
// ("major.minor.patch") in its INFO.
export function versionAtLeast(nc, want) {
  const have = (nc.info?.version || "0.0.0").split("-")[0].split(".").map(Number);
  const need = want.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    if ((have[i] || 0) !== need[i]) {
      return (have[i] || 0) > need[i];
    }
  }
  return true;
}

// The one async iterator of each iterable that take() reads: the client's
// iterators (a consumer's messages, a subscription) can be iterated only once,
// so later takes must continue the same iterator instead of starting another.
const iterators = new WeakMap();

// Reads the next `n` messages from an async iterable of messages (a consumer's
// fetch/consume, a core subscription), failing on a hang or an early end.
export async function take(iterable, n, what) {
  let it = iterators.get(iterable);
  if (!it) {
    it = iterable[Symbol.asyncIterator]();
    iterators.set(iterable, it);
  }
  const out = [];
  while (out.length < n) {
    const r = await within(it.next(), what);
    assert.ok(!r.done, `${what}: the iterator ended after ${out.length} of ${n} messages`);
    out.push(r.value);
  }
  return out;
}

// Closes a consumer's message iterator that take() has been reading and
// waits until it has ended: the client resolves close() only once the
// iterator it handed out has run to its end.
export async function closeTaken(iterable, what) {
  const closed = iterable.close();
  const it = iterators.get(iterable);
  if (it) {
    for (;;) {
      const r = await within(it.next(), what);
      if (r.done) {
        break;
      }
    }
  }
  await within(closed, what);
}
