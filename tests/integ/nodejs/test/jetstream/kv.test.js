// JetStream key-value buckets with the official client (@nats-io/kv): the
// bucket's stream, put/get/create/update with revisions, delete and purge,
// history, keys, watchers (last values, full history, updates only, live
// updates), a bucket with a TTL, bucket status and destroy. Per-key TTLs and
// limit markers (nats-server 2.11) run against natsd, and against the
// reference only when it announces 2.11 or later (2.9.10 does not).
//
// Every other expectation was checked against the reference nats-server
// 2.9.10 started with -js (ctest integ.nodejs.jetstream.reference). Each test
// starts its own server and uses bucket names of its own.

import { test } from "node:test";
import assert from "node:assert/strict";
import { DiscardPolicy, StorageType } from "@nats-io/jetstream";
import { Kvm, KvWatchInclude } from "@nats-io/kv";
import { within, isReference } from "../../lib/js_harness.js";
import { withJs, all, rejectsApi, eventually, take, versionAtLeast } from "../../lib/js_jetstream.js";

const opts = { timeout: 60000 };

// The fields of a KV entry the tests compare.
const entry = (e) => e && { key: e.key, value: e.string(), revision: e.revision, operation: e.operation };

// Stops a watcher and waits until the client has closed it (its consumer
// is stopped with it).
async function stopIter(iter, what) {
  iter.stop();
  await within(iter.iterClosed, what);
}

test("kv: create bucket, put/get, create and update with revisions, delete, purge", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    const kvm = new Kvm(nc);
    const kv = await within(kvm.create("cfg1", { history: 5 }), "create bucket");

    // The bucket is a stream with the KV conventions (ADR-8).
    const si = await within(jsm.streams.info("KV_cfg1"), "the bucket's stream");
    assert.deepEqual(si.config.subjects, ["$KV.cfg1.>"]);
    assert.equal(si.config.max_msgs_per_subject, 5);
    assert.equal(si.config.allow_rollup_hdrs, true);
    assert.equal(si.config.allow_direct, true);
    assert.equal(si.config.discard, DiscardPolicy.New);

    assert.equal(await within(kv.put("a", "1"), "put a"), 1);
    assert.equal(await within(kv.put("b", "1"), "put b"), 2);
    assert.equal(await within(kv.put("a", "2"), "put a again"), 3);
    const a = await within(kv.get("a"), "get a");
    assert.deepEqual(entry(a), { key: "a", value: "2", revision: 3, operation: "PUT" });
    assert.equal(a.bucket, "cfg1");
    assert.equal(a.length, 1);
    assert.ok(a.created instanceof Date && !Number.isNaN(a.created.getTime()));
    assert.deepEqual(entry(await within(kv.get("a", { revision: 1 }), "get a at 1")), {
      key: "a",
      value: "1",
      revision: 1,
      operation: "PUT",
    });
    assert.equal(await within(kv.get("missing"), "get missing"), null);
    // Revision 2 belongs to another key.
    assert.equal(await within(kv.get("a", { revision: 2 }), "get a at b's revision"), null);

    // create succeeds only for a key that has no value.
    assert.equal(await within(kv.create("c", "new"), "create c"), 4);
    await rejectsApi(kv.create("c", "again"), 10071, "wrong last sequence: 4", "create c twice");
    // update is compare-and-set on the key's revision.
    assert.equal(await within(kv.update("c", "v2", 4), "update c at 4"), 5);
    await rejectsApi(kv.update("c", "stale", 4), 10071, "wrong last sequence: 5", "update c at 4 again");
    await rejectsApi(kv.update("nothere", "x", 1), 10071, "wrong last sequence: 0", "update a missing key");
    assert.equal((await within(kv.get("c"), "get c")).string(), "v2");
    // put with previousSeq is the same check.
    await rejectsApi(kv.put("c", "x", { previousSeq: 1 }), 10071, "wrong last sequence: 5", "put at 1");

    // A delete leaves a marker: get shows the DEL entry, history keeps the values.
    await within(kv.delete("a"), "delete a");
    const del = await within(kv.get("a"), "get deleted a");
    assert.deepEqual(entry(del), { key: "a", value: "", revision: 6, operation: "DEL" });
    // create over a deleted key works (the client updates at the marker's revision).
    assert.equal(await within(kv.create("a", "reborn"), "create over delete"), 7);
    // delete with previousSeq checks the revision.
    await rejectsApi(kv.delete("a", { previousSeq: 3 }), 10071, "wrong last sequence: 7", "stale delete");

    // A purge removes the key's history, keeping one PURGE marker.
    await within(kv.purge("a"), "purge a");
    const pur = await within(kv.get("a"), "get purged a");
    assert.equal(pur.operation, "PURGE");
    assert.equal(pur.revision, 8);
    const hist = await within(all(await within(kv.history({ key: "a" }), "history a")), "history a");
    assert.deepEqual(hist.map(entry), [{ key: "a", value: "", revision: 8, operation: "PURGE" }]);
    const st = await within(jsm.streams.info("KV_cfg1", { subjects_filter: ">" }), "stream info");
    assert.deepEqual(st.state.subjects, { "$KV.cfg1.a": 1, "$KV.cfg1.b": 1, "$KV.cfg1.c": 2 });

    // Keys follow subject rules.
    await assert.rejects(within(kv.put("bad key", "x"), "put a bad key"), /invalid key/);
    await assert.rejects(within(kv.put("a.*", "x"), "put a wildcard key"), /invalid key/);
    // Dotted keys are fine.
    assert.equal(await within(kv.put("x.y.z", "dotted"), "put x.y.z"), 9);
    assert.equal((await within(kv.get("x.y.z"), "get x.y.z")).string(), "dotted");
  });
});

