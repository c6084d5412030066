/* Integration tests of leaf nodes (issue 16): a hub and a leaf, each a server process on
 * loopback with a config file naming its client, monitoring and leafnode ports. Clients speak
 * the raw protocol (harness.h).
 *
 * Covered: pub/sub and request/reply both ways, account binding, reconnect after a hub restart,
 * client users guarding the leaf port; TLS, deny_imports/deny_exports, a hub user's permissions,
 * min_version, loops, credentials files (operator-mode hub) and remote nkeys, a leaf of the
 * hub's own cluster name, dial errors; a hub cluster (leaf interest over routes, leafnode_urls
 * and failover to the other hub), queue groups preferring local members, two leafs on one hub,
 * advertise; /leafz?subs=1, /varz, /metrics; JetStream domains on both sides and a hub stream
 * mirrored into the leaf's domain. Most cases run three ways (ROLES): both servers under test,
 * our leaf on a reference hub, a reference leaf on our hub.
 *
 * Every expectation was first checked against the reference nats-server 2.9.10
 * (integ.leaf.reference runs this file with NATSD_TEST_SERVER=/usr/sbin/nats-server). The mixed
 * tests run the server under test in one role and the reference in the other; they are skipped
 * when the server under test is the reference itself.
 *
 * Synchronisation: a leaf connection is waited for by polling /leafz (nd_integ_wait_leafs), an
 * interest by polling the subscriptions count of the leaf connection on the side that must learn
 * it (each side also holds the other's $LDS. loop detection subscription, so counts are taken
 * relative to a baseline, read once the $LDS. subject, the last of the peer's first batch, is
 * in: leaf_base); a client's own state by a PING round trip.
 *
 * What the reference does, noted where a test depends on it:
 * - /leafz "subscriptions" counts the LS+ the peer sent (its $LDS. subject included).
 * - a leaf bound to an account sees only that account: a publish in another account of the hub
 *   never reaches it.
 * - after the hub restarts, the leaf reconnects within its reconnect interval (1 s default) and
 *   sends its interest again.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "integ_util.h"
#include "jsproto.h"
#include "auth/jwt.h"
#include "util/nkey.h"

TestSuite(integ_leaf, .fini = nd_integ_cleanup, .timeout = 120);

typedef struct node {
    const char *bin;
    int port, mport, lport; /* lport: the leafnode listen port (hub), 0 for none */
    char text[4096];
    nd_integ_conf_t cf;
    nd_integ_server_t *srv;
} node_t;

static void
node_init(node_t *n, const char *bin)
{
    memset(n, 0, sizeof *n);
    n->bin = bin != NULL ? bin : nd_integ_server_path();
    n->port = nd_integ_fresh_port();
    n->mport = nd_integ_fresh_port();
}

/* Makes n a hub (leafnodes { port }, plus extra lines inside leafnodes {} and at the top). */
static void
node_hub(node_t *n, const char *leaf_extra, const char *top_extra)
{
    n->lport = nd_integ_fresh_port();
    snprintf(n->text, sizeof n->text,
             "listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\n%s\nleafnodes {\n  listen: 127.0.0.1:%d\n"
             "  %s\n}\n",
             n->port, n->mport, top_extra ? top_extra : "", n->lport, leaf_extra ? leaf_extra : "");
}

/* Makes n a leaf of hub (the URL's user:pass, the local account and more lines of the remote,
 * each may be NULL). */
static void
node_leaf_x(node_t *n, const node_t *hub, const char *userpass, const char *account,
            const char *top_extra, const char *remote_extra)
{
    char acct[128] = "";
    if (account != NULL)
        snprintf(acct, sizeof acct, ", account: \"%s\"", account);
    snprintf(n->text, sizeof n->text,
             "listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\n%s\nleafnodes {\n  reconnect: 1\n"
             "  remotes [ { url: \"nats-leaf://%s%s127.0.0.1:%d\"%s\n  %s } ]\n}\n",
             n->port, n->mport, top_extra ? top_extra : "", userpass ? userpass : "",
             userpass ? "@" : "", hub->lport, acct, remote_extra ? remote_extra : "");
}

static void
node_leaf(node_t *n, const node_t *hub, const char *userpass, const char *account,
          const char *top_extra)
{
    node_leaf_x(n, hub, userpass, account, top_extra, NULL);
}

static void
node_start(node_t *n)
{
    nd_integ_conf_write(&n->cf, n->text);
    const char *args[] = {"-c", n->cf.path, NULL};
    n->srv = nd_integ_server_start_bin(n->bin, args);
}

static void
node_stop(node_t *n)
{
    nd_integ_server_stop(n->srv);
    n->srv = NULL;
}

static void
node_free(node_t *n)
{
    if (n->srv != NULL)
        node_stop(n);
    nd_integ_conf_remove(&n->cf);
}

/* The subscriptions count of the first leaf connection in /leafz (-1: none). */
static int
leaf_subs(int mport)
{
    char *body = nd_integ_http_get(mport, "/leafz");
    json_error_t err;
    json_t *o = json_loads(body, 0, &err);
    free(body);
    cr_assert_not_null(o);
    json_t *l = json_array_get(json_object_get(o, "leafs"), 0);
    int n = l != NULL ? (int)json_integer_value(json_object_get(l, "subscriptions")) : -1;
    json_decref(o);
    return n;
}

/* The subscriptions count of the first leaf connection on mport once the peer's first batch
 * of interest is in: that batch ends with the peer's $LDS. subject (natsd and nats-server both
 * send it last), so a count taken before it could still grow on its own. */
