// JetStream streams with the official client (@nats-io/jetstream): the
// manager API (add/info/update/list/names/delete, purge, getMessage,
// deleteMessage, direct get) and the publish path (PubAck, msgID dedup,
// expect headers, the KV pattern).
//
// Every expectation was checked against the reference nats-server 2.9.10
// started with -js (ctest integ.nodejs.jetstream.reference). Each test starts
// its own server with a store directory of its own.

import { test } from "node:test";
import assert from "node:assert/strict";
import { headers } from "@nats-io/transport-node";
import {
  jetstream,
  jetstreamManager,
  JetStreamApiError,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { withServer, within, tempDir } from "../../lib/js_harness.js";

const opts = { timeout: 60000 };

// Runs body(nc, jsm, js) against a fresh JetStream server.
async function withJs(t, body) {
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

// Collects a lister into an array.
async function all(lister) {
  const out = [];
  for await (const x of lister) {
    out.push(x);
  }
  return out;
}

// Asserts that `promise` rejects with a JetStream API error with this
// err_code and description (exactly).
async function rejectsApi(promise, errCode, description, what) {
  await assert.rejects(within(promise, what), (err) => {
    assert.ok(err instanceof JetStreamApiError, `${what}: not an API error: ${err}`);
    assert.equal(err.code, errCode, `${what}: err_code`);
    assert.equal(err.message, description, `${what}: description`);
    return true;
  });
}

test("streams: add with defaults, info, update, list, names, delete", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    const si = await within(jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] }), "add");
    const c = si.config;
    assert.equal(c.name, "ORDERS");
    assert.deepEqual(c.subjects, ["orders.>"]);
    assert.equal(c.retention, RetentionPolicy.Limits);
    assert.equal(c.storage, StorageType.File);
    assert.equal(c.discard, DiscardPolicy.Old);
    assert.equal(c.max_msgs, -1);
    assert.equal(c.max_bytes, -1);
    assert.equal(c.max_msgs_per_subject, -1);
    assert.equal(c.max_msg_size, -1);
    assert.equal(c.max_consumers, -1);
    assert.equal(c.max_age, 0);
    assert.equal(c.num_replicas, 1);
    assert.equal(c.duplicate_window, 120000000000);
    assert.equal(c.allow_direct, false);
    assert.equal(si.state.messages, 0);
    assert.equal(si.state.first_seq, 0);
    assert.equal(si.state.last_seq, 0);
    assert.ok(!Number.isNaN(Date.parse(si.created)), `created: ${si.created}`);

    // Without subjects the name is the subject.
    const mem = await within(jsm.streams.add({ name: "MEM", storage: StorageType.Memory }), "add MEM");
    assert.deepEqual(mem.config.subjects, ["MEM"]);
    assert.equal(mem.config.storage, StorageType.Memory);

    // An identical add is idempotent; a different one is refused.
    const again = await within(jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"] }), "re-add");
    assert.equal(again.created, si.created);
    await rejectsApi(
      jsm.streams.add({ name: "ORDERS", subjects: ["orders.>"], max_msgs: 10 }),
      10058,
      "stream name already in use with a different configuration",
      "conflicting add",
    );
    await rejectsApi(
      jsm.streams.add({ name: "OTHER", subjects: ["orders.new"] }),
      10065,
      "subjects overlap with an existing stream",
      "overlapping add",
    );

    const up = await within(
      jsm.streams.update("ORDERS", { subjects: ["orders.>", "returns"], max_msgs: 100 }),
      "update",
    );
    assert.deepEqual(up.config.subjects, ["orders.>", "returns"]);
    assert.equal(up.config.max_msgs, 100);
    const info = await within(jsm.streams.info("ORDERS"), "info");
    assert.equal(info.config.max_msgs, 100);

    assert.deepEqual(await within(all(jsm.streams.names()), "names"), ["MEM", "ORDERS"]);
    assert.deepEqual(await within(all(jsm.streams.names("returns")), "names by subject"), ["ORDERS"]);
    const list = await within(all(jsm.streams.list()), "list");
    assert.deepEqual(
      list.map((s) => s.config.name),
      ["MEM", "ORDERS"],
    );
    assert.equal(await within(jsm.streams.find("orders.x.y"), "find"), "ORDERS");

    assert.equal(await within(jsm.streams.delete("MEM"), "delete"), true);
    await rejectsApi(jsm.streams.info("MEM"), 10059, "stream not found", "info after delete");
    await rejectsApi(jsm.streams.delete("MEM"), 10059, "stream not found", "delete twice");
    assert.deepEqual(await within(all(jsm.streams.names()), "names after delete"), ["ORDERS"]);

    const ai = await within(jsm.getAccountInfo(), "account info");
    assert.equal(ai.streams, 1);
    assert.equal(ai.limits.max_streams, -1);
  });
});