test("kv: history is bounded by the bucket's history setting", opts, async (t) => {
  await withJs(t, async (nc) => {
    const kv = await within(new Kvm(nc).create("hist", { history: 3 }), "create bucket");
    for (let i = 1; i <= 5; i++) {
      await within(kv.put("k", `v${i}`), `put ${i}`);
    }
    await within(kv.put("other", "o"), "put other");
    await within(kv.delete("k"), "delete k");
    let h = await within(all(await within(kv.history({ key: "k" }), "history k")), "history k");
    assert.deepEqual(h.map(entry), [
      { key: "k", value: "v4", revision: 4, operation: "PUT" },
      { key: "k", value: "v5", revision: 5, operation: "PUT" },
      { key: "k", value: "", revision: 7, operation: "DEL" },
    ]);
    h = await within(all(await within(kv.history(), "history of all")), "history of all");
    assert.deepEqual(
      h.map((e) => `${e.key}@${e.revision}`),
      ["k@4", "k@5", "other@6", "k@7"],
    );
    const none = await within(all(await within(kv.history({ key: "nothing" }), "empty history")), "empty");
    assert.deepEqual(none, []);
    const st = await within(kv.status(), "status");
    assert.equal(st.history, 3);
    assert.equal(st.values, 4);
  });
});

test("kv: keys lists live keys only, with a filter", opts, async (t) => {
  await withJs(t, async (nc) => {
    const kv = await within(new Kvm(nc).create("keys1"), "create bucket");
    assert.deepEqual(await within(all(await within(kv.keys(), "keys of empty")), "keys"), []);
    for (const k of ["users.ann", "users.bob", "groups.admin", "gone"]) {
      await within(kv.put(k, "x"), `put ${k}`);
    }
    await within(kv.put("users.ann", "y"), "put users.ann again");
    await within(kv.delete("gone"), "delete gone");
    await within(kv.put("purged", "x"), "put purged");
    await within(kv.purge("purged"), "purge purged");
    const keys = await within(all(await within(kv.keys(), "keys")), "keys");
    assert.deepEqual(keys.sort(), ["groups.admin", "users.ann", "users.bob"]);
    const users = await within(all(await within(kv.keys("users.*"), "keys users.*")), "keys users.*");
    assert.deepEqual(users.sort(), ["users.ann", "users.bob"]);
  });
});

