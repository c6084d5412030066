// Request/reply, the no-responders status and message headers.

import { test } from "node:test";
import assert from "node:assert/strict";
import { headers, Empty, RequestError, NoRespondersError } from "@nats-io/transport-node";
import { withServer, within, latch } from "../lib/js_harness.js";

const opts = { timeout: 60000 };

// Starts a responder on `nc` that answers every request on `subject` with
// `prefix` + the request's payload.
function responder(nc, subject, prefix, subOpts = {}) {
  return nc.subscribe(subject, {
    ...subOpts,
    callback: (err, m) => {
      assert.equal(err, null);
      assert.ok(m.reply, "a request must carry a reply subject");
      m.respond(`${prefix}${m.string()}`);
    },
  });
}

test("request/reply: single, concurrent and old-style (noMux) requests", opts, async (t) => {
  await withServer(t, async (srv) => {
    const svc = await srv.connect();
    responder(svc, "svc.echo", "re:");
    await within(svc.flush(), "SUB registration");
    const client = await srv.connect();

    const r = await within(client.request("svc.echo", "hello", { timeout: 10000 }), "a reply");
    assert.equal(r.string(), "re:hello");

    // Concurrent requests through the shared mux inbox each get their own reply.
    const replies = await within(
      Promise.all(
        Array.from({ length: 200 }, (_, i) => client.request("svc.echo", `q${i}`, { timeout: 10000 })),
      ),
      "200 concurrent replies",
    );
    assert.deepEqual(
      replies.map((m) => m.string()),
      Array.from({ length: 200 }, (_, i) => `re:q${i}`),
    );

    // Old-style requests use a fresh inbox subscription with max 1 each.
    for (let i = 0; i < 5; i++) {
      const m = await within(
        client.request("svc.echo", `n${i}`, { timeout: 10000, noMux: true }),
        "a noMux reply",
      );
      assert.equal(m.string(), `re:n${i}`);
    }

    // A request with an explicit reply subject the requester subscribed to.
    const inbox = "my.inbox.1";
    const got = latch();
    client.subscribe(inbox, { max: 1, callback: (err, m) => got.resolve(m.string()) });
    await within(client.flush(), "SUB registration");
    client.publish("svc.echo", "manual", { reply: inbox });
    assert.equal(await within(got.promise, "the manual reply"), "re:manual");
  });
});

test("request/reply: a queue-group service answers each request once", opts, async (t) => {
  await withServer(t, async (srv) => {
    const N = 50;
    const handled = [];
    const ends = [];
    const members = [];
    for (const name of ["a", "b"]) {
      const nc = await srv.connect();
      nc.subscribe("svc.q", {
        queue: "svc",
        callback: (err, m) => {
          handled.push(Number(m.string()));
          m.respond(`${name}:${m.string()}`);
        },
      });
      // A plain subscription on each member: the client's marker reaches both
      // after every request it sent before (per-publisher order).
      const end = latch();
      ends.push(end.promise);
      nc.subscribe("svc.q.end", { callback: () => end.resolve() });
      members.push(nc);
    }
    await within(Promise.all(members.map((nc) => nc.flush())), "SUB registration");
    const client = await srv.connect();
    for (let i = 0; i < N; i++) {
      const r = await within(client.request("svc.q", String(i), { timeout: 10000 }), "a reply");
      assert.match(r.string(), new RegExp(`^[ab]:${i}$`));
    }
    client.publish("svc.q.end", "");
    await within(Promise.all(ends), "the end marker at both members");
    assert.deepEqual(
      handled.sort((x, y) => x - y),
      Array.from({ length: N }, (_, i) => i),
      "each request must reach exactly one member of the group",
    );
  });
});

test("no responders: a request with no subscriber fails fast with 503", opts, async (t) => {
  await withServer(t, async (srv) => {
    const nc = await srv.connect();
    // The timeout is far longer than the hang guard of the test, so a
    // rejection can only come from the server's no-responders status.
    const err = await within(
      nc.request("nobody.home", Empty, { timeout: 120000 }).then(
        () => null,
        (e) => e,
      ),
      "the no-responders error",
    );
    assert.ok(err, "the request must fail");
    assert.ok(err instanceof RequestError, `expected RequestError, got ${err}`);
    assert.ok(err.isNoResponders(), `expected a no-responders cause, got ${err.cause}`);
    assert.ok(err.cause instanceof NoRespondersError);

    // Same with an old-style request.
    const err2 = await within(
      nc.request("nobody.home", Empty, { timeout: 120000, noMux: true }).then(
        () => null,
        (e) => e,
      ),
      "the noMux no-responders error",
    );
    assert.ok(err2 && err2.isNoResponders(), `expected no responders, got ${err2}`);

    // The connection stays usable afterwards.
    await within(nc.flush(), "flush after no responders");
  });
});

test("headers: multi-valued headers and payloads round trip, also in replies", opts, async (t) => {
  await withServer(t, async (srv) => {
    const nc = await srv.connect();
    const pub = await srv.connect();
    const got = [];
    const done = latch();
    nc.subscribe("hdr.>", {
      callback: (err, m) => {
        got.push(m);
        if (got.length === 3) done.resolve();
      },
    });
    await within(nc.flush(), "SUB registration");

    const h = headers();
    h.set("X-Single", "one");
    h.append("X-Multi", "first");
    h.append("X-Multi", "second");
    h.set("X-Spaces", "a value with spaces");
    pub.publish("hdr.full", "payload", { headers: h });
    const onlyHdr = headers();
    onlyHdr.set("X-Empty-Body", "yes");
    pub.publish("hdr.empty", Empty, { headers: onlyHdr });
    pub.publish("hdr.none", "plain");
    await within(done.promise, "three header messages");

    const [full, empty, none] = got;
    assert.equal(full.subject, "hdr.full");
    assert.equal(full.string(), "payload");
    assert.ok(full.headers, "headers must arrive");
    assert.equal(full.headers.get("X-Single"), "one");
    assert.deepEqual(full.headers.values("X-Multi"), ["first", "second"]);
    assert.equal(full.headers.get("X-Spaces"), "a value with spaces");
    assert.equal(full.headers.hasError, false);

    assert.equal(empty.data.length, 0);
    assert.equal(empty.headers.get("X-Empty-Body"), "yes");

    assert.equal(none.string(), "plain");
    assert.equal(none.headers, undefined, "a plain PUB must arrive without headers");

    // A responder that echoes the request's headers with one added.
    nc.subscribe("hdr.svc", {
      callback: (err, m) => {
        const rh = headers();
        for (const [k, vs] of m.headers) for (const v of vs) rh.append(k, v);
        rh.set("X-Replied", "true");
        m.respond(m.data, { headers: rh });
      },
    });
    await within(nc.flush(), "SUB registration");
    const rq = headers();
    rq.set("X-Req", "42");
    const r = await within(pub.request("hdr.svc", "body", { headers: rq, timeout: 10000 }), "a reply");
    assert.equal(r.string(), "body");
    assert.equal(r.headers.get("X-Req"), "42");
    assert.equal(r.headers.get("X-Replied"), "true");
  });
});
