// Authentication, permissions and accounts through the official JavaScript
// client (issue 6, item 6: the same ground as tests/integ/test_auth.c and
// test_operator.c for the C client).
//
// Each test writes a config file into a temporary directory and starts the
// server with `-c`. Refused logins must reject connect() with the client's
// AuthorizationError (built from the server's -ERR 'Authorization
// Violation'); a denied publish or subscribe must reach the client as a
// PermissionViolationError carrying nats-server's text and subject.
//
// Operator mode signs its JWTs here, with the nkeys library that ships with
// the client (@nats-io/nkeys, a dependency of @nats-io/transport-node): a JWT
// is base64url(header) "." base64url(claims) "." base64url(ed25519 signature
// of the first two parts), so no JWT package is needed.
//
// Every expectation was checked against the reference nats-server
// (NATSD_TEST_SERVER=/usr/sbin/nats-server runs this file unchanged).

import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  AuthorizationError,
  PermissionViolationError,
  credsAuthenticator,
  nkeyAuthenticator,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
} from "@nats-io/transport-node";
import { createAccount, createOperator, createUser } from "@nats-io/nkeys";
import { withServer, tempDir, within, latch } from "../lib/js_harness.js";

const opts = { timeout: 60000 };
const enc = new TextEncoder();

// Fixtures shared with tests/integ/test_auth.c: bcrypt("bob") at cost 4, and
// a user nkey seed with its public key.
const BOB_HASH = "$2b$04$D.QqIczmLa33xnA902zkAOsizFQ4WembSp8nTxHkR6onng.39lQD.";
const USEED = "SUAMK2FG4MI6UE3ACF3FK3OIQBCEIEZV7NSWFFEW63UXMRLFM2XLAXK4GY";
const UPUB = "UAT6BWCSCWLUKJT6K6MBJJOEOTXZ5AJDOYKNEVRFC7VNO6OA43N4TRNO";

// Runs body against a server started with the given config text.
async function withConf(t, text, body) {
  const dir = tempDir(t);
  const conf = dir.file("server.conf", text);
  await withServer(t, (srv) => body(srv, dir), ["-c", conf]);
}

// Asserts that a login is refused with the client's authorization error.
async function refused(srv, connOpts, what) {
  await assert.rejects(srv.connect(connOpts), (err) => {
    assert.ok(err instanceof AuthorizationError, `${what}: expected AuthorizationError, got ${err?.name}: ${err?.message}`);
    assert.match(err.message, /authorization violation/i, what);
    return true;
  });
}

// A publish/subscribe round trip on one connection: proves that a login is
// really usable, not just accepted.
async function roundTrip(nc, subject) {
  const got = latch();
  const sub = nc.subscribe(subject, { callback: (err, m) => got.resolve(err ?? m.string()) });
  nc.publish(subject, "ping");
  assert.equal(await within(got.promise, `a message on ${subject}`), "ping");
  sub.unsubscribe();
}

test("user and password: good login works, bad ones are refused", opts, async (t) => {
  await withConf(t, "authorization { user: u, password: pw }\n", async (srv) => {
    const nc = await srv.connect({ user: "u", pass: "pw" });
    assert.equal(nc.info.auth_required, true, "INFO must say auth_required");
    assert.equal(nc.info.nonce, undefined, "no nonce without nkey users");
    await roundTrip(nc, "up.ok");

    const viaAuth = await srv.connect({ authenticator: usernamePasswordAuthenticator("u", "pw") });
    await roundTrip(viaAuth, "up.auth");

    await refused(srv, { user: "u", pass: "bad" }, "wrong password");
    await refused(srv, { user: "x", pass: "pw" }, "unknown user");
    await refused(srv, {}, "no credentials");
    await refused(srv, { token: "pw" }, "a token instead of user/password");
  });
});

