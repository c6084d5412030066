// WebSocket clients: the official client's wsconnect (@nats-io/nats-core, re-exported by
// @nats-io/transport-node) against a websocket {} port, next to a plain TCP client.
// wsconnect needs the WebSocket global: Node 22 has it, Node 20 with --experimental-websocket
// (tests/CMakeLists.txt sets NODE_OPTIONS for it); without it the test is skipped.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { wsconnect, headers } from "@nats-io/transport-node";
import { withServer, tempDir, within } from "../lib/js_harness.js";

const opts = { timeout: 60000, skip: typeof WebSocket === "undefined" && "no WebSocket global in this node" };

async function freePort() {
  return await new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

test("websocket: wsconnect pub/sub, request/reply and headers, with a TCP client alongside", opts, async (t) => {
  const dir = tempDir(t);
  const port = await freePort();
  const conf = dir.file("ws.conf", `websocket { host: 127.0.0.1, port: ${port}, no_tls: true }\n`);
  await withServer(
    t,
    async (srv) => {
      const ws = await within(
        wsconnect({ servers: `ws://127.0.0.1:${port}`, reconnect: false }),
        "a WebSocket connection",
      );
      try {
        assert.equal(ws.info.port, srv.port, "the INFO names the client port");
        const tcp = await srv.connect();

        // WebSocket subscriber, TCP publisher, and the other way round.
        const wsSub = ws.subscribe("ws.>", { max: 2 });
        const tcpSub = tcp.subscribe("tcp.>", { max: 1 });
        await ws.flush();
        await tcp.flush();
        tcp.publish("ws.a", "from tcp");
        const h = headers();
        h.set("X-Test", "1");
        tcp.publish("ws.b", "with headers", { headers: h });
        ws.publish("tcp.c", "from ws");
        const got = [];
        for await (const m of wsSub) got.push([m.subject, m.string(), m.headers?.get("X-Test") ?? ""]);
        assert.deepEqual(got, [
          ["ws.a", "from tcp", ""],
          ["ws.b", "with headers", "1"],
        ]);
        for await (const m of tcpSub) assert.equal(m.string(), "from ws");

        // A service on the WebSocket client; a payload larger than one TCP segment both ways.
        ws.subscribe("svc", { callback: (_e, m) => m.respond(m.data) });
        await ws.flush();
        const big = new Uint8Array(200000).map((_, i) => i & 0xff);
        const r = await tcp.request("svc", big, { timeout: 5000 });
        assert.deepEqual(Buffer.from(r.data), Buffer.from(big));
        const r2 = await ws.request("svc", "small", { timeout: 5000 });
        assert.equal(r2.string(), "small");
      } finally {
        await ws.close();
      }
    },
    ["-c", conf],
  );
});