test("publish: PubAck, msgID dedup and every expect header", opts, async (t) => {
  await withJs(t, async (nc, jsm, js) => {
    await within(jsm.streams.add({ name: "S", subjects: ["s.>"] }), "add");
    let pa = await within(js.publish("s.a", "one"), "publish");
    assert.deepEqual({ ...pa }, { stream: "S", seq: 1, duplicate: false });

    pa = await within(js.publish("s.a", "two", { msgID: "m1" }), "publish m1");
    assert.equal(pa.seq, 2);
    assert.equal(pa.duplicate, false);
    pa = await within(js.publish("s.b", "again", { msgID: "m1" }), "duplicate m1");
    assert.equal(pa.seq, 2);
    assert.equal(pa.duplicate, true);

    await rejectsApi(
      js.publish("s.b", "x", { expect: { streamName: "T" } }),
      10060,
      "expected stream does not match",
      "expected stream",
    );
    await rejectsApi(
      js.publish("s.b", "x", { expect: { lastSequence: 7 } }),
      10071,
      "wrong last sequence: 2",
      "expected last sequence",
    );
    await rejectsApi(
      js.publish("s.b", "x", { expect: { lastSubjectSequence: 7 } }),
      10071,
      "wrong last sequence: 0",
      "expected last subject sequence",
    );
    await rejectsApi(
      js.publish("s.b", "x", { expect: { lastMsgID: "zz" } }),
      10070,
      "wrong last msg ID: m1",
      "expected last msg id",
    );
    pa = await within(
      js.publish("s.b", "ok", {
        expect: { streamName: "S", lastSequence: 2, lastMsgID: "m1", lastSubjectSequence: 0 },
      }),
      "all expectations met",
    );
    assert.equal(pa.seq, 3);

    // Rollup headers need allow_rollup_hdrs.
    const h = headers();
    h.set("Nats-Rollup", "sub");
    await rejectsApi(js.publish("s.a", "r", { headers: h }), 10111, "rollup not permitted", "rollup");

    // A core publish without reply is stored too.
    nc.publish("s.core", "quiet");
    await within(nc.flush(), "flush");
    const si = await within(jsm.streams.info("S"), "info");
    assert.equal(si.state.messages, 4);
    assert.equal(si.state.last_seq, 4);
    const sm = await within(jsm.streams.getMessage("S", { seq: 4 }), "get 4");
    assert.equal(sm.subject, "s.core");
    assert.equal(sm.string(), "quiet");
  });
});

test("publish: limits with discard new and max_msg_size", opts, async (t) => {
  await withJs(t, async (nc, jsm, js) => {
    await within(
      jsm.streams.add({ name: "N", subjects: ["n.*"], max_msgs: 2, discard: DiscardPolicy.New }),
      "add N",
    );
    await within(js.publish("n.a", "1"), "1");
    await within(js.publish("n.a", "2"), "2");
    await rejectsApi(js.publish("n.a", "3"), 10077, "maximum messages exceeded", "over max_msgs");
    await within(jsm.streams.add({ name: "M", subjects: ["m"], max_msg_size: 10 }), "add M");
    await rejectsApi(
      js.publish("m", "12345678901"),
      10054,
      "message size exceeds maximum allowed",
      "over max_msg_size",
    );
    assert.equal((await within(js.publish("m", "1234567890"), "at max_msg_size")).seq, 1);
  });
});