static int
leaf_base(int mport)
{
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (;;) {
        char *body = nd_integ_http_get(mport, "/leafz?subs=1");
        json_error_t err;
        json_t *o = json_loads(body, 0, &err);
        cr_assert_not_null(o, "%s", body);
        json_t *l = json_array_get(json_object_get(o, "leafs"), 0);
        json_t *list = json_object_get(l, "subscriptions_list"), *v;
        size_t i;
        bool lds = false;
        json_array_foreach(list, i, v) lds |= strncmp(json_string_value(v), "$LDS.", 5) == 0;
        int n = (int)json_integer_value(json_object_get(l, "subscriptions"));
        json_decref(o);
        if (lds) {
            free(body);
            return n;
        }
        if (nd_integ_now_ms() > deadline)
            cr_assert_fail("/leafz on %d: no $LDS. subscription: %s", mport, body);
        free(body);
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Waits until the leaf connection on mport holds exactly n subscriptions. */
static void
wait_leaf_subs(int mport, int n)
{
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    int got;
    while ((got = leaf_subs(mport)) != n) {
        if (nd_integ_now_ms() > deadline)
            cr_assert_fail("/leafz on %d: %d subscriptions, want %d", mport, got, n);
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

static nd_integ_conn_t *
client(const node_t *n, const char *user_pass_json)
{
    nd_integ_conn_t *c = nd_integ_conn_open_port(n->port);
    char line[256];
    snprintf(line, sizeof line, "CONNECT {\"verbose\":false%s%s}\r\nPING\r\n",
             user_pass_json ? "," : "", user_pass_json ? user_pass_json : "");
    ND_SENDS(c, line);
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* Pub/sub both ways, request/reply both ways and UNSUB between hub and leaf (both connected). */
static void
exercise(const node_t *hub, const node_t *leaf, const char *hub_cred, const char *leaf_cred)
{
    nd_integ_wait_leafs(hub->mport, 1);
    nd_integ_wait_leafs(leaf->mport, 1);
    nd_integ_conn_t *h = client(hub, hub_cred), *l = client(leaf, leaf_cred);
    int hbase = leaf_base(hub->mport), lbase = leaf_base(leaf->mport);

    /* leaf -> hub */
    ND_SEND(h, "SUB hub.foo 1\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    wait_leaf_subs(leaf->mport, lbase + 1);
    ND_SEND(l, "PUB hub.foo 5\r\nhello\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    ND_EXPECT(h, "MSG hub.foo 1 5\r\nhello\r\n");

    /* hub -> leaf */
    ND_SEND(l, "SUB leaf.foo 7\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub->mport, hbase + 1);
    ND_SEND(h, "PUB leaf.foo 3\r\nabc\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_EXPECT(l, "MSG leaf.foo 7 3\r\nabc\r\n");

    /* request from the hub, answered on the leaf */
    ND_SEND(h, "SUB _INBOX.h 2\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    wait_leaf_subs(leaf->mport, lbase + 2);
    ND_SEND(h, "PUB leaf.foo _INBOX.h 3\r\nreq\r\n");
    ND_EXPECT(l, "MSG leaf.foo 7 _INBOX.h 3\r\nreq\r\n");
    ND_SEND(l, "PUB _INBOX.h 3\r\nrep\r\n");
    ND_EXPECT(h, "MSG _INBOX.h 2 3\r\nrep\r\n");

    /* request from the leaf, answered on the hub */
    ND_SEND(l, "SUB _INBOX.l 8\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub->mport, hbase + 2);
    ND_SEND(l, "PUB hub.foo _INBOX.l 2\r\nq2\r\n");
    ND_EXPECT(h, "MSG hub.foo 1 _INBOX.l 2\r\nq2\r\n");
    ND_SEND(h, "PUB _INBOX.l 2\r\nr2\r\n");
    ND_EXPECT(l, "MSG _INBOX.l 8 2\r\nr2\r\n");

    /* UNSUB reaches the other side: the next message there finds no interest */
    ND_SEND(h, "UNSUB 1\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    wait_leaf_subs(leaf->mport, lbase + 1);
    ND_SEND(l, "UNSUB 7\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub->mport, hbase + 1);
    /* Shown by order: after the unsubscribed subject, a subscribed one arrives first. */
    ND_SEND(l, "PUB hub.foo 1\r\nx\r\nPUB _INBOX.h 1\r\ny\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    ND_EXPECT(h, "MSG _INBOX.h 2 1\r\ny\r\n");
    ND_SEND(h, "PUB leaf.foo 1\r\nx\r\nPUB _INBOX.l 1\r\ny\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_EXPECT(l, "MSG _INBOX.l 8 1\r\ny\r\n");
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
}

/* A hub of binary hub_bin and a leaf of leaf_bin (NULL: the server under test), plain
 * leafnodes, and the exercise. */
static void
hub_and_leaf(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    node_hub(&hub, NULL, NULL);
    node_leaf(&leaf, &hub, NULL, NULL, NULL);
    node_start(&hub);
    node_start(&leaf);
    exercise(&hub, &leaf, NULL, NULL);
    node_free(&leaf);
    node_free(&hub);
}

/* Skips the test unless the reference is there and the server under test is not it. Returns:
 * the reference's path. */
static const char *
ref_or_skip(void)
{
    const char *ref = nd_integ_reference_path();
    if (ref == NULL || nd_integ_is_reference())
        cr_skip_test("needs the reference and a server under test that is not it");
    return ref;
}

Test(integ_leaf, hub_and_leaf)
{
    hub_and_leaf(NULL, NULL);
}

Test(integ_leaf, leaf_to_reference_hub)
{
    hub_and_leaf(ref_or_skip(), NULL);
}

Test(integ_leaf, reference_leaf_to_hub)
{
    hub_and_leaf(NULL, ref_or_skip());
}

/* Two accounts on the hub; the leaf's user is bound to A: it sees A's traffic only. */
Test(integ_leaf, account_binding)
{
    node_t hub, leaf;
    node_init(&hub, NULL);
    node_init(&leaf, NULL);
    node_hub(&hub,
             "authorization { users [ {user: la, password: pa, account: A} ] }",
             "accounts {\n  A { users [ {user: a, password: a} ] }\n"
             "  B { users [ {user: b, password: b} ] }\n}");
    node_leaf(&leaf, &hub, "la:pa", NULL, NULL);
    node_start(&hub);
    node_start(&leaf);
    exercise(&hub, &leaf, "\"user\":\"a\",\"pass\":\"a\"", NULL);
    /* /leafz on the hub names the bound account. */
    char *body = nd_integ_http_get(hub.mport, "/leafz");
    json_error_t err;
    json_t *lz = json_loads(body, 0, &err);
    cr_assert_not_null(lz, "%s", body);
    json_t *l0 = json_array_get(json_object_get(lz, "leafs"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(l0, "account")), "A", "%s", body);
    json_decref(lz);
    free(body);
    /* A publish in B never reaches the leaf; one in A right after it does. Until the leaf's
     * interest has reached the hub neither arrives, so the pair is sent again until one does
     * (the reference's leaf subscription count moves on its own, so it is no signal); the
     * first to arrive must be A's. */
    nd_integ_conn_t *l = client(&leaf, NULL);
    ND_SEND(l, "SUB ab 1\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    nd_integ_conn_t *b = client(&hub, "\"user\":\"b\",\"pass\":\"b\"");
    nd_integ_conn_t *a = client(&hub, "\"user\":\"a\",\"pass\":\"a\"");
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (;;) {
        cr_assert(nd_integ_now_ms() < deadline, "the leaf never got a publish of account A");
        ND_SEND(b, "PUB ab 1\r\nB\r\nPING\r\n");
        ND_EXPECT(b, "PONG\r\n");
        ND_SEND(a, "PUB ab 1\r\nA\r\nPING\r\n");
        ND_EXPECT(a, "PONG\r\n");
        if (nd_integ_conn_wait_any(&l, 1, 200) == 0)
            break;
    }
    ND_EXPECT(l, "MSG ab 1 1\r\nA\r\n");
    nd_integ_conn_close(a);
    nd_integ_conn_close(b);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
}

/* The hub stops and comes back on the same ports: the leaf reconnects and sends its interest
 * again. */
Test(integ_leaf, reconnect_after_hub_restart)
{
    node_t hub, leaf;
    node_init(&hub, NULL);
    node_init(&leaf, NULL);
    node_hub(&hub, NULL, NULL);
    node_leaf(&leaf, &hub, NULL, NULL, NULL);
    node_start(&hub);
    node_start(&leaf);
    nd_integ_wait_leafs(leaf.mport, 1);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_conn_t *l = client(&leaf, NULL);
    int base = leaf_base(hub.mport);
    ND_SEND(l, "SUB after 1\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub.mport, base + 1);
    node_stop(&hub);
    nd_integ_wait_leafs(leaf.mport, 0);
    node_start(&hub);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    wait_leaf_subs(hub.mport, base + 1); /* the same interest again */
    nd_integ_conn_t *h = client(&hub, NULL);
    ND_SEND(h, "PUB after 2\r\nok\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_EXPECT(l, "MSG after 1 2\r\nok\r\n");
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
}

/* No leafnodes authorization, but client users: a leaf must log in as one of them (nats-server
 * falls back to the client authorization) and is bound to that user's account; wrong
 * credentials never make a leaf connection. */
Test(integ_leaf, client_users_guard_the_leaf_port)
{
    node_t hub, bad, good;
    node_init(&hub, NULL);
    node_init(&bad, NULL);
    node_init(&good, NULL);
    node_hub(&hub, NULL,
             "accounts {\n  A { users [ {user: a, password: a} ] }\n"
             "  B { users [ {user: b, password: b} ] }\n}");
    node_leaf(&bad, &hub, "a:wrong", NULL, NULL);
    node_leaf(&good, &hub, "b:b", NULL, NULL);
    node_start(&hub);
    size_t mark = nd_integ_server_log_mark(hub.srv);
    node_start(&bad);
    nd_integ_server_wait_log(hub.srv, mark, "authentication error - User \"a\"");
    cr_assert_eq(nd_integ_num_leafs_at(__FILE__, __LINE__, hub.mport), 0);
    node_start(&good);
    nd_integ_wait_leafs(hub.mport, 1);
    char *body = nd_integ_http_get(hub.mport, "/leafz");
    json_error_t err;
    json_t *lz = json_loads(body, 0, &err);
    cr_assert_not_null(lz, "%s", body);
    json_t *l0 = json_array_get(json_object_get(lz, "leafs"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(l0, "account")), "B", "%s", body);
    json_decref(lz);
    free(body);
    node_free(&good);
    node_free(&bad);
    node_free(&hub);
}

/* ---- issue 16 part 1: TLS, permissions, credentials, min_version, loops ---- */

/* Three tests of one case: both sides the server under test, our leaf on a reference hub, a
 * reference leaf on our hub. */
#define ROLES(name)                                                                                \
    Test(integ_leaf, name)                                                                         \
    {                                                                                              \
        name##_case(NULL, NULL);                                                                   \
    }                                                                                              \
    Test(integ_leaf, name##_leaf_to_reference_hub)                                                 \
    {                                                                                              \
        name##_case(ref_or_skip(), NULL);                                                          \
    }                                                                                              \
    Test(integ_leaf, name##_reference_leaf_to_hub)                                                 \
    {                                                                                              \
        const char *ref = ref_or_skip();                                                           \
        name##_case(NULL, ref);                                                                    \
    }

/* A CA and a certificate it signed for 127.0.0.1 (server and client use), made now with the
 * openssl command in n's config directory (dir receives it, with a trailing slash). */
static void
make_certs(node_t *n, char *dir, size_t cap)
{
    nd_integ_conf_file(&n->cf, "", dir, cap);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "(set -e; cd %s; K='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'; "
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj '/CN=leaf CA'; "
             "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n"
             "extendedKeyUsage=serverAuth,clientAuth\\n' > ext; "
             "openssl req $K -keyout r.key -out r.csr -subj '/CN=localhost'; "
             "openssl x509 -req -in r.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out r.pem "
             "-days 2 -extfile ext) >/dev/null 2>&1",
             dir);
    cr_assert_eq(system(cmd), 0, "openssl failed: %s", cmd);
}

/* leafnodes { tls } on the hub, tls { ca_file } on the remote: the hub's INFO goes out in plain
 * text with tls_required (2.9.10 has no TLS-first for leafs), then everything is encrypted. */
static void
tls_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    char dir[128], htls[1024], ltls[512];
    make_certs(&hub, dir, sizeof dir);
    snprintf(htls, sizeof htls,
             "tls { cert_file: \"%sr.pem\", key_file: \"%sr.key\", ca_file: \"%sca.pem\", "
             "timeout: 2 }",
             dir, dir, dir);
    snprintf(ltls, sizeof ltls, "tls { ca_file: \"%sca.pem\", timeout: 2 }", dir);
    node_hub(&hub, htls, NULL);
    node_leaf_x(&leaf, &hub, NULL, NULL, NULL, ltls);
    node_start(&hub);
    nd_integ_conn_t *raw = nd_integ_conn_open_port(hub.lport);
    cr_assert_not_null(strstr(nd_integ_conn_info(raw), "\"tls_required\":true"), "%s",
                       nd_integ_conn_info(raw));
    nd_integ_conn_close(raw);
    node_start(&leaf);
    exercise(&hub, &leaf, NULL, NULL);
    node_free(&leaf);
    node_free(&hub);
}
ROLES(tls)

/* deny_exports: the leaf ignores the hub's interest in those subjects (literal, or a wildcard
 * whose messages it then does not send); deny_imports: the leaf never asks for them. */
static void
deny_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    node_hub(&hub, NULL, NULL);
    node_leaf_x(&leaf, &hub, NULL, NULL, NULL,
                "deny_imports: [\"imp.>\"]\n  deny_exports: [\"exp.>\"]");
    node_start(&hub);
    node_start(&leaf);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    nd_integ_conn_t *h = client(&hub, NULL), *l = client(&leaf, NULL);
    int hbase = leaf_base(hub.mport), lbase = leaf_base(leaf.mport);

    /* exports: exp.x is never asked for; exp.> is, but exp.x messages do not go */
    ND_SEND(h, "SUB exp.x 1\r\nSUB exp.> 5\r\nSUB ok.x 2\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    wait_leaf_subs(leaf.mport, lbase + 2);
    ND_SEND(l, "PUB exp.x 1\r\nA\r\nPUB ok.x 1\r\nB\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    ND_EXPECT(h, "MSG ok.x 2 1\r\nB\r\n");

    /* imports: the hub never hears of imp.x */
    ND_SEND(l, "SUB imp.x 3\r\nSUB ok.y 4\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub.mport, hbase + 1);
    ND_SEND(h, "PUB imp.x 1\r\nA\r\nPUB ok.y 1\r\nB\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_EXPECT(l, "MSG ok.y 4 1\r\nB\r\n");
    /* The leaf's /varz lists the remote with its denies (no listener fields without a port). */
    char *body = nd_integ_http_get(leaf.mport, "/varz");
    json_error_t err;
    json_t *o = json_loads(body, 0, &err);
    cr_assert_not_null(o, "%s", body);
    json_t *lb = json_object_get(o, "leaf");
    cr_assert_null(json_object_get(lb, "port"), "%s", body);
    json_t *r0 = json_array_get(json_object_get(lb, "remotes"), 0);
    char url[64];
    snprintf(url, sizeof url, "127.0.0.1:%d", hub.lport);
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(r0, "urls"), 0)), url, "%s",
                     body);
    cr_assert_str_eq(json_string_value(json_array_get(jget(r0, "deny.imports"), 0)), "imp.>", "%s",
                     body);
    cr_assert_str_eq(json_string_value(json_array_get(jget(r0, "deny.exports"), 0)), "exp.>", "%s",
                     body);
    json_decref(o);
    free(body);
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
}
ROLES(deny)

/* The leaf logs in as a client user with permissions: what it may publish and subscribe to
 * (the hub's INFO tells the leaf, and the hub enforces them turned around). */
static void
user_perms_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    node_hub(&hub, NULL,
             "authorization { users [\n"
             "  {user: lu, password: lp, permissions: { publish: { deny: [\"nopub.>\"] }, "
             "subscribe: { deny: [\"nosub.>\"] } } }\n"
             "  {user: c, password: c}\n] }");
    node_leaf(&leaf, &hub, "lu:lp", NULL, NULL);
    node_start(&hub);
    node_start(&leaf);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    nd_integ_conn_t *h = client(&hub, "\"user\":\"c\",\"pass\":\"c\""), *l = client(&leaf, NULL);
    int hbase = leaf_base(hub.mport), lbase = leaf_base(leaf.mport);

    /* what the leaf may publish: the hub never asks it for nopub.x */
    ND_SEND(h, "SUB nopub.x 1\r\nSUB ok.x 2\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    wait_leaf_subs(leaf.mport, lbase + 1);
    ND_SEND(l, "PUB nopub.x 1\r\nA\r\nPUB ok.x 1\r\nB\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    ND_EXPECT(h, "MSG ok.x 2 1\r\nB\r\n");

    /* what it may subscribe to: it never asks for nosub.x (the hub would close it) */
    ND_SEND(l, "SUB nosub.x 3\r\nSUB ok.y 4\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub.mport, hbase + 1);
    ND_SEND(h, "PUB nosub.x 1\r\nA\r\nPUB ok.y 1\r\nB\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_EXPECT(l, "MSG ok.y 4 1\r\nB\r\n");
    cr_assert_eq(nd_integ_num_leafs_at(__FILE__, __LINE__, hub.mport), 1);
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
}
ROLES(user_perms)

/* A hub's min_version above the leaf's version: the hub refuses it (INFO, then the -ERR); a
 * natsd leaf then waits 5 s before it dials again and says so. */
static void
min_version_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    node_hub(&hub, "min_version: \"2.11.0\"", NULL);
    node_leaf(&leaf, &hub, NULL, NULL, NULL);
    node_start(&hub);
    size_t hmark = nd_integ_server_log_mark(hub.srv);
    node_start(&leaf);
    nd_integ_server_wait_log(hub.srv, hmark,
                             "connection rejected since minimum version required is \"2.11.0\"");
    if (leaf_bin == NULL && !nd_integ_is_reference())
        nd_integ_server_wait_log(leaf.srv, 0,
                                 "Leafnode connection dropped due to minimum version "
                                 "requirement. Delaying attempt to reconnect for 5s");
    cr_assert_eq(nd_integ_num_leafs_at(__FILE__, __LINE__, hub.mport), 0);
    node_free(&leaf);
    node_free(&hub);
}
ROLES(min_version)

/* Two servers, each the other's hub and leaf: each one's loop detection subject comes back to
 * it; the refused remote waits 30 s before it dials again, as nats-server, and says so. */
static void
loop_case(const char *b_bin)
{
    node_t a, b;
    node_init(&a, NULL);
    node_init(&b, b_bin);
    a.lport = nd_integ_fresh_port();
    b.lport = nd_integ_fresh_port();
    node_t *n[2] = {&a, &b};
    for (int i = 0; i < 2; i++)
        snprintf(n[i]->text, sizeof n[i]->text,
                 "listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\nleafnodes {\n"
                 "  listen: 127.0.0.1:%d\n  reconnect: 1\n"
                 "  remotes [ { url: \"nats-leaf://127.0.0.1:%d\" } ]\n}\n",
                 n[i]->port, n[i]->mport, n[i]->lport, n[1 - i]->lport);
    node_start(&a);
    node_start(&b);
    nd_integ_server_wait_log(a.srv, 0,
                             "Loop detected for leafnode account=\"$G\". Delaying attempt to "
                             "reconnect for 30s");
    node_free(&b);
    node_free(&a);
}

Test(integ_leaf, loop_detected)
{
    loop_case(NULL);
}

Test(integ_leaf, loop_detected_with_reference)
{
    loop_case(ref_or_skip());
}

/* ---- credentials and nkeys ---- */

typedef struct tkey {
    char seed[ND_NKEY_SEED_LEN + 1];
    char pub[ND_NKEY_PUBLIC_LEN + 1];
} tkey_t;

static tkey_t
key_new(uint8_t role)
{
    tkey_t k;
    uint8_t raw[32], pub[32];
    cr_assert(nd_nkey_random(raw, sizeof raw));
    cr_assert(nd_nkey_seed_public(raw, pub));
    nd_nkey_encode_seed(role, raw, k.seed);
    nd_nkey_encode_public(role, pub, k.pub);
    return k;
}

/* A remote with `nkey` (a user seed) on a hub whose users include that nkey (2.9.10 has no
 * remote nkey: our leaf only). */
static void
nkey_case(const char *hub_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, NULL);
    tkey_t u = key_new(ND_NKEY_PREFIX_USER);
    char top[512], rem[256];
    snprintf(top, sizeof top, "authorization { users [ {nkey: \"%s\"}, {user: c, password: c} ] }",
             u.pub);
    snprintf(rem, sizeof rem, "nkey: \"%s\"", u.seed);
    node_hub(&hub, NULL, top);
    node_leaf_x(&leaf, &hub, NULL, NULL, NULL, rem);
    node_start(&hub);
    node_start(&leaf);
    exercise(&hub, &leaf, "\"user\":\"c\",\"pass\":\"c\"", NULL);
    node_free(&leaf);
    node_free(&hub);
}

Test(integ_leaf, nkey)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server 2.9.10 has no remote nkey");
    nkey_case(NULL);
}

Test(integ_leaf, nkey_leaf_to_reference_hub)
{
    nkey_case(ref_or_skip());
}

static char *
sign_jwt(json_t *claims, const char *seed)
{
    char *tok = NULL;
    cr_assert_eq(nd_jwt_encode(claims, seed, strlen(seed), 0, &tok), ND_OK);
    json_decref(claims);
    char *out = strdup(tok);
    free(tok);
    return out;
}

/* A client of an operator-mode server: CONNECT with jwt and INFO's nonce signed by seed. */
static nd_integ_conn_t *
jwt_client(const node_t *n, const char *jwt, const char *seed)
{
    nd_integ_conn_t *c = nd_integ_conn_open_port(n->port);
    const char *info = nd_integ_conn_info(c);
    const char *p = strstr(info, "\"nonce\":\"");
    cr_assert_not_null(p, "INFO without a nonce: %s", info);
    p += 9;
    const char *e = strchr(p, '"');
    char *sig = NULL;
    cr_assert(nd_jwt_sign_nonce(seed, strlen(seed), p, (size_t)(e - p), &sig));
    size_t len = strlen(jwt) + 512;
    char *line = malloc(len);
    snprintf(line, len,
             "CONNECT {\"verbose\":false,\"protocol\":1,\"jwt\":\"%s\",\"sig\":\"%s\"}\r\nPING\r\n",
             jwt, sig);
    ND_SENDS(c, line);
    ND_EXPECT(c, "PONG\r\n");
    free(line);
    free(sig);
    return c;
}

/* An operator-mode hub (MEMORY resolver, one account); the leaf's remote logs in with a
 * credentials file (a user JWT of that account and its seed), signing the hub's nonce. */
static void
creds_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    tkey_t op = key_new(ND_NKEY_PREFIX_OPERATOR), acc = key_new(ND_NKEY_PREFIX_ACCOUNT),
           user = key_new(ND_NKEY_PREFIX_USER);
    char *op_jwt = sign_jwt(json_pack("{s:s, s:s, s:{s:s, s:i}}", "sub", op.pub, "name", "O",
                                      "nats", "type", "operator", "version", 2),
                            op.seed);
    json_t *lim =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I}", "subs", (json_int_t)-1, "data",
                  (json_int_t)-1, "payload", (json_int_t)-1, "imports", (json_int_t)-1, "exports",
                  (json_int_t)-1, "wildcards", 1, "conn", (json_int_t)-1, "leaf", (json_int_t)-1);
    char *acc_jwt = sign_jwt(json_pack("{s:s, s:s, s:{s:s, s:i, s:o}}", "sub", acc.pub, "name", "A",
                                       "nats", "type", "account", "version", 2, "limits", lim),
                             op.seed);
    char *user_jwt =
        sign_jwt(json_pack("{s:s, s:s, s:{s:s, s:i, s:I, s:I, s:I}}", "sub", user.pub, "name", "u",
                           "nats", "type", "user", "version", 2, "subs", (json_int_t)-1, "data",
                           (json_int_t)-1, "payload", (json_int_t)-1),
                 acc.seed);
    char opath[192], cpath[192];
    nd_integ_conf_file(&hub.cf, "op.jwt", opath, sizeof opath);
    nd_integ_write_file(opath, op_jwt);
    nd_integ_conf_file(&leaf.cf, "leaf.creds", cpath, sizeof cpath);
    char creds[4096];
    snprintf(creds, sizeof creds,
             "-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
             "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n",
             user_jwt, user.seed);
    nd_integ_write_file(cpath, creds);
    char top[2048], rem[256];
    snprintf(top, sizeof top,
             "operator: \"%s\"\nresolver: MEMORY\nresolver_preload: {\n  %s: \"%s\"\n}", opath,
             acc.pub, acc_jwt);
    snprintf(rem, sizeof rem, "credentials: \"%s\"", cpath);
    node_hub(&hub, NULL, top);
    node_leaf_x(&leaf, &hub, NULL, NULL, NULL, rem);
    node_start(&hub);
    node_start(&leaf);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    /* The hub binds the leaf to the user's account. */
    char *body = nd_integ_http_get(hub.mport, "/leafz");
    cr_assert_not_null(strstr(body, acc.pub), "%s", body);
    free(body);
    nd_integ_conn_t *h = jwt_client(&hub, user_jwt, user.seed), *l = client(&leaf, NULL);
    int hbase = leaf_base(hub.mport), lbase = leaf_base(leaf.mport);
    ND_SEND(h, "SUB c.h 1\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    wait_leaf_subs(leaf.mport, lbase + 1);
    ND_SEND(l, "PUB c.h 2\r\nhi\r\nSUB c.l 2\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    ND_EXPECT(h, "MSG c.h 1 2\r\nhi\r\n");
    wait_leaf_subs(hub.mport, hbase + 1);
    ND_SEND(h, "PUB c.l 2\r\nho\r\n");
    ND_EXPECT(l, "MSG c.l 2 2\r\nho\r\n");
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
    free(op_jwt);
    free(acc_jwt);
    free(user_jwt);
}
ROLES(creds)

/* ---- issue 16 part 3: clusters, leafnode_urls, queue groups, two leafs ---- */

/* Makes n a hub in cluster "C" (cport: its route port), with a route to the server whose route
 * port is peer_cport (0: none). */
static void
node_cluster_hub(node_t *n, const char *name, int cport, int peer_cport, const char *leaf_extra)
{
    n->lport = nd_integ_fresh_port();
    char routes[128] = "";
    if (peer_cport != 0)
        snprintf(routes, sizeof routes, ", routes: [\"nats-route://127.0.0.1:%d\"]", peer_cport);
    snprintf(n->text, sizeof n->text,
             "server_name: %s\nlisten: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\n"
             "cluster { name: C, listen: \"127.0.0.1:%d\"%s }\n"
             "leafnodes {\n  listen: 127.0.0.1:%d\n  %s\n}\n",
             name, n->port, n->mport, cport, routes, n->lport, leaf_extra ? leaf_extra : "");
}

/* A hub cluster of two (A, B) and a leaf configured with A's URL only: a subscription on the
 * leaf reaches B over the route; the leaf learns B's leafnode URL from A's INFO
 * (leafnode_urls) and, when A goes, reconnects to B. */
static void
cluster_case(const char *hub_bin, const char *leaf_bin)
{
    node_t a, b, leaf;
    node_init(&a, hub_bin);
    node_init(&b, hub_bin);
    node_init(&leaf, leaf_bin);
    int acport = nd_integ_fresh_port(), bcport = nd_integ_fresh_port();
    node_cluster_hub(&a, "A", acport, 0, NULL);
    node_cluster_hub(&b, "B", bcport, acport, NULL);
    node_leaf(&leaf, &a, NULL, NULL, NULL);
    node_start(&a);
    node_start(&b);
    nd_integ_wait_routes(a.mport, 1);
    nd_integ_wait_routes(b.mport, 1);
    node_start(&leaf); /* after the route: A's first INFO names B's leafnode URL */
    nd_integ_wait_leafs(a.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);

    nd_integ_conn_t *l = client(&leaf, NULL), *pb = client(&b, NULL);
    ND_SEND(l, "SUB over.route 1\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    nd_integ_wait_route_sub(b.mport, "over.route", 1);
    ND_SEND(pb, "PUB over.route 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(pb, "PONG\r\n");
    ND_EXPECT(l, "MSG over.route 1 2\r\nhi\r\n");

    node_stop(&a);
    nd_integ_wait_leafs(b.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    /* The leaf's interest comes back with it. */
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (;;) {
        char *body = nd_integ_http_get(b.mport, "/leafz?subs=1");
        bool has = strstr(body, "over.route") != NULL;
        free(body);
        if (has)
            break;
        cr_assert(nd_integ_now_ms() < deadline, "B never learnt the leaf's interest");
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    ND_SEND(pb, "PUB over.route 2\r\nho\r\nPING\r\n");
    ND_EXPECT(pb, "PONG\r\n");
    ND_EXPECT(l, "MSG over.route 1 2\r\nho\r\n");
    nd_integ_conn_close(pb);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&b);
    node_free(&a);
}
ROLES(cluster)

/* A queue group with a member on the hub and one on the leaf: each side's publishes go to its
 * own member (nats-server prefers local members over a leaf's). */
static void
queue_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    node_hub(&hub, NULL, NULL);
    node_leaf(&leaf, &hub, NULL, NULL, NULL);
    node_start(&hub);
    node_start(&leaf);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    nd_integ_conn_t *h = client(&hub, NULL), *l = client(&leaf, NULL);
    int hbase = leaf_base(hub.mport), lbase = leaf_base(leaf.mport);
    ND_SEND(h, "SUB qs q 1\r\nSUB mark.h 2\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_SEND(l, "SUB qs q 1\r\nSUB mark.l 2\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub.mport, hbase + 2);
    wait_leaf_subs(leaf.mport, lbase + 2);
    char burst[1024] = "";
    for (int i = 0; i < 20; i++)
        strcat(burst, "PUB qs 1\r\nx\r\n");
    /* from the hub: all to the hub's member; then the leaf's first message is the marker */
    nd_integ_conn_t *p = client(&hub, NULL);
    ND_SENDS(p, burst);
    ND_SEND(p, "PUB mark.l 1\r\nm\r\nPING\r\n");
    ND_EXPECT(p, "PONG\r\n");
    for (int i = 0; i < 20; i++)
        ND_EXPECT(h, "MSG qs 1 1\r\nx\r\n");
    ND_EXPECT(l, "MSG mark.l 2 1\r\nm\r\n");
    /* from the leaf: all to the leaf's member */
    nd_integ_conn_t *q = client(&leaf, NULL);
    ND_SENDS(q, burst);
    ND_SEND(q, "PUB mark.h 1\r\nm\r\nPING\r\n");
    ND_EXPECT(q, "PONG\r\n");
    for (int i = 0; i < 20; i++)
        ND_EXPECT(l, "MSG qs 1 1\r\nx\r\n");
    ND_EXPECT(h, "MSG mark.h 2 1\r\nm\r\n");
    nd_integ_conn_close(p);
    nd_integ_conn_close(q);
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
}
ROLES(queue)

/* Two leafs on one hub: a message from one reaches a subscriber on the other, through the hub. */
static void
two_leafs_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, l1, l2;
    node_init(&hub, hub_bin);
    node_init(&l1, NULL);
    node_init(&l2, leaf_bin);
    node_hub(&hub, NULL, NULL);
    node_leaf(&l1, &hub, NULL, NULL, NULL);
    node_leaf(&l2, &hub, NULL, NULL, NULL);
    node_start(&hub);
    node_start(&l1);
    node_start(&l2);
    nd_integ_wait_leafs(hub.mport, 2);
    nd_integ_wait_leafs(l1.mport, 1);
    nd_integ_wait_leafs(l2.mport, 1);
    nd_integ_conn_t *s = client(&l1, NULL), *p = client(&l2, NULL);
    int base = leaf_base(l2.mport);
    ND_SEND(s, "SUB across 1\r\nPING\r\n");
    ND_EXPECT(s, "PONG\r\n");
    wait_leaf_subs(l2.mport, base + 1);
    ND_SEND(p, "PUB across 3\r\nyes\r\nPING\r\n");
    ND_EXPECT(p, "PONG\r\n");
    ND_EXPECT(s, "MSG across 1 3\r\nyes\r\n");
    nd_integ_conn_close(s);
    nd_integ_conn_close(p);
    node_free(&l2);
    node_free(&l1);
    node_free(&hub);
}
ROLES(two_leafs)

/* leafnodes { advertise } replaces the listener's address in leafnode_urls; no_advertise keeps
 * it there (2.9.10: it only leaves it out of the cluster's gossip). */
Test(integ_leaf, advertise)
{
    node_t hub, quiet;
    node_init(&hub, NULL);
    node_init(&quiet, NULL);
    node_hub(&hub, "advertise: \"leafs.example.com:7422\"", NULL);
    node_hub(&quiet, "no_advertise: true", NULL);
    node_start(&hub);
    node_start(&quiet);
    nd_integ_conn_t *c = nd_integ_conn_open_port(hub.lport);
    cr_assert_not_null(
        strstr(nd_integ_conn_info(c), "\"leafnode_urls\":[\"leafs.example.com:7422\"]"), "%s",
        nd_integ_conn_info(c));
    nd_integ_conn_close(c);
    c = nd_integ_conn_open_port(quiet.lport);
    char want[64];
    snprintf(want, sizeof want, "\"leafnode_urls\":[\"127.0.0.1:%d\"]", quiet.lport);
    cr_assert_not_null(strstr(nd_integ_conn_info(c), want), "%s", nd_integ_conn_info(c));
    nd_integ_conn_close(c);
    node_free(&quiet);
    node_free(&hub);
}

/* ---- issue 16 part 4: monitoring ---- */

/* /leafz?subs=1 lists the leaf's interest, /varz has the leaf block and the count, /metrics
 * (natsd only) the leafnode families. */
static void
monitoring_case(const char *hub_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, NULL);
    node_hub(&hub, NULL, NULL);
    node_leaf(&leaf, &hub, NULL, NULL, NULL);
    node_start(&hub);
    node_start(&leaf);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    nd_integ_conn_t *l = client(&leaf, NULL);
    int base = leaf_base(hub.mport);
    ND_SEND(l, "SUB mon.sub 1\r\nPUB mon.pub 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub.mport, base + 1);

    char *body = nd_integ_http_get(hub.mport, "/leafz?subs=1");
    json_error_t err;
    json_t *o = json_loads(body, 0, &err);
    cr_assert_not_null(o, "%s", body);
    json_t *l0 = json_array_get(json_object_get(o, "leafs"), 0);
    json_t *list = json_object_get(l0, "subscriptions_list");
    bool found = false;
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) found |= strcmp(json_string_value(v), "mon.sub") == 0;
    cr_assert(found, "%s", body);
    cr_assert_eq(json_array_size(list),
                 (size_t)json_integer_value(json_object_get(l0, "subscriptions")), "%s", body);
    json_decref(o);
    free(body);

    body = nd_integ_http_get(hub.mport, "/varz");
    o = json_loads(body, 0, &err);
    cr_assert_not_null(o, "%s", body);
    json_t *leafb = json_object_get(o, "leaf");
    cr_assert_eq(json_integer_value(json_object_get(leafb, "port")), hub.lport, "%s", body);
    cr_assert_eq(json_integer_value(json_object_get(leafb, "auth_timeout")), 2, "%s", body);
    cr_assert_eq(json_integer_value(json_object_get(o, "leafnodes")), 1, "%s", body);
    json_decref(o);
    free(body);

    if (hub_bin == NULL && !nd_integ_is_reference()) {
        body = nd_integ_http_get(hub.mport, "/metrics");
        cr_assert_not_null(strstr(body, "\nnatsd_leafnodes 1\n"), "%s", body);
        cr_assert_not_null(strstr(body, "\nnatsd_leafnode_subscriptions "), "%s", body);
        free(body);
    }
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
}

Test(integ_leaf, monitoring)
{
    monitoring_case(NULL);
}

Test(integ_leaf, monitoring_reference_hub)
{
    monitoring_case(ref_or_skip());
}

/* ---- issue 16 part 5: JetStream across leaf nodes ---- */

/* Sends a request on subj (body) with reply inbox and returns the reply's JSON (owned). */
static json_t *
js_req(nd_integ_conn_t *c, const char *subj, const char *inbox, const char *body)
{
    char line[1024];
    snprintf(line, sizeof line, "PUB %s %s %zu\r\n%s\r\n", subj, inbox, strlen(body), body);
    ND_SENDS(c, line);
    js_msg_t m = js_read_msg(c);
    cr_assert_str_eq(m.subject, inbox, "%s", m.line);
    json_error_t err;
    json_t *o = json_loads(m.data, 0, &err);
    cr_assert_not_null(o, "%s", m.data);
    js_msg_free(&m);
    return o;
}

static void
js_node(node_t *n, const char *domain, char *out, size_t cap)
{
    char dir[160];
    nd_integ_conf_file(&n->cf, "js", dir, sizeof dir);
    snprintf(out, cap, "jetstream { store_dir: \"%s\", domain: %s }", dir, domain);
}

/* Both sides run JetStream, domains "hub" and "leaf": $JS.API is answered once, by the
 * client's own side; the other side is reached by its domain. A stream of the hub, mirrored into
 * the leaf's domain with external api $JS.hub.API, is read on the leaf. */
static void
jetstream_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    char hjs[256], ljs[256];
    js_node(&hub, "hub", hjs, sizeof hjs);
    js_node(&leaf, "leaf", ljs, sizeof ljs);
    node_hub(&hub, NULL, hjs);
    node_leaf(&leaf, &hub, NULL, NULL, ljs);
    node_start(&hub);
    node_start(&leaf);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    nd_integ_conn_t *h = client(&hub, "\"headers\":true,\"no_responders\":true");
    nd_integ_conn_t *l = client(&leaf, "\"headers\":true,\"no_responders\":true");
    ND_SEND(h, "SUB _I.h.> 1\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_SEND(l, "SUB _I.l.> 1\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    /* Each side knows the other's inbox and its domain's API ($JS.<domain>.API.>, or
     * nats-server's mapping sources $JS.<domain>.API.INFO, ...). */
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (;;) {
        char *lb = nd_integ_http_get(leaf.mport, "/leafz?subs=1");
        char *hb = nd_integ_http_get(hub.mport, "/leafz?subs=1");
        /* (nats-server writes '>' as \u003e) */
        bool ok = strstr(lb, "\"_I.h.") != NULL && strstr(lb, "\"$JS.hub.API.") != NULL &&
                  strstr(hb, "\"_I.l.") != NULL && strstr(hb, "\"$JS.leaf.API.") != NULL;
        if (!ok && nd_integ_now_ms() > deadline)
            cr_assert_fail("the domains' interest never crossed the leaf connection:\n%s\n%s", lb,
                           hb);
        free(lb);
        free(hb);
        if (ok)
            break;
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }

    json_t *o = js_req(l, "$JS.API.INFO", "_I.l.1", "");
    cr_assert_str_eq(json_string_value(json_object_get(o, "domain")), "leaf");
    json_decref(o);
    o = js_req(h, "$JS.API.INFO", "_I.h.1", "");
    cr_assert_str_eq(json_string_value(json_object_get(o, "domain")), "hub");
    json_decref(o);
    o = js_req(l, "$JS.hub.API.INFO", "_I.l.2", "");
    cr_assert_str_eq(json_string_value(json_object_get(o, "domain")), "hub");
    json_decref(o);
    o = js_req(h, "$JS.leaf.API.INFO", "_I.h.2", "");
    cr_assert_str_eq(json_string_value(json_object_get(o, "domain")), "leaf");
    json_decref(o);
    /* A second answer to _I.l.1 would have come back over the leaf connection before the
     * answer to _I.l.2 did (js_req checked the inbox of each). */

    o = js_req(h, "$JS.API.STREAM.CREATE.KV_b", "_I.h.3",
               "{\"name\":\"KV_b\",\"subjects\":[\"$KV.b.>\"],\"max_msgs_per_subject\":1,"
               "\"storage\":\"file\",\"allow_direct\":true}");
    cr_assert_null(json_object_get(o, "error"), "%s", json_dumps(o, 0));
    json_decref(o);
    ND_SEND(h, "PUB $KV.b.k _I.h.4 2\r\nv1\r\n");
    js_msg_t ack = js_read_msg(h);
    cr_assert_not_null(strstr(ack.data, "\"seq\":1"), "%s", ack.data);
    js_msg_free(&ack);
    o = js_req(l, "$JS.API.STREAM.CREATE.KV_m", "_I.l.3",
               "{\"name\":\"KV_m\",\"storage\":\"file\",\"mirror\":{\"name\":\"KV_b\","
               "\"external\":{\"api\":\"$JS.hub.API\",\"deliver\":\"\"}}}");
    cr_assert_null(json_object_get(o, "error"), "%s", json_dumps(o, 0));
    json_decref(o);
    deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (int i = 0;; i++) {
        char inbox[32];
        snprintf(inbox, sizeof inbox, "_I.l.i%d", i);
        o = js_req(l, "$JS.API.STREAM.INFO.KV_m", inbox, "");
        json_int_t msgs = json_integer_value(jget(o, "state.messages"));
        json_decref(o);
        if (msgs == 1)
            break;
        cr_assert(nd_integ_now_ms() < deadline, "the mirror never got the hub's message");
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
    o = js_req(l, "$JS.API.STREAM.MSG.GET.KV_m", "_I.l.4", "{\"seq\":1}");
    cr_assert_str_eq(json_string_value(jget(o, "message.subject")), "$KV.b.k", "%s",
                     json_dumps(o, 0));
    cr_assert_str_eq(json_string_value(jget(o, "message.data")), "djE=", "%s", json_dumps(o, 0));
    json_decref(o);
    /* A KV put from the leaf into the hub's domain ($JS.hub.API.$KV.> is $KV.> there): the
     * hub's stream acknowledges it. */
    ND_SEND(l, "PUB $JS.hub.API.$KV.b.k2 _I.l.5 2\r\nv2\r\n");
    ack = js_read_msg(l);
    cr_assert_str_eq(ack.subject, "_I.l.5", "%s", ack.line);
    cr_assert_not_null(strstr(ack.data, "\"seq\":2"), "%s", ack.data);
    cr_assert_not_null(strstr(ack.data, "\"domain\":\"hub\""), "%s", ack.data);
    js_msg_free(&ack);
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
    node_free(&leaf);
    node_free(&hub);
}
ROLES(jetstream)

/* ---- issue 16 part 2: refusals and dial errors ---- */

/* A leaf whose cluster has the hub's name: the hub refuses it, the remote waits 30 s and says
 * so (a natsd leaf). */
static void
same_cluster_case(const char *hub_bin, const char *leaf_bin)
{
    node_t hub, leaf;
    node_init(&hub, hub_bin);
    node_init(&leaf, leaf_bin);
    node_cluster_hub(&hub, "H", nd_integ_fresh_port(), 0, NULL);
    char top[256];
    snprintf(top, sizeof top, "cluster { name: C, listen: \"127.0.0.1:%d\" }", nd_integ_fresh_port());
    node_leaf(&leaf, &hub, NULL, NULL, top);
    node_start(&hub);
    size_t hmark = nd_integ_server_log_mark(hub.srv);
    node_start(&leaf);
    nd_integ_server_wait_log(hub.srv, hmark, "remote leafnode has same cluster name");
    if (leaf_bin == NULL && !nd_integ_is_reference())
        nd_integ_server_wait_log(leaf.srv, 0,
                                 "Leafnode connection dropped with same cluster name error. "
                                 "Delaying attempt to reconnect for 30s");
    cr_assert_eq(nd_integ_num_leafs_at(__FILE__, __LINE__, hub.mport), 0);
    node_free(&leaf);
    node_free(&hub);
}
ROLES(same_cluster)

/* A remote nobody listens on: the first failed dial is an error naming the host and port and
 * the attempt (connect_error_reports). */
Test(integ_leaf, dial_error_reported)
{
    node_t hub, leaf;
    node_init(&hub, NULL);
    node_init(&leaf, NULL);
    hub.lport = nd_integ_fresh_port(); /* never started */
    node_leaf(&leaf, &hub, NULL, NULL, NULL);
    node_start(&leaf);
    char want[128];
    snprintf(want, sizeof want,
             "Error trying to connect as leafnode to remote server \"127.0.0.1:%d\" (attempt 1)",
             hub.lport);
    nd_integ_server_wait_log(leaf.srv, 0, want);
    node_free(&leaf);
    node_free(&hub);
}