test("token: the right token logs in, others are refused", opts, async (t) => {
  await withConf(t, 'authorization { token: "s3cr3t" }\n', async (srv) => {
    const nc = await srv.connect({ token: "s3cr3t" });
    await roundTrip(nc, "tok.ok");
    const viaAuth = await srv.connect({ authenticator: tokenAuthenticator("s3cr3t") });
    await roundTrip(viaAuth, "tok.auth");
    await refused(srv, { token: "wrong" }, "wrong token");
    await refused(srv, { user: "s3cr3t", pass: "s3cr3t" }, "user/password instead of the token");
    await refused(srv, {}, "no token");
  });
});

test("users list: plain and bcrypt passwords", opts, async (t) => {
  const conf = `authorization { users: [
  {user: alice, password: "a-pass"}
  {user: bob, password: "${BOB_HASH}"}
] }
`;
  await withConf(t, conf, async (srv) => {
    await roundTrip(await srv.connect({ user: "alice", pass: "a-pass" }), "users.alice");
    await roundTrip(await srv.connect({ user: "bob", pass: "bob" }), "users.bob");
    await refused(srv, { user: "bob", pass: BOB_HASH }, "the bcrypt hash itself as the password");
    await refused(srv, { user: "bob", pass: "bobx" }, "wrong bcrypt password");
    await refused(srv, { user: "alice", pass: "bob" }, "another user's password");
    await refused(srv, { user: "carol", pass: "a-pass" }, "unknown user");
  });
});

test("nkey user: the client signs INFO's nonce with its seed", opts, async (t) => {
  const conf = `authorization { users: [
  {nkey: ${UPUB}}
  {user: alice, password: pw}
] }
`;
  await withConf(t, conf, async (srv) => {
    const nc = await srv.connect({ authenticator: nkeyAuthenticator(enc.encode(USEED)) });
    assert.equal(typeof nc.info.nonce, "string", "INFO must carry a nonce for nkey users");
    assert.ok(nc.info.nonce.length > 0);
    await roundTrip(nc, "nkey.ok");

    // A valid signature, but from a key nobody configured.
    const stranger = createUser();
    await refused(srv, { authenticator: nkeyAuthenticator(stranger.getSeed()) }, "an unknown nkey");
    // The user/password user still works next to nkeys.
    await roundTrip(await srv.connect({ user: "alice", pass: "pw" }), "nkey.alice");
  });
});

test("permissions: denied publish and subscribe reach the client as permission errors", opts, async (t) => {
  const conf = `authorization { users: [
  {user: limited, password: p, permissions: {
    publish: {allow: ["ok.>"], deny: ["ok.secret"]}
    subscribe: {deny: ["hidden.>"]}
  }}
  {user: admin, password: p}
] }
`;
  await withConf(t, conf, async (srv) => {
    const admin = await srv.connect({ user: "admin", pass: "p" });
    const seen = [];
    admin.subscribe(">", { callback: (err, m) => seen.push(m.subject) });
    await within(admin.flush(), "admin's subscription");

    const nc = await srv.connect({ user: "limited", pass: "p" });
    const errs = [];
    // Every -ERR also reaches the status stream: one for the subscription,
    // two for the publishes.
    const threeErrors = latch();
    (async () => {
      for await (const s of nc.status()) {
        if (s.type === "error") {
          errs.push(s.error);
          if (errs.length === 3) threeErrors.resolve();
        }
      }
    })();

    // A denied subscription: its callback gets the error.
    const subErr = latch();
    nc.subscribe("hidden.x", { callback: (err) => subErr.resolve(err) });
    nc.publish("not.allowed", "x");
    nc.publish("ok.secret", "x");
    nc.publish("ok.fine", "x");
    await within(nc.flush(), "the limited client's flush");

    const se = await within(subErr.promise, "the subscription's permission error");
    assert.ok(se instanceof PermissionViolationError, `got ${se?.name}: ${se?.message}`);
    assert.equal(se.operation, "subscription");
    assert.equal(se.subject, "hidden.x");
    assert.match(se.message, /Permissions Violation for Subscription to "hidden\.x"/);

    // The two denied publishes (an allow list miss and a deny list hit)
    // reach the status stream with the server's text.
    await within(threeErrors.promise, "three permission errors on the status stream");
    const pubErrs = errs.filter((e) => e instanceof PermissionViolationError && e.operation === "publish");
    assert.deepEqual(
      pubErrs.map((e) => e.subject).sort(),
      ["not.allowed", "ok.secret"],
      `publish errors: ${errs.map((e) => e.message).join(" | ")}`,
    );
    for (const e of pubErrs) {
      assert.match(e.message, /Permissions Violation for Publish to "[a-z.]+"/);
    }

    // The connection stays usable, and only the allowed message went out.
    assert.equal(nc.isClosed(), false, "a permission violation must not close the connection");
    await within(admin.flush(), "admin's flush");
    const got = latch();
    admin.subscribe("ok.last", { callback: () => got.resolve() });
    await within(admin.flush(), "admin's second subscription");
    nc.publish("ok.last", "x");
    await within(got.promise, "the limited client's allowed publish");
    assert.deepEqual(seen.filter((s) => s !== "ok.last"), ["ok.fine"]);
  });
});

