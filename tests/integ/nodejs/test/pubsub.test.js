// Publish/subscribe: subject wildcards, queue groups, auto-unsubscribe,
// drain and ordered delivery of many messages.
//
// Where a test must show that a subscription got nothing more than expected,
// the publisher finishes with an "END" marker message that the subscription
// matches: NATS keeps messages from one publisher in order on a subscription,
// so once the marker has arrived every earlier message has too. This keeps
// these tests independent of the flush-ordering guarantee, which has tests of
// its own in connect.test.js.

import { test } from "node:test";
import assert from "node:assert/strict";
import { withServer, within, latch } from "../lib/js_harness.js";

const opts = { timeout: 60000 };
const END = "END";

// Subscribes `pattern` on `nc`, collecting subjects and payloads of ordinary
// messages; `ended(n)` resolves once n END markers have arrived.
function collect(nc, pattern, subOpts = {}) {
  const out = { subjects: [], payloads: [], ends: 0, waiters: [] };
  out.ended = (n = 1) =>
    new Promise((resolve) => {
      out.waiters.push({ n, resolve });
      wake();
    });
  function wake() {
    out.waiters = out.waiters.filter((w) => (out.ends >= w.n ? (w.resolve(), false) : true));
  }
  out.sub = nc.subscribe(pattern, {
    ...subOpts,
    callback: (err, m) => {
      assert.equal(err, null);
      const s = m.string();
      if (s === END) {
        out.ends++;
        wake();
        return;
      }
      out.subjects.push(m.subject);
      out.payloads.push(s);
    },
  });
  return out;
}

test("pub/sub: literal, '*' and '>' subscriptions get exactly their subjects", opts, async (t) => {
  await withServer(t, async (srv) => {
    const subNc = await srv.connect();
    const pub = await srv.connect();
    // pattern -> a subject that matches it, used for its END marker.
    const markers = {
      "foo.bar": "foo.bar",
      "foo.*": "foo.end",
      "foo.>": "foo.end",
      "*.bar": "end.bar",
      ">": "end",
      "foo.*.baz": "foo.end.baz",
      bar: "bar",
    };
    const subs = Object.fromEntries(Object.keys(markers).map((p) => [p, collect(subNc, p)]));
    await within(subNc.flush(), "SUB registration");

    const subjects = ["foo.bar", "foo.baz", "foo.bar.baz", "foo.x.baz", "foo", "bar", "x.bar", "a.b.c"];
    for (const s of subjects) {
      pub.publish(s, s);
    }
    for (const s of new Set(Object.values(markers))) {
      pub.publish(s, END);
    }
    await within(Promise.all(Object.values(subs).map((c) => c.ended())), "END markers");

    assert.deepEqual(subs["foo.bar"].subjects, ["foo.bar"]);
    assert.deepEqual(subs["foo.*"].subjects, ["foo.bar", "foo.baz"]);
    assert.deepEqual(subs["foo.>"].subjects, ["foo.bar", "foo.baz", "foo.bar.baz", "foo.x.baz"]);
    assert.deepEqual(subs["*.bar"].subjects, ["foo.bar", "x.bar"]);
    assert.deepEqual(subs[">"].subjects, subjects);
    assert.deepEqual(subs["foo.*.baz"].subjects, ["foo.bar.baz", "foo.x.baz"]);
    assert.deepEqual(subs["bar"].subjects, ["bar"]);
    // Payloads travel unchanged.
    assert.deepEqual(subs[">"].payloads, subjects);
  });
});

test("pub/sub: unsubscribe stops delivery", opts, async (t) => {
  await withServer(t, async (srv) => {
    const subNc = await srv.connect();
    const pub = await srv.connect();
    const gone = collect(subNc, "unsub.x");
    const kept = collect(subNc, "unsub.>");
    await within(subNc.flush(), "SUB registration");
    pub.publish("unsub.x", "one");
    pub.publish("unsub.x", END);
    await within(gone.ended(), "first END");
    gone.sub.unsubscribe();
    await within(subNc.flush(), "UNSUB registration");
    pub.publish("unsub.x", "two");
    pub.publish("unsub.y", END);
    await within(kept.ended(2), "END on the remaining subscription");
    assert.deepEqual(gone.payloads, ["one"]);
    assert.deepEqual(kept.payloads, ["one", "two"]);
    // gone: one, END; kept: one, END, two, END.
    assert.equal(subNc.stats().inMsgs, 6, "the server must not deliver to an unsubscribed sid");
  });
});