test("kv: watch last values, full history, updates only, and live updates", opts, async (t) => {
  await withJs(t, async (nc) => {
    const kv = await within(new Kvm(nc).create("watch1", { history: 10 }), "create bucket");
    await within(kv.put("a", "a1"), "put a1"); // 1
    await within(kv.put("b", "b1"), "put b1"); // 2
    await within(kv.put("a", "a2"), "put a2"); // 3
    await within(kv.delete("b"), "delete b"); // 4

    // Default: the last value of each key (the delete marker of b included),
    // then what changes, marked as updates. The client counts the initial
    // values from the consumer's num_pending and marks the last of them as an
    // update already.
    const w = await within(kv.watch(), "watch");
    let got = await take(w, 2, "the initial values");
    assert.deepEqual(got.map(entry), [
      { key: "a", value: "a2", revision: 3, operation: "PUT" },
      { key: "b", value: "", revision: 4, operation: "DEL" },
    ]);
    assert.deepEqual(
      got.map((e) => e.isUpdate),
      [false, true],
    );
    await within(kv.put("c", "c1"), "put c1"); // 5
    await within(kv.put("a", "a3"), "put a3"); // 6
    got = await take(w, 2, "live updates");
    assert.deepEqual(got.map(entry), [
      { key: "c", value: "c1", revision: 5, operation: "PUT" },
      { key: "a", value: "a3", revision: 6, operation: "PUT" },
    ]);
    assert.deepEqual(
      got.map((e) => e.isUpdate),
      [true, true],
    );
    await stopIter(w, "stop the watcher");

    // Full history of one key, then live.
    const wh = await within(kv.watch({ key: "a", include: KvWatchInclude.AllHistory }), "watch history");
    got = await take(wh, 3, "the history of a");
    assert.deepEqual(
      got.map((e) => `${e.value.length ? e.string() : ""}@${e.revision}`),
      ["a1@1", "a2@3", "a3@6"],
    );
    await within(kv.put("c", "c2"), "put c2"); // 7, not watched
    await within(kv.put("a", "a4"), "put a4"); // 8
    got = await take(wh, 1, "a live update of a");
    assert.deepEqual(entry(got[0]), { key: "a", value: "a4", revision: 8, operation: "PUT" });
    await stopIter(wh, "stop the history watcher");

    // Updates only: nothing that was there before.
    const wu = await within(kv.watch({ include: KvWatchInclude.UpdatesOnly }), "watch updates");
    await within(kv.put("d", "d1"), "put d1"); // 9
    await within(kv.delete("c"), "delete c"); // 10
    got = await take(wu, 2, "updates only");
    assert.deepEqual(got.map(entry), [
      { key: "d", value: "d1", revision: 9, operation: "PUT" },
      { key: "c", value: "", revision: 10, operation: "DEL" },
    ]);
    await stopIter(wu, "stop the updates watcher");

    // ignoreDeletes drops the markers, a wildcard key narrows the watch.
    await within(kv.put("x.1", "one"), "put x.1"); // 11
    await within(kv.delete("x.1"), "delete x.1"); // 12
    await within(kv.put("x.2", "two"), "put x.2"); // 13
    const wx = await within(kv.watch({ key: "x.*", ignoreDeletes: true }), "watch x.*");
    got = await take(wx, 1, "x.* without deletes");
    assert.deepEqual(entry(got[0]), { key: "x.2", value: "two", revision: 13, operation: "PUT" });
    await within(kv.put("y", "not x"), "put y"); // 14
    await within(kv.put("x.3", "three"), "put x.3"); // 15
    got = await take(wx, 1, "x.3 live");
    assert.deepEqual(entry(got[0]), { key: "x.3", value: "three", revision: 15, operation: "PUT" });
    await stopIter(wx, "stop the x.* watcher");
  });
});

test("kv: a bucket with a TTL forgets its values", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    const kv = await within(new Kvm(nc).create("ttl1", { ttl: 1000 }), "create bucket");
    const si = await within(jsm.streams.info("KV_ttl1"), "stream info");
    assert.equal(si.config.max_age, 1e9);
    assert.equal((await within(kv.status(), "status")).ttl, 1000);
    await within(kv.put("k", "v"), "put");
    assert.equal((await within(kv.get("k"), "get at once")).string(), "v");
    const putAt = Date.now();
    await eventually(async () => {
      assert.equal(await within(kv.get("k"), "get"), null);
    }, "the value to expire");
    assert.ok(Date.now() - putAt >= 800, `expired after ${Date.now() - putAt} ms with a 1000 ms TTL`);
    assert.equal((await within(kv.status(), "status")).values, 0);
  });
});

