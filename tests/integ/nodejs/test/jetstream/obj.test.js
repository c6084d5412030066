// JetStream object store with the official client (@nats-io/obj): a large
// object put in many chunks and read back byte for byte with its SHA-256
// digest, info, list, links to objects and to buckets, metadata updates
// (including a rename), watchers, delete and bucket status/destroy.
//
// Every expectation was checked against the reference nats-server 2.9.10
// started with -js (ctest integ.nodejs.jetstream.reference). Each test starts
// its own server and uses bucket names of its own.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DiscardPolicy, StorageType } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { within } from "../../lib/js_harness.js";
import { withJs, rejectsApi, take } from "../../lib/js_jetstream.js";

const opts = { timeout: 60000 };
const enc = new TextEncoder();

// Deterministic pseudo-random bytes (xorshift32), so that a chunk boundary
// mix-up cannot go unnoticed the way it could with a repeated pattern.
function bytes(n, seed) {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

// The digest the object store records: "SHA-256=" and the base64url (padded)
// SHA-256 of the content.
function digestOf(data) {
  const b64 = createHash("sha256").update(data).digest("base64");
  return `SHA-256=${b64.replaceAll("+", "-").replaceAll("/", "_")}`;
}

// Asserts that two byte arrays hold the same bytes (the client hands back
// Buffers or Uint8Arrays, which deepEqual tells apart).
function assertBytes(actual, expected, what) {
  assert.ok(actual, `${what}: no data`);
  assert.equal(actual.length, expected.length, `${what}: length`);
  assert.ok(Buffer.from(actual).equals(Buffer.from(expected)), `${what}: the bytes differ`);
}

// Reads a whole ReadableStream into one array.
async function readAll(rs) {
  const parts = [];
  let n = 0;
  for await (const p of rs) {
    parts.push(p);
    n += p.length;
  }
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

test("obj: a 1 MiB object in 128 KiB chunks, read back with its digest", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    const os = await within(new Objm(nc).create("big1", { description: "large objects" }), "create");
    // The bucket is a stream with the object store conventions (ADR-20).
    const si = await within(jsm.streams.info("OBJ_big1"), "the bucket's stream");
    assert.deepEqual(si.config.subjects, ["$O.big1.C.>", "$O.big1.M.>"]);
    assert.equal(si.config.allow_rollup_hdrs, true);
    assert.equal(si.config.discard, DiscardPolicy.New);
    assert.equal(si.config.description, "large objects");

    const data = bytes(1024 * 1024 + 123, 7);
    const info = await within(
      os.putBlob({ name: "blob.bin", description: "random", options: { max_chunk_size: 128 * 1024 } }, data),
      "put 1 MiB",
    );
    assert.equal(info.name, "blob.bin");
    assert.equal(info.bucket, "big1");
    assert.equal(info.size, data.length);
    assert.equal(info.chunks, 9);
    assert.equal(info.digest, digestOf(data));
    assert.equal(info.deleted, false);
    assert.equal(info.description, "random");

    // The chunks and the meta message are in the stream.
    const st = await within(jsm.streams.info("OBJ_big1", { subjects_filter: ">" }), "stream info");
    assert.equal(st.state.messages, 10);
    assert.equal(st.state.subjects[`$O.big1.C.${info.nuid}`], 9);
    const chunk = await within(jsm.streams.getMessage("OBJ_big1", { seq: 1 }), "first chunk");
    assert.equal(chunk.data.length, 128 * 1024);
    assert.deepEqual(chunk.data, data.subarray(0, 128 * 1024));
    const last = await within(jsm.streams.getMessage("OBJ_big1", { seq: 9 }), "last chunk");
    assert.equal(last.data.length, data.length - 8 * 128 * 1024);

    const got = await within(os.getBlob("blob.bin"), "get blob");
    assert.equal(got.length, data.length);
    assert.ok(Buffer.from(got).equals(Buffer.from(data)), "the bytes read back differ");

    // The streaming get checks the digest as it reads.
    const r = await within(os.get("blob.bin"), "get");
    const streamed = await within(readAll(r.data), "read the stream");
    const err = await within(r.error, "the get's result");
    assert.ok(!err, `the get failed: ${err}`);
    assert.ok(Buffer.from(streamed).equals(Buffer.from(data)), "the streamed bytes differ");
    assert.equal(r.info.digest, digestOf(data));

    // Replacing an object drops the old chunks.
    const small = enc.encode("small now");
    const info2 = await within(os.putBlob({ name: "blob.bin" }, small), "replace");
    assert.equal(info2.chunks, 1);
    assert.notEqual(info2.nuid, info.nuid);
    const st2 = await within(jsm.streams.info("OBJ_big1"), "stream info after replace");
    assert.equal(st2.state.messages, 2);
    assertBytes(await within(os.getBlob("blob.bin"), "get replaced"), small, "get replaced");
    assert.equal(await within(os.getBlob("missing"), "get missing"), null);
    assert.equal(await within(os.info("missing"), "info missing"), null);
  });
});