test("queue groups: each message goes to exactly one member, plain subscribers get all", opts, async (t) => {
  await withServer(t, async (srv) => {
    const N = 300;
    const members = [];
    for (let i = 0; i < 3; i++) {
      const nc = await srv.connect();
      members.push({ nc, got: [] });
    }
    const plainNc = await srv.connect();
    const plain = collect(plainNc, "work.>");
    const all = latch();
    let total = 0;
    for (const m of members) {
      m.nc.subscribe("work.*", {
        queue: "workers",
        callback: (err, msg) => {
          m.got.push(Number(msg.string()));
          if (++total === N) all.resolve();
        },
      });
    }
    await within(Promise.all([plainNc.flush(), ...members.map((m) => m.nc.flush())]), "SUB registration");

    const pub = await srv.connect();
    for (let i = 0; i < N; i++) {
      pub.publish(`work.${i % 7}`, String(i));
    }
    pub.publish("work.end.x", END); // matches the plain 'work.>' only
    await within(plain.ended(), "the plain subscriber's END");
    await within(all.promise, `${N} messages across the queue members`);
    // Anything delivered twice would have arrived by now: the members' flushes
    // return after whatever the server already queued for them.
    await within(Promise.all(members.map((m) => m.nc.flush())), "member flushes");

    assert.equal(plain.payloads.length, N, "the plain subscriber must get every message");
    const seen = members.flatMap((m) => m.got).sort((a, b) => a - b);
    assert.deepEqual(seen, Array.from({ length: N }, (_, i) => i), "each message exactly once in the group");
    for (const [i, m] of members.entries()) {
      assert.ok(m.got.length > 0, `queue member ${i} got no message out of ${N}`);
    }
  });
});

test("queue groups: members of one group on one connection, and two groups", opts, async (t) => {
  await withServer(t, async (srv) => {
    const N = 100;
    const nc = await srv.connect();
    const counts = { a1: 0, a2: 0, b1: 0 };
    const done = latch();
    let total = 0;
    const cb = (name) => () => {
      counts[name]++;
      if (++total === 2 * N) done.resolve();
    };
    nc.subscribe("grp", { queue: "A", callback: cb("a1") });
    nc.subscribe("grp", { queue: "A", callback: cb("a2") });
    nc.subscribe("grp", { queue: "B", callback: cb("b1") });
    await within(nc.flush(), "SUB registration");
    const pub = await srv.connect();
    for (let i = 0; i < N; i++) pub.publish("grp", String(i));
    await within(done.promise, "deliveries to both groups");
    await within(pub.flush(), "publisher flush");
    await within(nc.flush(), "subscriber flush");
    assert.equal(counts.a1 + counts.a2, N, "group A gets each message once");
    assert.equal(counts.b1, N, "group B gets each message once");
  });
});

test("auto-unsubscribe: the server stops delivering after max messages", opts, async (t) => {
  await withServer(t, async (srv) => {
    const subNc = await srv.connect();
    const limited = collect(subNc, "auto", { max: 5 });
    const marker = collect(subNc, "auto.end");
    await within(subNc.flush(), "SUB registration");
    const pub = await srv.connect();
    for (let i = 0; i < 10; i++) pub.publish("auto", String(i));
    pub.publish("auto.end", END);
    await within(marker.ended(), "END marker");
    assert.deepEqual(limited.payloads, ["0", "1", "2", "3", "4"]);
    await within(limited.sub.closed, "the limited subscription to close");
    assert.ok(limited.sub.isClosed());
    // The client drops extras on its own, so count what the server actually
    // sent: 5 limited deliveries plus the marker.
    assert.equal(subNc.stats().inMsgs, 6, "the server must honour UNSUB <sid> <max>");

    // unsubscribe(max) after some messages were already delivered: the
    // server counts what it delivered, so only max - delivered more follow.
    const later = collect(subNc, "auto2");
    const mark2 = collect(subNc, "auto2.end");
    await within(subNc.flush(), "SUB registration");
    pub.publish("auto2", "a");
    pub.publish("auto2", "b");
    pub.publish("auto2.end", END);
    await within(mark2.ended(1), "first auto2 marker");
    assert.deepEqual(later.payloads, ["a", "b"]);
    later.sub.unsubscribe(3);
    await within(subNc.flush(), "UNSUB registration");
    const before = subNc.stats().inMsgs;
    for (let i = 0; i < 5; i++) pub.publish("auto2", `x${i}`);
    pub.publish("auto2.end", END);
    await within(mark2.ended(2), "second auto2 marker");
    assert.deepEqual(later.payloads, ["a", "b", "x0"]);
    assert.ok(later.sub.isClosed());
    assert.equal(subNc.stats().inMsgs - before, 2, "the server must send one more auto2 message, then the marker");
  });
});