test("accounts: messages do not cross from one account to another", opts, async (t) => {
  const conf = `accounts {
  A: { users: [{user: a1, password: p}, {user: a2, password: p}] }
  B: { users: [{user: b1, password: p}] }
}
`;
  await withConf(t, conf, async (srv) => {
    const a1 = await srv.connect({ user: "a1", pass: "p" });
    const a2 = await srv.connect({ user: "a2", pass: "p" });
    const b1 = await srv.connect({ user: "b1", pass: "p" });
    const inA = [];
    const inB = [];
    const gotA = latch();
    a2.subscribe("iso.>", { callback: (err, m) => { inA.push(m.string()); if (m.string() === "from-a") gotA.resolve(); } });
    const bDone = latch();
    b1.subscribe("iso.>", {
      callback: (err, m) => {
        if (m.subject === "iso.done") bDone.resolve();
        else inB.push(m.string());
      },
    });
    await within(a2.flush(), "a2's subscription");
    await within(b1.flush(), "b1's subscription");

    // Within account A the message flows; B's subscriber on the same subject
    // must not see it.
    a1.publish("iso.x", "from-a");
    await within(gotA.promise, "the message inside account A");
    // B publishes a marker to itself after A's message was delivered: once
    // the marker is back, anything wrongly routed to B would have arrived.
    b1.publish("iso.done", "");
    await within(bDone.promise, "B's own marker");
    assert.deepEqual(inB, [], "account B must not receive account A's message");

    // And the other way round.
    const aDone = latch();
    a1.subscribe("mark.a", { callback: () => aDone.resolve() });
    await within(a1.flush(), "a1's subscription");
    b1.publish("iso.y", "from-b");
    await within(b1.flush(), "b1's flush");
    a1.publish("mark.a", "");
    await within(aDone.promise, "A's own marker");
    await within(a2.flush(), "a2's flush");
    assert.deepEqual(inA, ["from-a"], "account A must not receive account B's message");
  });
});

// ---- operator mode -------------------------------------------------------------------------

function b64url(bytes) {
  return Buffer.from(bytes).toString("base64url");
}