test("obj: info, list, meta update, rename, delete", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    const os = await within(new Objm(nc).create("meta1"), "create");
    const a = await within(os.putBlob({ name: "a.txt" }, enc.encode("aaa")), "put a");
    await within(os.putBlob({ name: "b.txt" }, enc.encode("bb")), "put b");
    await within(os.putBlob({ name: "empty" }, new Uint8Array(0)), "put empty");

    const ia = await within(os.info("a.txt"), "info a");
    assert.equal(ia.size, 3);
    assert.equal(ia.chunks, 1);
    assert.equal(ia.nuid, a.nuid);
    assert.equal(ia.digest, digestOf(enc.encode("aaa")));
    assert.ok(!Number.isNaN(Date.parse(ia.mtime)), `mtime ${ia.mtime}`);
    const ie = await within(os.info("empty"), "info empty");
    assert.equal(ie.size, 0);
    assert.equal(ie.chunks, 0);
    assertBytes(await within(os.getBlob("empty"), "get empty"), new Uint8Array(0), "get empty");

    let list = await within(os.list(), "list");
    assert.deepEqual(list.map((i) => i.name).sort(), ["a.txt", "b.txt", "empty"]);

    // A meta update changes the description and headers, not the content.
    await within(os.update("a.txt", { description: "the letter a", metadata: { k: "v" } }), "update a");
    const ua = await within(os.info("a.txt"), "info after update");
    assert.equal(ua.description, "the letter a");
    assert.equal(ua.nuid, a.nuid);
    assert.equal(ua.digest, a.digest);
    assertBytes(await within(os.getBlob("a.txt"), "get a"), enc.encode("aaa"), "get a");

    // A rename moves the meta and keeps the chunks.
    await within(os.update("b.txt", { name: "c.txt" }), "rename b to c");
    assert.equal(await within(os.info("b.txt"), "info of the old name"), null);
    assertBytes(await within(os.getBlob("c.txt"), "get c"), enc.encode("bb"), "get c");
    await assert.rejects(within(os.update("a.txt", { name: "c.txt" }), "rename onto c"), /already exists/);

    // Delete marks the meta deleted and purges the chunks.
    const pr = await within(os.delete("a.txt"), "delete a");
    assert.equal(pr.success, true);
    assert.equal(pr.purged, 1);
    const da = await within(os.info("a.txt"), "info deleted");
    assert.equal(da.deleted, true);
    assert.equal(da.size, 0);
    assert.equal(await within(os.getBlob("a.txt"), "get deleted"), null);
    list = await within(os.list(), "list after delete");
    assert.deepEqual(list.map((i) => i.name).sort(), ["c.txt", "empty"]);
    const st = await within(jsm.streams.info("OBJ_meta1", { subjects_filter: "$O.meta1.C.>" }), "chunks");
    assert.equal(Object.keys(st.state.subjects ?? {}).length, 1); // c.txt only
    await assert.rejects(within(os.update("a.txt", { description: "x" }), "update deleted"), /deleted/);
  });
});

