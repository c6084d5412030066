// MQTT 3.1.1 with MQTT.js (the `mqtt` npm package), next to the official NATS
// client: QoS 0 and 1 round trips, the topic <-> subject mapping seen from
// NATS, retained messages, a persistent session that collects a message while
// its client is away, the will of a client whose connection dies, QoS 2
// (refused by closing the connection and granted as QoS 1 in a SUBSCRIBE by the
// reference 2.9.10; natsd does it as nats-server 2.10+: exactly once, with
// PUBREC, PUBREL and PUBCOMP), and MQTT over WebSocket (MQTT.js connecting to
// ws://127.0.0.1:<port>/mqtt of the websocket port).
//
// Every expectation was checked against the reference nats-server 2.9.10
// (ctest integ.nodejs.mqtt.reference), which serves MQTT only with a
// server_name, JetStream and an mqtt block: each test writes such a config,
// with a store directory and MQTT port of its own.

import { test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:net";
import mqtt from "mqtt";
import { within, latch, tempDir, withServer, isReference } from "../../lib/js_harness.js";

const opts = { timeout: 60000 };

// A TCP port on 127.0.0.1 that was free a moment ago.
async function freePort() {
  const s = createServer();
  s.listen(0, "127.0.0.1");
  await once(s, "listening");
  const { port } = s.address();
  s.close();
  await once(s, "close");
  return port;
}

// Runs body(srv, mq) against a fresh server with MQTT; mq(options) opens an
// MQTT.js client (no automatic reconnect) and resolves with it and its
// CONNACK once connected. Clients left open are ended afterwards. With
// { ws: true } the server also has a websocket port and the clients connect
// to ws://127.0.0.1:<port>/mqtt (MQTT over WebSocket) instead.
async function withMqtt(t, body, { ws = false } = {}) {
  const dir = tempDir(t);
  const port = await freePort();
  const wsPort = ws ? await freePort() : 0;
  const conf = dir.file(
    "server.conf",
    `server_name: mqtt_js\njetstream { store_dir: "${dir.path}/store" }\n` +
      `mqtt { host: 127.0.0.1, port: ${port} }\n` +
      (ws ? `websocket { host: 127.0.0.1, port: ${wsPort}, no_tls: true }\n` : ""),
  );
  const url = ws ? `ws://127.0.0.1:${wsPort}/mqtt` : `mqtt://127.0.0.1:${port}`;
  const clients = [];
  const mq = async (o = {}) => {
    const c = mqtt.connect(url, {
      protocolVersion: 4,
      reconnectPeriod: 0,
      connectTimeout: 10000,
      ...o,
    });
    clients.push(c);
    const [connack] = await within(once(c, "connect"), "an MQTT CONNACK");
    return { c, connack };
  };
  await withServer(
    t,
    async (srv) => {
      try {
        await body(srv, mq);
      } finally {
        for (const c of clients) {
          if (c.connected) await within(c.endAsync(), "an MQTT client to end").catch(() => {});
          else c.end(true);
        }
      }
    },
    ["-c", conf],
  );
}

// Resolves with the next `n` messages of an MQTT client as
// {topic, payload, qos, retain}.
function nextMessages(c, n) {
  const got = [];
  const l = latch();
  const on = (topic, payload, packet) => {
    got.push({ topic, payload: payload.toString(), qos: packet.qos, retain: packet.retain });
    if (got.length === n) {
      c.off("message", on);
      l.resolve(got);
    }
  };
  c.on("message", on);
  return l.promise;
}

test("mqtt: QoS 0 and QoS 1 round trips, the delivered QoS is the lower one", opts, async (t) => {
  await withMqtt(t, async (srv, mq) => {
    const { c: sub } = await mq({ clientId: "js-sub" });
    const { c: pub } = await mq({ clientId: "js-pub" });
    const granted = await within(sub.subscribeAsync({ "r/0": { qos: 0 }, "r/1": { qos: 1 } }), "SUBACK");
    assert.deepEqual(
      granted.map((g) => [g.topic, g.qos]),
      [
        ["r/0", 0],
        ["r/1", 1],
      ],
    );
    const msgs = nextMessages(sub, 4);
    await within(pub.publishAsync("r/0", "a", { qos: 0 }), "QoS 0 publish");
    await within(pub.publishAsync("r/0", "b", { qos: 1 }), "QoS 1 publish (PUBACK)");
    await within(pub.publishAsync("r/1", "c", { qos: 1 }), "QoS 1 publish (PUBACK)");
    await within(pub.publishAsync("r/1", "d", { qos: 0 }), "QoS 0 publish");
    const got = await within(msgs, "four messages");
    // One topic's messages keep their order; across the two subscriptions of
    // a connection no order is promised (QoS 1 goes through JetStream).
    const by = (topic) => got.filter((m) => m.topic === topic);
    assert.deepEqual(by("r/0"), [
      { topic: "r/0", payload: "a", qos: 0, retain: false },
      { topic: "r/0", payload: "b", qos: 0, retain: false },
    ]);
    assert.deepEqual(
      by("r/1").sort((x, y) => x.payload.localeCompare(y.payload)),
      [
        { topic: "r/1", payload: "c", qos: 1, retain: false },
        { topic: "r/1", payload: "d", qos: 0, retain: false },
      ],
    );
  });
});

test("mqtt: topics and subjects between MQTT.js and the NATS client", opts, async (t) => {
  await withMqtt(t, async (srv, mq) => {
    const nc = await srv.connect();
    const natsGot = [];
    const three = latch();
    nc.subscribe("m.>", {
      callback: (err, m) => {
        natsGot.push([m.subject, m.string()]);
        if (natsGot.length === 3) three.resolve();
      },
    });
    await within(nc.flush(), "flush");
    const { c } = await mq({ clientId: "js-map" });
    await within(c.subscribeAsync("m/+", { qos: 0 }), "SUBACK");
    // m/+ matches the topic "m/" (the level "" under m) and what NATS sends to m.n.
    const onMqtt = nextMessages(c, 2);
    await within(c.publishAsync("m/a/b", "1", { qos: 1 }), "publish m/a/b");
    await within(c.publishAsync("m//x", "2", { qos: 1 }), "publish m//x");
    await within(c.publishAsync("m/", "3", { qos: 1 }), "publish m/");
    await within(three.promise, "three messages on NATS");
    assert.deepEqual(natsGot, [
      ["m.a.b", "1"],
      ["m./.x", "2"],
      ["m./", "3"],
    ]);
    nc.publish("m.n", "from nats");
    await within(nc.flush(), "flush");
    const got = await within(onMqtt, "the two messages on MQTT");
    assert.deepEqual(
      got.sort((x, y) => x.topic.localeCompare(y.topic)),
      [
        { topic: "m/", payload: "3", qos: 0, retain: false },
        { topic: "m/n", payload: "from nats", qos: 0, retain: false },
      ],
    );
  });
});

test("mqtt: retained message for a later subscriber, deleted by an empty one", opts, async (t) => {
  await withMqtt(t, async (srv, mq) => {
    const { c: pub } = await mq({ clientId: "js-rpub" });
    await within(pub.publishAsync("ret/1", "kept", { qos: 1, retain: true }), "retained publish");
    const { c: s1 } = await mq({ clientId: "js-rs1" });
    const first = nextMessages(s1, 1);
    await within(s1.subscribeAsync("ret/1", { qos: 1 }), "SUBACK");
    assert.deepEqual(await within(first, "the retained message"), [
      { topic: "ret/1", payload: "kept", qos: 1, retain: true },
    ]);

    await within(pub.publishAsync("ret/1", "", { qos: 1, retain: true }), "empty retained publish");
    const { c: s2 } = await mq({ clientId: "js-rs2" });
    const next = nextMessages(s2, 1);
    await within(s2.subscribeAsync("ret/1", { qos: 1 }), "SUBACK");
    // Nothing retained any more: the first message is the live one after it.
    await within(pub.publishAsync("ret/1", "live", { qos: 1 }), "live publish");
    assert.deepEqual(await within(next, "the live message"), [
      { topic: "ret/1", payload: "live", qos: 1, retain: false },
    ]);
  });
});

test("mqtt: persistent session keeps a QoS 1 message for its client", opts, async (t) => {
  await withMqtt(t, async (srv, mq) => {
    const o = { clientId: "js-persist", clean: false };
    const { c: a, connack: ca } = await mq(o);
    assert.equal(ca.sessionPresent, false);
    await within(a.subscribeAsync("p/1", { qos: 1 }), "SUBACK");
    await within(a.endAsync(), "DISCONNECT");

    const { c: pub } = await mq({ clientId: "js-ppub" });
    await within(pub.publishAsync("p/1", "while away", { qos: 1 }), "publish (PUBACK)");

    // MQTT.js emits the stored message right after the CONNACK, so the
    // listener is in place before the connection.
    const c = mqtt.connect(`mqtt://127.0.0.1:${a.options.port}`, {
      protocolVersion: 4,
      reconnectPeriod: 0,
      ...o,
    });
    try {
      const msg = nextMessages(c, 1);
      const [connack] = await within(once(c, "connect"), "CONNACK");
      assert.equal(connack.sessionPresent, true);
      assert.deepEqual(await within(msg, "the stored message"), [
        { topic: "p/1", payload: "while away", qos: 1, retain: false },
      ]);
    } finally {
      await within(c.endAsync(), "DISCONNECT").catch(() => {});
    }
  });
});

test("mqtt: will of a client whose connection dies, not after a DISCONNECT", opts, async (t) => {
  await withMqtt(t, async (srv, mq) => {
    const { c: sub } = await mq({ clientId: "js-wsub" });
    await within(sub.subscribeAsync("will/#", { qos: 0 }), "SUBACK");
    const { c: clean } = await mq({
      clientId: "js-wclean",
      will: { topic: "will/clean", payload: "bad", qos: 0, retain: false },
    });
    await within(clean.endAsync(), "DISCONNECT");
    const { c: dying } = await mq({
      clientId: "js-wdie",
      will: { topic: "will/die", payload: "gone", qos: 0, retain: false },
    });
    const msg = nextMessages(sub, 1);
    // The socket closes without a DISCONNECT, as when the client's process dies.
    dying.stream.destroy();
    assert.deepEqual(await within(msg, "the will"), [
      { topic: "will/die", payload: "gone", qos: 0, retain: false },
    ]);
  });
});

test("mqtt: QoS 2 is granted as 1 and a QoS 2 publish closes the connection", opts, async (t) => {
  if (!isReference()) {
    t.skip("natsd does QoS 2 as nats-server 2.10+ (the next test)");
    return;
  }
  await withMqtt(t, async (srv, mq) => {
    const { c } = await mq({ clientId: "js-q2" });
    const granted = await within(c.subscribeAsync("q2/x", { qos: 2 }), "SUBACK");
    assert.deepEqual(
      granted.map((g) => g.qos),
      [1],
    );
    const closed = once(c, "close");
    c.publish("q2/x", "two", { qos: 2 }, () => {});
    await within(closed, "the server to close the connection");
  });
});

// nats-server 2.10+ (natsd; the reference 2.9.10 has no QoS 2): a QoS 2
// subscription is granted QoS 2, a QoS 2 publish completes (MQTT.js resolves it
// on PUBCOMP) and reaches it at QoS 2, and a QoS 1 publish at QoS 1.
test("mqtt: QoS 2 round trip", opts, async (t) => {
  if (isReference()) {
    t.skip("nats-server 2.9.10 has no QoS 2");
    return;
  }
  await withMqtt(t, async (srv, mq) => {
    const { c: sub } = await mq({ clientId: "js-q2sub" });
    const { c: pub } = await mq({ clientId: "js-q2pub" });
    const granted = await within(sub.subscribeAsync("q2/x", { qos: 2 }), "SUBACK");
    assert.deepEqual(
      granted.map((g) => g.qos),
      [2],
    );
    const msgs = nextMessages(sub, 2);
    await within(pub.publishAsync("q2/x", "two", { qos: 2 }), "PUBCOMP");
    await within(pub.publishAsync("q2/x", "one", { qos: 1 }), "PUBACK");
    // MQTT.js hands a QoS 2 message over once the server's PUBREL came, so the
    // QoS 1 one may be handed over first.
    const got = await within(msgs, "the messages");
    got.sort((a, b) => b.qos - a.qos);
    assert.deepEqual(got, [
      { topic: "q2/x", payload: "two", qos: 2, retain: false },
      { topic: "q2/x", payload: "one", qos: 1, retain: false },
    ]);
  });
});

test("mqtt over websocket: MQTT.js at ws://.../mqtt, QoS 0 and 1, to and from NATS", opts, async (t) => {
  await withMqtt(
    t,
    async (srv, mq) => {
      const nc = await srv.connect();
      const natsGot = [];
      const one = latch();
      nc.subscribe("ws.>", {
        callback: (err, m) => {
          natsGot.push([m.subject, m.string()]);
          one.resolve();
        },
      });
      await within(nc.flush(), "flush");
      const { c: sub } = await mq({ clientId: "js-ws-sub" });
      const { c: pub } = await mq({ clientId: "js-ws-pub" });
      const granted = await within(sub.subscribeAsync({ "w/0": { qos: 0 }, "w/1": { qos: 1 } }), "SUBACK");
      assert.deepEqual(
        granted.map((g) => [g.topic, g.qos]),
        [
          ["w/0", 0],
          ["w/1", 1],
        ],
      );
      const msgs = nextMessages(sub, 3);
      await within(pub.publishAsync("w/0", "a", { qos: 0 }), "QoS 0 publish");
      // A payload larger than a typical frame: MQTT.js may split it, the server joins it.
      await within(pub.publishAsync("w/1", "b".repeat(70000), { qos: 1 }), "QoS 1 publish (PUBACK)");
      nc.publish("w.0", "from nats");
      await within(nc.flush(), "flush");
      const got = await within(msgs, "three messages");
      const by = (topic) => got.filter((m) => m.topic === topic);
      assert.deepEqual(by("w/0").map((m) => m.payload).sort(), ["a", "from nats"]);
      assert.deepEqual(by("w/1"), [{ topic: "w/1", payload: "b".repeat(70000), qos: 1, retain: false }]);
      await within(pub.publishAsync("ws/x", "to nats", { qos: 1 }), "publish ws/x");
      await within(one.promise, "the message on NATS");
      assert.deepEqual(natsGot, [["ws.x", "to nats"]]);
    },
    { ws: true },
  );
});