test("drain: a draining publisher flushes what it published before closing", opts, async (t) => {
  await withServer(t, async (srv) => {
    const N = 2000;
    const subNc = await srv.connect();
    const c = collect(subNc, "drain.pub");
    await within(subNc.flush(), "SUB registration");
    const pub = await srv.connect();
    for (let i = 0; i < N; i++) pub.publish("drain.pub", String(i));
    pub.publish("drain.pub", END);
    await within(pub.drain(), "the publisher's drain");
    assert.ok(pub.isClosed());
    await within(c.ended(), "END after the publisher drained");
    assert.deepEqual(c.payloads, Array.from({ length: N }, (_, i) => String(i)));
  });
});

test("drain: subscription and connection drain stop delivery and close", opts, async (t) => {
  await withServer(t, async (srv) => {
    const subNc = await srv.connect();
    const pub = await srv.connect();
    const drained = collect(subNc, "drain.sub");
    const marker = collect(subNc, "drain.end");
    await within(subNc.flush(), "SUB registration");
    pub.publish("drain.sub", "before");
    pub.publish("drain.end", END);
    await within(marker.ended(1), "first marker");
    await within(drained.sub.drain(), "the subscription's drain");
    assert.ok(drained.sub.isClosed());
    await within(drained.sub.closed, "the drained subscription's closed promise");
    pub.publish("drain.sub", "after");
    pub.publish("drain.end", END);
    await within(marker.ended(2), "second marker");
    assert.deepEqual(drained.payloads, ["before"]);
    // before, END, END: nothing for the drained sid after its drain.
    assert.equal(subNc.stats().inMsgs, 3, "the server must not deliver to a drained sid");

    // Connection drain while messages are flowing: it resolves, closes the
    // connection, and what was delivered is an in-order prefix.
    const flowing = [];
    const first = latch();
    subNc.subscribe("drain.flow", {
      callback: (err, m) => {
        flowing.push(Number(m.string()));
        first.resolve();
      },
    });
    await within(subNc.flush(), "SUB registration");
    for (let i = 0; i < 5000; i++) pub.publish("drain.flow", String(i));
    await within(first.promise, "the first flowing message");
    await within(subNc.drain(), "the connection's drain");
    assert.ok(subNc.isClosed());
    await within(subNc.closed(), "closed() after drain");
    assert.deepEqual(flowing, Array.from({ length: flowing.length }, (_, i) => i));
    // The server must still serve the other client.
    await within(pub.flush(), "flush on the other client");
  });
});

test("many messages: 100k small messages arrive complete and in order", opts, async (t) => {
  await withServer(t, async (srv) => {
    const N = 100000;
    const subNc = await srv.connect();
    let next = 0;
    let outOfOrder = -1;
    const done = latch();
    subNc.subscribe("many", {
      callback: (err, m) => {
        const s = m.string();
        if (s === END) {
          done.resolve();
          return;
        }
        if (outOfOrder < 0 && Number(s) !== next) outOfOrder = next;
        next++;
      },
    });
    await within(subNc.flush(), "SUB registration");
    const pub = await srv.connect();
    for (let i = 0; i < N; i++) {
      pub.publish("many", String(i));
      // Yield to the event loop now and then so the client's outbound buffer
      // is written out instead of growing with the whole run.
      if (i % 10000 === 9999) await within(pub.flush(), "an intermediate flush");
    }
    pub.publish("many", END);
    await within(done.promise, `${N} messages and END`);
    assert.equal(outOfOrder, -1, `first message out of order: expected ${outOfOrder}`);
    assert.equal(next, N);
    assert.equal(subNc.stats().inMsgs, N + 1);
  });
});

test("large payloads: messages up to half of max_payload round trip intact", opts, async (t) => {
  await withServer(t, async (srv) => {
    const nc = await srv.connect();
    const sizes = [0, 1, 4095, 4096, 65537, Math.floor(nc.info.max_payload / 2)];
    const got = [];
    const done = latch();
    nc.subscribe("big", {
      callback: (err, m) => {
        got.push(m.data);
        if (got.length === sizes.length) done.resolve();
      },
    });
    await within(nc.flush(), "SUB registration");
    const sent = sizes.map((n) => {
      const b = new Uint8Array(n);
      for (let i = 0; i < n; i++) b[i] = (i * 31 + n) & 0xff;
      nc.publish("big", b);
      return b;
    });
    await within(done.promise, "all large messages");
    for (const [i, b] of sent.entries()) {
      assert.equal(got[i].length, b.length, `size of message ${i}`);
      assert.ok(Buffer.from(got[i]).equals(Buffer.from(b)), `content of the ${b.length}-byte message`);
    }
  });
});