test("obj: links to an object and to a bucket", opts, async (t) => {
  await withJs(t, async (nc) => {
    const objm = new Objm(nc);
    const src = await within(objm.create("src1"), "create src");
    const dst = await within(objm.create("dst1"), "create dst");
    const data = bytes(200 * 1024, 3);
    const info = await within(src.putBlob({ name: "target" }, data), "put target");

    const li = await within(dst.link("alias", info), "link");
    assert.equal(li.name, "alias");
    assert.deepEqual(li.options.link, { bucket: "src1", name: "target" });
    assert.ok(li.isLink(), "the link's info is not a link");
    // Reading through the link reads the target.
    const got = await within(dst.getBlob("alias"), "get through the link");
    assert.ok(Buffer.from(got).equals(Buffer.from(data)), "bytes through the link differ");
    // A link to a link is refused, as is a link over an existing object.
    await assert.rejects(within(dst.link("alias2", li), "link to a link"), /is a link/);
    await within(dst.putBlob({ name: "taken" }, enc.encode("x")), "put taken");
    await assert.rejects(within(dst.link("taken", info), "link over an object"), /already exists/);

    const bl = await within(dst.linkStore("srcbucket", src), "link the bucket");
    assert.deepEqual(bl.options.link, { bucket: "src1" });
    await assert.rejects(within(dst.get("srcbucket"), "get a bucket link"), /link is a bucket/);

    // Deleting the target leaves a dangling link.
    await within(src.delete("target"), "delete target");
    assert.equal(await within(dst.getBlob("alias"), "get a dangling link"), null);
  });
});

test("obj: watch with and without history, live updates and deletes", opts, async (t) => {
  await withJs(t, async (nc) => {
    const os = await within(new Objm(nc).create("watch1"), "create");
    await within(os.putBlob({ name: "one" }, enc.encode("1")), "put one");
    await within(os.putBlob({ name: "two" }, enc.encode("22")), "put two");

    const wh = await within(os.watch({ includeHistory: true }), "watch with history");
    const wn = await within(os.watch(), "watch without history");
    let got = await take(wh, 2, "the existing objects");
    assert.deepEqual(
      got.map((i) => [i.name, i.size, i.deleted]),
      [
        ["one", 1, false],
        ["two", 2, false],
      ],
    );

    await within(os.putBlob({ name: "three" }, enc.encode("333")), "put three");
    await within(os.delete("one"), "delete one");
    for (const [w, what] of [
      [wh, "history watcher"],
      [wn, "new-only watcher"],
    ]) {
      got = await take(w, 2, `live changes (${what})`);
      assert.deepEqual(
        got.map((i) => [i.name, i.size, i.deleted]),
        [
          ["three", 3, false],
          ["one", 0, true],
        ],
        what,
      );
      assert.ok(
        got.every((i) => i.isUpdate),
        `${what}: live changes are updates`,
      );
    }
    wh.stop();
    wn.stop();

    const wi = await within(os.watch({ includeHistory: true, ignoreDeletes: true }), "watch ignoring deletes");
    got = await take(wi, 2, "existing objects without the deleted one");
    assert.deepEqual(got.map((i) => i.name).sort(), ["three", "two"]);
    wi.stop();
  });
});

test("obj: bucket status, list, seal and destroy", opts, async (t) => {
  await withJs(t, async (nc, jsm) => {
    const objm = new Objm(nc);
    const os = await within(
      objm.create("stat1", { description: "status", storage: StorageType.Memory, ttl: 3600e9 }),
      "create",
    );
    await within(os.putBlob({ name: "x" }, bytes(1000, 5)), "put x");
    let st = await within(os.status(), "status");
    assert.equal(st.bucket, "stat1");
    assert.equal(st.description, "status");
    assert.equal(st.storage, StorageType.Memory);
    assert.equal(st.ttl, 3600e9);
    assert.equal(st.sealed, false);
    assert.equal(st.backingStore, "JetStream");
    assert.equal(st.streamInfo.config.name, "OBJ_stat1");
    assert.ok(st.size > 1000, `size ${st.size}`);

    await within(objm.create("stat2"), "create another");
    const names = [];
    for await (const s of objm.list()) {
      names.push(s.bucket);
    }
    assert.deepEqual(names.sort(), ["stat1", "stat2"]);

    st = await within(os.seal(), "seal");
    assert.equal(st.sealed, true);
    // A sealed stream refuses every write.
    await rejectsApi(
      os.putBlob({ name: "y" }, enc.encode("y")),
      10109,
      "invalid operation on sealed stream",
      "put into a sealed bucket",
    );
    assert.equal(await within(os.info("y"), "info y"), null);

    assert.equal(await within(os.destroy(), "destroy"), true);
    await rejectsApi(jsm.streams.info("OBJ_stat1"), 10059, "stream not found", "stream after destroy");
  });
});