// Encodes and signs a JWT (v2 header) with the key pair `signer`. The jti is
// a digest of the claims, unique per JWT; servers do not check its form.
function signJwt(claims, signer) {
  const c = { iat: Math.floor(Date.now() / 1000), ...claims, iss: signer.getPublicKey() };
  c.jti = createHash("sha256").update(JSON.stringify(c)).digest("hex").slice(0, 52).toUpperCase();
  const head = b64url(enc.encode(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" })));
  const body = b64url(enc.encode(JSON.stringify(c)));
  const sig = signer.sign(enc.encode(`${head}.${body}`));
  return `${head}.${body}.${b64url(sig)}`;
}

const NO_LIMITS = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };

function accountJwt(acc, signer, name) {
  return signJwt(
    { sub: acc.getPublicKey(), name, nats: { type: "account", version: 2, limits: NO_LIMITS } },
    signer,
  );
}

function userJwt(user, signer, extra = {}) {
  return signJwt(
    {
      sub: user.getPublicKey(),
      name: "u",
      nats: { type: "user", version: 2, subs: -1, data: -1, payload: -1, ...extra },
    },
    signer,
  );
}

function creds(jwt, user) {
  const seed = new TextDecoder().decode(user.getSeed());
  return enc.encode(
    `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n` +
      `-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`,
  );
}

test("operator mode: creds login with the MEMORY resolver", opts, async (t) => {
  const op = createOperator();
  const acc = createAccount();
  const acc2 = createAccount(); // not preloaded: the server does not trust it
  const otherOp = createOperator();
  const acc3 = createAccount(); // preloaded, but signed by an operator the server does not know
  const dir = tempDir(t);
  const opPath = dir.file(
    "op.jwt",
    signJwt({ sub: op.getPublicKey(), name: "O", nats: { type: "operator", version: 2 } }, op),
  );
  const conf = dir.file(
    "server.conf",
    `operator: "${opPath}"
resolver: MEMORY
resolver_preload: {
  ${acc.getPublicKey()}: "${accountJwt(acc, op, "A")}"
  ${acc3.getPublicKey()}: "${accountJwt(acc3, otherOp, "C")}"
}
`,
  );
  await withServer(
    t,
    async (srv) => {
      const user = createUser();
      const good = userJwt(user, acc);
      // The creds text as a file holds it (the format nsc writes), parsed
      // by the client's creds authenticator.
      const nc = await srv.connect({ authenticator: credsAuthenticator(creds(good, user)) });
      assert.equal(typeof nc.info.nonce, "string", "operator mode must send a nonce");
      await roundTrip(nc, "op.ok");

      // The user's JWT permissions apply.
      const limitedUser = createUser();
      const limited = await srv.connect({
        authenticator: credsAuthenticator(
          creds(userJwt(limitedUser, acc, { pub: { deny: ["op.denied"] } }), limitedUser),
        ),
      });
      const perm = latch();
      (async () => {
        for await (const s of limited.status()) {
          if (s.type === "error") perm.resolve(s.error);
        }
      })();
      limited.publish("op.denied", "x");
      const pe = await within(perm.promise, "the JWT permission error");
      assert.ok(pe instanceof PermissionViolationError, `got ${pe?.name}: ${pe?.message}`);
      assert.equal(pe.subject, "op.denied");

      // The JWT of one user with another user's seed: the nonce signature
      // does not match the JWT's subject.
      const other = createUser();
      await refused(srv, { authenticator: credsAuthenticator(creds(good, other)) }, "a seed that does not match the JWT");
      // A user of an account the server does not know.
      const u2 = createUser();
      await refused(srv, { authenticator: credsAuthenticator(creds(userJwt(u2, acc2), u2)) }, "an unknown account");
      // A user of an account signed by a foreign operator.
      const u3 = createUser();
      await refused(srv, { authenticator: credsAuthenticator(creds(userJwt(u3, acc3), u3)) }, "an untrusted operator");
      // A user JWT that expired.
      const u4 = createUser();
      const expired = signJwt(
        {
          sub: u4.getPublicKey(),
          name: "old",
          exp: Math.floor(Date.now() / 1000) - 3600,
          nats: { type: "user", version: 2, subs: -1, data: -1, payload: -1 },
        },
        acc,
      );
      await refused(srv, { authenticator: credsAuthenticator(creds(expired, u4)) }, "an expired user JWT");
      // No credentials at all.
      await refused(srv, {}, "no JWT");
    },
    ["-c", conf],
  );
});