test("kv: bucket status, list, open and destroy", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    const kvm = new Kvm(nc);
    const kv = await within(
      kvm.create("stat1", {
        history: 2,
        description: "a test bucket",
        maxValueSize: 64,
        storage: StorageType.Memory,
      }),
      "create bucket",
    );
    await within(kv.put("a", "1"), "put a");
    await within(kv.put("b", "22"), "put b");
    const st = await within(kv.status(), "status");
    assert.equal(st.bucket, "stat1");
    assert.equal(st.values, 2);
    assert.equal(st.history, 2);
    assert.equal(st.description, "a test bucket");
    assert.equal(st.maxValueSize, 64);
    assert.equal(st.storage, StorageType.Memory);
    assert.equal(st.streamInfo.config.storage, StorageType.Memory);
    assert.equal(st.streamInfo.config.max_msg_size, 64);
    assert.equal(st.streamInfo.config.name, "KV_stat1");
    assert.ok(st.size > 0, `size ${st.size}`);
    await rejectsApi(kv.put("big", "x".repeat(65)), 10054, "message size exceeds maximum allowed", "too big");

    await within(kvm.create("stat2"), "create another");
    await within(jsm.streams.add({ name: "NOTKV", subjects: ["notkv"] }), "a plain stream");
    const names = (await within(all(kvm.list()), "list buckets")).map((s) => s.bucket).sort();
    assert.deepEqual(names, ["stat1", "stat2"]);

    // open binds to the existing bucket; one that is not there has no status.
    const again = await within(kvm.open("stat1"), "open");
    assert.equal((await within(again.get("b"), "get through open")).string(), "22");
    const nope = await within(kvm.open("nope"), "open missing");
    await rejectsApi(nope.status(), 10059, "stream not found", "status of a missing bucket");

    assert.equal(await within(kv.destroy(), "destroy"), true);
    await rejectsApi(jsm.streams.info("KV_stat1"), 10059, "stream not found", "stream after destroy");
    const left = (await within(all(kvm.list()), "list after destroy")).map((s) => s.bucket);
    assert.deepEqual(left, ["stat2"]);
  });
});

// Per-key TTLs (Nats-TTL) and subject delete markers are nats-server 2.11.
// natsd implements them, so only an older reference skips this.
test("kv: per-key TTL and limit markers (2.11)", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    if (isReference() && !versionAtLeast(nc, "2.11.0")) {
      t.skip(`per-key TTLs need nats-server 2.11; the reference is ${nc.info.version}`);
      return;
    }
    const kv = await within(
      new Kvm(nc).create("mttl", { markerTTL: 1000 }),
      "create bucket with markers",
    );
    const si = await within(jsm.streams.info("KV_mttl"), "stream info");
    assert.equal(si.config.allow_msg_ttl, true);
    assert.equal(si.config.subject_delete_marker_ttl, 1e9);
    assert.equal((await within(kv.status(), "status")).markerTTL, 1000);

    const w = await within(kv.watch({ include: KvWatchInclude.UpdatesOnly }), "watch");
    // The bucket has no TTL; this key has one of its own.
    const rev = await within(kv.create("short", "v", "1s"), "create with a TTL");
    let got = await take(w, 1, "the put");
    assert.deepEqual(entry(got[0]), { key: "short", value: "v", revision: rev, operation: "PUT" });
    const m = await within(jsm.streams.getMessage("KV_mttl", { seq: rev }), "the stored message");
    assert.equal(m.header.get("Nats-TTL"), "1s");
    // When it expires, the server writes a marker that watchers see as a purge.
    got = await take(w, 1, "the limit marker");
    assert.equal(got[0].key, "short");
    assert.equal(got[0].operation, "PURGE");
    assert.ok(got[0].revision > rev);
    assert.equal(await within(kv.get("short"), "get after expiry").then((e) => e?.operation), "PURGE");
    // A key without a TTL stays; the marker itself goes away after markerTTL.
    await within(kv.put("long", "stays"), "put without a TTL");
    await eventually(async () => {
      assert.equal(await within(kv.get("short"), "get"), null);
    }, "the marker to expire");
    assert.equal((await within(kv.get("long"), "get long")).string(), "stays");
    await stopIter(w, "stop the watcher");
  });
});
