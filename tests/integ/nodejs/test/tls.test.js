// TLS and mutual TLS through the official JavaScript client (issue 6, item 6:
// the ground of tests/integ/test_tls.c for the C client).
//
// The certificates are made at test time with the `openssl` command, in a
// temporary directory, exactly as test_tls.c makes them: a CA, a server
// certificate for localhost and 127.0.0.1, a client certificate for alice
// (e-mail and DNS SANs), one whose subject has a multi-valued RDN, and a
// "rogue" client certificate from another CA.
//
// Every expectation was checked against the reference nats-server
// (NATSD_TEST_SERVER=/usr/sbin/nats-server runs this file unchanged).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuthorizationError, PermissionViolationError } from "@nats-io/transport-node";
import { withServer, within, latch } from "../lib/js_harness.js";

const opts = { timeout: 60000 };

let certs = "";
const pem = (name) => join(certs, name);

before(() => {
  certs = mkdtempSync(join(tmpdir(), "natsd-js-tls-"));
  execFileSync(
    "sh",
    [
      "-c",
      "set -e; " +
        "K='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'; " +
        "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj '/CN=natsd test CA'; " +
        "openssl req -x509 $K -keyout other-ca.key -out other-ca.pem -days 2 -subj '/CN=other CA'; " +
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > srv.ext; " +
        "openssl req $K -keyout server.key -out server.csr -subj '/CN=localhost'; " +
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial " +
        "-out server.pem -days 2 -extfile srv.ext; " +
        "printf 'subjectAltName=email:alice@example.com,DNS:alice.example.com\\n' > cli.ext; " +
        "openssl req $K -keyout client.key -out client.csr -subj '/C=US/O=Synadia, Inc./OU=NATS/CN=alice'; " +
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial " +
        "-out client.pem -days 2 -extfile cli.ext; " +
        "openssl req $K -keyout mv.key -out mv.csr -multivalue-rdn -subj '/DC=io/O=Org/OU=A+CN=bob, jr'; " +
        "openssl x509 -req -in mv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out mv.pem -days 2; " +
        "openssl req $K -keyout rogue.key -out rogue.csr -subj '/CN=rogue'; " +
        "openssl x509 -req -in rogue.csr -CA other-ca.pem -CAkey other-ca.key " +
        "-CAcreateserial -out rogue.pem -days 2 -extfile cli.ext",
    ],
    { cwd: certs, stdio: ["ignore", "ignore", "pipe"] },
  );
});

after(() => {
  if (certs) rmSync(certs, { recursive: true, force: true });
});

// Runs body against a server whose config has a tls {} block with the
// server's certificate, key and CA plus `tlsBody`, after `top`.
async function withTls(t, tlsBody, body, top = "") {
  const conf = join(certs, `server-${process.hrtime.bigint()}.conf`);
  writeFileSync(
    conf,
    `${top}\ntls {\n  cert_file: "${pem("server.pem")}"\n  key_file: "${pem("server.key")}"\n` +
      `  ca_file: "${pem("ca.pem")}"\n${tlsBody}\n}\n`,
  );
  t.after(() => rmSync(conf, { force: true }));
  await withServer(t, body, ["-c", conf]);
}

async function roundTrip(nc, subject) {
  const got = latch();
  const sub = nc.subscribe(subject, { callback: (err, m) => got.resolve(err ?? m.string()) });
  nc.publish(subject, "ping");
  assert.equal(await within(got.promise, `a message on ${subject}`), "ping");
  sub.unsubscribe();
}

// A TLS failure must reject connect() promptly, and not as an authorization
// error: the connection never got as far as CONNECT.
async function tlsRefused(srv, connOpts, what) {
  await assert.rejects(srv.connect(connOpts), (err) => {
    assert.ok(!(err instanceof AuthorizationError), `${what}: refused by auth, not TLS: ${err.message}`);
    return true;
  }, what);
}

test("tls: a client trusting the CA talks over TLS, others fail the handshake", opts, async (t) => {
  await withTls(t, "", async (srv) => {
    const nc = await srv.connect({ tls: { caFile: pem("ca.pem") } });
    assert.equal(nc.info.tls_required, true, "INFO must say tls_required");
    assert.notEqual(nc.info.tls_verify, true, "no client certificates asked for without verify");
    await roundTrip(nc, "tls.ok");
    // Large payloads cross TLS records intact.
    const big = "x".repeat(300000);
    const got = latch();
    nc.subscribe("tls.big", { callback: (err, m) => got.resolve(m.string()) });
    nc.publish("tls.big", big);
    assert.equal(await within(got.promise, "the large message"), big);

    // A client that trusts only another CA, and one with the system CAs.
    await tlsRefused(srv, { tls: { caFile: pem("other-ca.pem") } }, "a client trusting another CA");
    await tlsRefused(srv, {}, "a client without the test CA");
  });
});

test("mutual tls: verify asks for a client certificate from the CA", opts, async (t) => {
  await withTls(t, "  verify: true", async (srv) => {
    const nc = await srv.connect({
      tls: { caFile: pem("ca.pem"), certFile: pem("client.pem"), keyFile: pem("client.key") },
    });
    assert.equal(nc.info.tls_required, true);
    assert.equal(nc.info.tls_verify, true, "INFO must say tls_verify");
    await roundTrip(nc, "mtls.ok");

    await tlsRefused(srv, { tls: { caFile: pem("ca.pem") } }, "no client certificate");
    await tlsRefused(
      srv,
      { tls: { caFile: pem("ca.pem"), certFile: pem("rogue.pem"), keyFile: pem("rogue.key") } },
      "a client certificate from another CA",
    );
    // The server is still serving after the failed handshakes.
    const again = await srv.connect({
      tls: { caFile: pem("ca.pem"), certFile: pem("client.pem"), keyFile: pem("client.key") },
    });
    await roundTrip(again, "mtls.again");
  });
});

test("verify_and_map: the certificate's e-mail SAN is the user, with its permissions", opts, async (t) => {
  const users = `authorization { users: [
  {user: "alice@example.com", permissions: {publish: ["alice.>"], subscribe: ["alice.>"]}}
] }`;
  await withTls(
    t,
    "  verify_and_map: true",
    async (srv) => {
      const alice = await srv.connect({
        tls: { caFile: pem("ca.pem"), certFile: pem("client.pem"), keyFile: pem("client.key") },
      });
      await roundTrip(alice, "alice.x");
      // The mapped user's permissions apply.
      const perm = latch();
      (async () => {
        for await (const s of alice.status()) {
          if (s.type === "error") perm.resolve(s.error);
        }
      })();
      alice.publish("bob.x", "no");
      const pe = await within(perm.promise, "the mapped user's permission error");
      assert.ok(pe instanceof PermissionViolationError, `got ${pe?.name}: ${pe?.message}`);
      assert.equal(pe.subject, "bob.x");

      // A valid certificate whose names map to no user: TLS succeeds, the
      // login does not.
      await assert.rejects(
        srv.connect({ tls: { caFile: pem("ca.pem"), certFile: pem("mv.pem"), keyFile: pem("mv.key") } }),
        (err) => err instanceof AuthorizationError,
        "a certificate that maps to no user",
      );
    },
    users,
  );
});