test("messages: getMessage, deleteMessage, purge", opts, async (t) => {
  await withJs(t, async (nc, jsm, js) => {
    await within(jsm.streams.add({ name: "S", subjects: ["s.*"] }), "add");
    const subjects = ["s.a", "s.b", "s.c"];
    for (let i = 0; i < 9; i++) {
      await within(js.publish(subjects[i % 3], `m${i + 1}`), `publish ${i + 1}`);
    }
    let sm = await within(jsm.streams.getMessage("S", { seq: 2 }), "get seq 2");
    assert.equal(sm.seq, 2);
    assert.equal(sm.subject, "s.b");
    assert.equal(sm.string(), "m2");
    assert.ok(sm.time instanceof Date && !Number.isNaN(sm.time.getTime()));
    sm = await within(jsm.streams.getMessage("S", { last_by_subj: "s.a" }), "last by subject");
    assert.equal(sm.seq, 7);
    assert.equal(sm.string(), "m7");
    assert.equal(await within(jsm.streams.getMessage("S", { seq: 100 }), "missing"), null);

    assert.equal(await within(jsm.streams.deleteMessage("S", 2), "delete 2"), true);
    assert.equal(await within(jsm.streams.deleteMessage("S", 3, false), "delete 3 no_erase"), true);
    assert.equal(await within(jsm.streams.getMessage("S", { seq: 2 }), "get deleted"), null);
    let si = await within(jsm.streams.info("S", { deleted_details: true }), "info");
    assert.equal(si.state.messages, 7);
    assert.deepEqual(si.state.deleted, [2, 3]);

    let pr = await within(jsm.streams.purge("S", { filter: "s.c" }), "purge filter");
    assert.equal(pr.success, true);
    assert.equal(pr.purged, 2); // 6 and 9
    pr = await within(jsm.streams.purge("S", { filter: "s.a", keep: 1 }), "purge keep");
    assert.equal(pr.purged, 2); // 1 and 4
    pr = await within(jsm.streams.purge("S", { seq: 7 }), "purge below seq 7");
    assert.equal(pr.purged, 1); // 5
    si = await within(jsm.streams.info("S", { subjects_filter: ">" }), "info after purges");
    assert.equal(si.state.messages, 2);
    assert.equal(si.state.first_seq, 7);
    assert.deepEqual(si.state.subjects, { "s.a": 1, "s.b": 1 });
    pr = await within(jsm.streams.purge("S"), "purge all");
    assert.equal(pr.purged, 2);
    si = await within(jsm.streams.info("S"), "info after purge");
    assert.equal(si.state.messages, 0);
    assert.equal(si.state.first_seq, 10);
    assert.equal(si.state.last_seq, 9);
    assert.equal((await within(js.publish("s.a", "next"), "publish after purge")).seq, 10);
  });
});

test("direct get (allow_direct)", opts, async (t) => {
  await withJs(t, async (nc, jsm, js) => {
    await within(jsm.streams.add({ name: "D", subjects: ["d.>"], allow_direct: true }), "add");
    await within(js.publish("d.a", "one"), "1");
    const h = headers();
    h.set("X-Mine", "yes");
    await within(js.publish("d.a", "two", { headers: h }), "2");
    await within(js.publish("d.b", "three"), "3");

    let m = await within(jsm.direct.getMessage("D", { seq: 1 }), "direct seq 1");
    assert.equal(m.seq, 1);
    assert.equal(m.subject, "d.a");
    assert.equal(m.stream, "D");
    assert.equal(m.string(), "one");
    assert.ok(m.time instanceof Date && !Number.isNaN(m.time.getTime()));
    m = await within(jsm.direct.getMessage("D", { last_by_subj: "d.a" }), "direct last d.a");
    assert.equal(m.seq, 2);
    assert.equal(m.header.get("X-Mine"), "yes");
    assert.equal(m.header.get("Nats-Stream"), "D");
    assert.equal(m.header.get("Nats-Sequence"), "2");
    m = await within(jsm.direct.getMessage("D", { next_by_subj: "d.b", seq: 1 }), "direct next");
    assert.equal(m.seq, 3);
    assert.equal(m.string(), "three");
    assert.equal(await within(jsm.direct.getMessage("D", { seq: 99 }), "direct missing"), null);
  });
});

// The KV pattern (ADR-8) done by hand: one message per key, create only if
// absent (expected last subject sequence 0), compare-and-set on the revision.
test("KV-like stream: max_msgs_per_subject and Nats-Expected-Last-Subject-Sequence", opts, async (t) => {
  await withJs(t, async (nc, jsm, js) => {
    await within(
      jsm.streams.add({
        name: "KV_cfg",
        subjects: ["$KV.cfg.>"],
        max_msgs_per_subject: 1,
        allow_rollup_hdrs: true,
        deny_delete: true,
        allow_direct: true,
        discard: DiscardPolicy.New,
      }),
      "add KV stream",
    );
    const create = (k, v) => js.publish(`$KV.cfg.${k}`, v, { expect: { lastSubjectSequence: 0 } });
    const update = (k, v, rev) =>
      js.publish(`$KV.cfg.${k}`, v, { expect: { lastSubjectSequence: rev } });

    assert.equal((await within(create("a", "1"), "create a")).seq, 1);
    await rejectsApi(create("a", "again"), 10071, "wrong last sequence: 1", "create a twice");
    assert.equal((await within(create("b", "1"), "create b")).seq, 2);
    assert.equal((await within(update("a", "2", 1), "update a")).seq, 3);
    await rejectsApi(update("a", "stale", 1), 10071, "wrong last sequence: 3", "stale update");

    const si = await within(jsm.streams.info("KV_cfg", { subjects_filter: ">" }), "info");
    assert.equal(si.state.messages, 2);
    assert.deepEqual(si.state.subjects, { "$KV.cfg.a": 1, "$KV.cfg.b": 1 });
    const m = await within(jsm.direct.getMessage("KV_cfg", { last_by_subj: "$KV.cfg.a" }), "get a");
    assert.equal(m.string(), "2");
    assert.equal(m.seq, 3);
  });
});
