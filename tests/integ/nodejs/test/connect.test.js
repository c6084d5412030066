// Connection-level behaviour: the INFO the server sends, flush round trips,
// echo suppression and what a connected client sees when the server is
// stopped with SIGINT.

import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { withServer, startServer, within, latch, HANG_MS } from "../lib/js_harness.js";

const opts = { timeout: 60000 };

test("connect: INFO carries the server identity and header support", opts, async (t) => {
  await withServer(t, async (srv) => {
    const nc = await srv.connect({ name: "info-test" });
    const info = nc.info;
    assert.ok(info, "the client must have received INFO");
    assert.match(info.version, /^\d+\.\d+\.\d+/, "version must be a semantic version");
    assert.equal(info.headers, true, "the server must advertise header support");
    assert.equal(typeof info.server_id, "string");
    assert.ok(info.server_id.length > 0, "server_id must not be empty");
    assert.equal(typeof info.proto, "number");
    assert.ok(info.proto >= 1, "proto must be at least 1 for headers and no-responders");
    assert.equal(typeof info.max_payload, "number");
    assert.ok(info.max_payload > 0, "max_payload must be positive");
    assert.equal(info.port, srv.port, "INFO port must be the listening port");
    assert.equal(typeof info.client_id, "number");
    assert.equal(nc.getServer(), srv.url);

    // A second client must get a different client id.
    const nc2 = await srv.connect();
    assert.notEqual(nc2.info.client_id, info.client_id, "client ids must be unique");
  });
});

test("flush: resolves after a PING/PONG round trip, also after many publishes", opts, async (t) => {
  await withServer(t, async (srv) => {
    const nc = await srv.connect();
    await within(nc.flush(), "an idle flush");
    for (let i = 0; i < 1000; i++) {
      nc.publish("flush.nobody", `m${i}`);
    }
    await within(nc.flush(), "a flush after 1000 publishes");
    const rtt = await within(nc.rtt(), "rtt");
    assert.equal(typeof rtt, "number");
    assert.ok(rtt >= 0);
    assert.equal(nc.stats().outMsgs, 1000);

    // A flush on a closed connection must reject rather than hang.
    await within(nc.close(), "close");
    await assert.rejects(nc.flush());
  });
});

test("flush ordering: a flush returns only after earlier deliveries", opts, async (t) => {
  await withServer(t, async (srv) => {
    // Same connection: messages a client publishes to itself are delivered
    // before the PONG answering a later PING.
    const nc = await srv.connect();
    const own = [];
    nc.subscribe("order.self", { callback: (err, m) => own.push(m.string()) });
    await within(nc.flush(), "SUB registration");
    for (let i = 0; i < 100; i++) nc.publish("order.self", String(i));
    await within(nc.flush(), "flush");
    assert.equal(own.length, 100, "own messages must precede the PONG");

    // Two connections: once the publisher's flush returned the server has
    // routed its messages, so the subscriber's next flush returns after them.
    const subNc = await srv.connect();
    const other = [];
    subNc.subscribe("order.other", { callback: (err, m) => other.push(m.string()) });
    await within(subNc.flush(), "SUB registration");
    for (let i = 0; i < 100; i++) nc.publish("order.other", String(i));
    await within(nc.flush(), "publisher flush");
    await within(subNc.flush(), "subscriber flush");
    assert.equal(other.length, 100, "routed messages must precede the subscriber's PONG");
  });
});

test("echo: a client sees its own messages unless it connected with noEcho", opts, async (t) => {
  await withServer(t, async (srv) => {
    // Control: with echo (the default) a client receives what it publishes.
    const echoing = await srv.connect();
    const got = latch();
    echoing.subscribe("echo.on", { callback: (err, m) => got.resolve(m.string()) });
    await within(echoing.flush(), "SUB registration");
    echoing.publish("echo.on", "mine");
    assert.equal(await within(got.promise, "the echoed message"), "mine");

    // With noEcho the publisher's own subscription must not get the message,
    // while another connection does.
    const quiet = await srv.connect({ noEcho: true });
    const other = await srv.connect();
    const quietGot = [];
    quiet.subscribe("echo.off", { callback: (err, m) => quietGot.push(m.string()) });
    const otherGot = latch();
    other.subscribe("echo.off", { callback: (err, m) => otherGot.resolve(m.string()) });
    await within(Promise.all([quiet.flush(), other.flush()]), "SUB registration");

    quiet.publish("echo.off", "from-quiet");
    assert.equal(await within(otherGot.promise, "the message at the other client"), "from-quiet");
    // A message from another publisher must still reach the noEcho client; once
    // it has, and a flush has completed, its own message would have arrived too.
    const quietSawOther = latch();
    quiet.subscribe("echo.off.2", { callback: () => quietSawOther.resolve() });
    await within(quiet.flush(), "SUB registration");
    other.publish("echo.off", "from-other");
    other.publish("echo.off.2", "marker");
    await within(quietSawOther.promise, "the marker at the noEcho client");
    await within(quiet.flush(), "flush");
    assert.deepEqual(quietGot, ["from-other"], "the noEcho client must not receive its own message");
  });
});

test("SIGINT: the server exits 0 and a connected client sees the disconnect", opts, async (t) => {
  const srv = await startServer();
  t.after(() => srv.kill());
  // A client that tries to reconnect a few times and then gives up, and one
  // that does not reconnect at all.
  const retrying = await within(
    connect({ servers: srv.url, reconnect: true, maxReconnectAttempts: 3, reconnectTimeWait: 50 }),
    "connect",
  );
  const plain = await within(connect({ servers: srv.url, reconnect: false }), "connect");
  const seen = [];
  const statusDone = (async () => {
    for await (const s of retrying.status()) {
      seen.push(s.type);
    }
  })();
  const sub = retrying.subscribe("sigint.>");
  const subDone = (async () => {
    for await (const _ of sub);
  })();
  await within(Promise.all([retrying.flush(), plain.flush()]), "flush before stopping");

  const st = await srv.stop();
  assert.deepEqual(st, { code: 0, signal: null }, `server did not exit cleanly on SIGINT:\n${srv.log}`);

  // Both clients must end up closed; the retrying one only after its attempts.
  await within(plain.closed(), "the non-reconnecting client to close");
  await within(retrying.closed(), "the reconnecting client to give up and close", HANG_MS * 2);
  await within(statusDone, "the status iterator to end");
  assert.ok(seen.includes("disconnect"), `expected a disconnect status, saw ${seen}`);
  assert.ok(seen.includes("reconnecting"), `expected reconnect attempts, saw ${seen}`);
  assert.ok(!seen.includes("reconnect"), `no reconnect can succeed, saw ${seen}`);
  // The subscription's iterator ends with the connection.
  await within(subDone, "the subscription iterator to end");
});
