/* Integration tests of gateways (issue 16 part 3): super-clusters of two clusters, A and B, each
 * of two servers joined by routes, the clusters joined by gateways. Every server's config names
 * its client, monitoring, cluster and gateway ports (all taken before the start, so a killed
 * server restarts on the same ports) and lists both clusters' gateway URLs, as nats-server
 * deployments usually do (an entry for its own cluster is allowed and ignored).
 *
 * Every expectation was first checked against the reference nats-server 2.9.10
 * (integ.gateway.reference runs this file with NATSD_TEST_SERVER=/usr/sbin/nats-server). The
 * interop tests run one cluster of natsd and one of the reference side by side and are skipped
 * when the server under test is the reference itself.
 *
 * Synchronisation: gateway connections and the remote interest a server has learnt are waited
 * for by polling /gatewayz (outbound_gateways, and accs=1's num_subs / num_queue_subs for the
 * global account) with a hang guard; "this was not delivered" is shown by a later message on the
 * same path arriving first; a client's own state by a PING round trip or a libnats flush.
 * Nothing sleeps to wait for something and nothing asserts on time.
 *
 * What the reference does, noted where a test depends on it:
 * - interest-only mode: a server's outbound connection knows every subscription of the remote
 *   cluster in an account (RS+ after "gateway_cmd" 2/3), and /gatewayz?accs=1 counts them per
 *   account on the outbound entry (num_subs, queue ones again in num_queue_subs).
 * - a reply subject crossing a gateway is sent as "_GR_.<cluster>.<server>.<reply>"; the client
 *   on the other side sees the original reply, and its answer to it goes straight back to the
 *   requester's server even before the requester's interest has crossed.
 * - a queue group with a member in the publisher's cluster never sends to the other cluster.
 * - on the gateway port, anything but CONNECT first gets -ERR 'Authorization Violation'; a
 *   client's CONNECT (no "gateway" field) gets -ERR 'attempted to connect to gateway port'.
 * - with reject_unknown_cluster, a gateway not in the list is refused: "Rejecting connection
 *   from gateway "C"" on the accepting side.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <jansson.h>
#include <nats/nats.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "harness.h"
#include "integ_util.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_gateway, .fini = suite_fini, .timeout = 120);

#define OK(call) ND_NATS_OK(call)

/* ---- nodes ---- */

typedef struct node {
    const char *bin; /* borrowed: the binary this node runs */
    char name[8];
    char cluster[8]; /* the cluster (and gateway) name */
    int port, cport, mport, gport;
    char routes[256];    /* the routes: [...] entries */
    char gateways[1024]; /* the gateways: [...] entries */
    char gextra[768];    /* more lines inside gateway {} */
    nd_integ_conf_t cf;
    nd_integ_server_t *srv;
} node_t;

static void
node_init(node_t *n, const char *name, const char *cluster, const char *bin)
{
    memset(n, 0, sizeof *n);
    n->bin = bin ? bin : nd_integ_server_path();
    snprintf(n->name, sizeof n->name, "%s", name);
    snprintf(n->cluster, sizeof n->cluster, "%s", cluster);
    n->port = nd_integ_fresh_port();
    n->cport = nd_integ_fresh_port();
    n->mport = nd_integ_fresh_port();
    n->gport = nd_integ_fresh_port();
}

static void
node_start(node_t *n)
{
    char text[4096];
    snprintf(text, sizeof text,
             "server_name: %s\n"
             "listen: 127.0.0.1:%d\n"
             "http: 127.0.0.1:%d\n"
             "cluster {\n"
             "  name: %s\n"
             "  listen: 127.0.0.1:%d\n"
             "  routes: [%s]\n"
             "}\n"
             "gateway {\n"
             "  name: %s\n"
             "  listen: 127.0.0.1:%d\n"
             "  gateways: [%s]\n"
             "%s\n"
             "}\n",
             n->name, n->port, n->mport, n->cluster, n->cport, n->routes, n->cluster, n->gport,
             n->gateways, n->gextra);
    nd_integ_conf_write(&n->cf, text);
    const char *args[] = {"-c", n->cf.path, NULL};
    n->srv = nd_integ_server_start_bin(n->bin, args);
    /* nats-server opens its gateway port after the client port: wait for its line, so a test
     * that dials the gateway port finds it listening. */
    nd_integ_server_wait_log(n->srv, 0, "Listening for gateways connections on");
}

static void
node_stop(node_t *n)
{
    if (n->srv != NULL)
        nd_integ_server_stop(n->srv);
    n->srv = NULL;
    nd_integ_conf_remove(&n->cf);
}

static bool
node_is_ref(const node_t *n)
{
    return nd_integ_bin_is_reference(n->bin);
}

/* ---- super-clusters ---- */

/* Adds the gateway entry of cluster name (its servers' gateway URLs) to n. */
static void
gw_entry(node_t *n, const char *name, node_t *const *members, int k)
{
    size_t l = strlen(n->gateways);
    l += (size_t)snprintf(n->gateways + l, sizeof n->gateways - l, "%s{name: %s, urls: [",
                          l ? ", " : "", name);
    for (int i = 0; i < k; i++)
        l += (size_t)snprintf(n->gateways + l, sizeof n->gateways - l, "%s\"nats://127.0.0.1:%d\"",
                              i ? ", " : "", members[i]->gport);
    snprintf(n->gateways + l, sizeof n->gateways - l, "]}");
}

/* Waits until n has an outbound gateway connection to cluster remote (or none: present false). */
static void
wait_outbound(const node_t *n, const char *remote, bool present)
{
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (;;) {
        json_t *gz = nd_integ_get_json(n->mport, "/gatewayz");
        bool has = json_object_get(json_object_get(gz, "outbound_gateways"), remote) != NULL;
        if (has == present) {
            json_decref(gz);
            return;
        }
        if (nd_integ_now_ms() > deadline) {
            char *s = json_dumps(gz, JSON_COMPACT);
            cr_assert_fail("%s (%s): outbound gateway to %s never %s: %s", n->name, n->bin, remote,
                           present ? "appeared" : "went", s);
        }
        json_decref(gz);
        nd_integ_poll_gap();
    }
}

/* Waits until n's outbound gateway to cluster remote knows exactly subs subscriptions (qsubs of
 * them queue subscriptions) of the global account there. */
static void
wait_gw_subs(const node_t *n, const char *remote, int subs, int qsubs)
{
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    char path[96];
    snprintf(path, sizeof path, "/gatewayz?accs=1&gw_name=%s", remote);
    for (;;) {
        json_t *gz = nd_integ_get_json(n->mport, path);
        json_t *out = json_object_get(json_object_get(gz, "outbound_gateways"), remote);
        int ns = 0, nq = 0;
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(out, "accounts"), i, a)
        {
            const char *an = json_string_value(json_object_get(a, "name"));
            if (an != NULL && strcmp(an, "$G") == 0) {
                ns = (int)json_integer_value(json_object_get(a, "num_subs"));
                nq = (int)json_integer_value(json_object_get(a, "num_queue_subs"));
            }
        }
        if (out != NULL && ns == subs && nq == qsubs) {
            json_decref(gz);
            return;
        }
        if (nd_integ_now_ms() > deadline) {
            char *s = json_dumps(gz, JSON_COMPACT);
            cr_assert_fail("%s (%s): the outbound to %s never knew %d subscriptions (%d queue) of "
                           "$G: %s",
                           n->name, n->bin, remote, subs, qsubs, s);
        }
        json_decref(gz);
        nd_integ_poll_gap();
    }
}

/* Clusters A (a[0], a[1]) and B (b[0], b[1]): a[1] routes to a[0], b[1] to b[0]; every server
 * lists both clusters' gateway URLs. Starts them and waits until each has its outbound. */
static void
start_super(node_t a[2], node_t b[2])
{
    node_t *const as[2] = {&a[0], &a[1]}, *const bs[2] = {&b[0], &b[1]};
    for (int i = 0; i < 2; i++) {
        gw_entry(&a[i], "A", as, 2);
        gw_entry(&a[i], "B", bs, 2);
        gw_entry(&b[i], "A", as, 2);
        gw_entry(&b[i], "B", bs, 2);
    }
    snprintf(a[1].routes, sizeof a[1].routes, "\"nats://127.0.0.1:%d\"", a[0].cport);
    snprintf(b[1].routes, sizeof b[1].routes, "\"nats://127.0.0.1:%d\"", b[0].cport);
    for (int i = 0; i < 2; i++) {
        node_start(&a[i]);
        node_start(&b[i]);
    }
    nd_integ_wait_routes(a[0].mport, 1);
    nd_integ_wait_routes(b[0].mport, 1);
    for (int i = 0; i < 2; i++) {
        wait_outbound(&a[i], "B", true);
        wait_outbound(&b[i], "A", true);
    }
}

static void
init_super(node_t a[2], node_t b[2], const char *abin, const char *bbin)
{
    node_init(&a[0], "A1", "A", abin);
    node_init(&a[1], "A2", "A", abin);
    node_init(&b[0], "B1", "B", bbin);
    node_init(&b[1], "B2", "B", bbin);
}

static void
stop_super(node_t a[2], node_t b[2])
{
    for (int i = 1; i >= 0; i--) {
        node_stop(&b[i]);
        node_stop(&a[i]);
    }
}

/* ---- raw clients ---- */

static nd_integ_conn_t *
client(node_t *n)
{
    nd_integ_conn_t *c = nd_integ_conn_open(n->srv);
    ND_SEND(c, "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,"
               "\"no_responders\":true}\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* Reads one MSG frame from c and checks its subject, sid, reply and payload: a reply that
 * crossed a gateway travelled as "_GR_.<cluster>.<server>.<reply>" and is shown as it was
 * published. Returns: the reply as received (free it). */
static char *
expect_msg_reply(nd_integ_conn_t *c, const char *subj, int sid, const char *want_reply,
                 const char *payload)
{
    char *f = nd_integ_read_frame(c);
    cr_assert(f != NULL, "the connection closed");
    char s[128], r[256];
    int id = 0, size = -1;
    cr_assert(sscanf(f, "MSG %127s %d %255s %d", s, &id, r, &size) == 4,
              "not a MSG with a "
              "reply: %s",
              f);
    cr_assert(strcmp(s, subj) == 0 && id == sid, "unexpected frame: %s", f);
    cr_assert(strcmp(r, want_reply) == 0, "reply \"%s\", want \"%s\": %s", r, want_reply, f);
    const char *p = strstr(f, "\r\n");
    cr_assert(p != NULL && strncmp(p + 2, payload, strlen(payload)) == 0 &&
                  size == (int)strlen(payload),
              "payload: %s", f);
    free(f);
    return strdup(r);
}

/* ---- shared checks ---- */

/* Pub/sub from a (cluster remote_a) to a subscriber on b (cluster remote_b), prefix p: exact
 * MSG/HMSG bytes, a reply subject, UNSUB removing the interest, and a request answered across
 * the gateway (the answer finds its way back through the reply subject alone). */
static void
check_pubsub(node_t *a, const char *remote_a, node_t *b, const char *remote_b, const char *p)
{
    nd_integ_context("pub/sub from %s (%s) to %s (%s), prefix %s", a->name, a->bin, b->name, b->bin,
                     p);
    nd_integ_conn_t *cb = client(b), *ca = client(a);
    nd_integ_sendf(cb, "SUB %s.foo 1\r\nSUB %s.bar 2\r\nPING\r\n", p, p);
    ND_EXPECT(cb, "PONG\r\n");
    wait_gw_subs(a, remote_b, 2, 0);

    nd_integ_sendf(ca,
          "PUB %s.foo 5\r\nhello\r\n"
          "HPUB %s.foo 20 22\r\nNATS/1.0\r\nX-K: v\r\n\r\nhi\r\n"
          "PUB %s.foo 0\r\n\r\n"
          "PUB %s.foo reply.1 5\r\nworld\r\n"
          "PING\r\n",
          p, p, p, p);
    ND_EXPECT(ca, "PONG\r\n");
    nd_integ_expectf(cb,
            "MSG %s.foo 1 5\r\nhello\r\n"
            "HMSG %s.foo 1 20 22\r\nNATS/1.0\r\nX-K: v\r\n\r\nhi\r\n"
            "MSG %s.foo 1 0\r\n\r\n",
            p, p, p);
    char subj[64];
    snprintf(subj, sizeof subj, "%s.foo", p);
    free(expect_msg_reply(cb, subj, 1, "reply.1", "world"));

    /* UNSUB: once a knows, a publish on .foo is not sent: the .bar after it comes first. */
    ND_SEND(cb, "UNSUB 1\r\nPING\r\n");
    ND_EXPECT(cb, "PONG\r\n");
    wait_gw_subs(a, remote_b, 1, 0);
    nd_integ_sendf(ca, "PUB %s.foo 4\r\ngone\r\nPUB %s.bar 4\r\nnext\r\nPING\r\n", p, p);
    ND_EXPECT(ca, "PONG\r\n");
    nd_integ_expectf(cb, "MSG %s.bar 2 4\r\nnext\r\n", p);

    /* A request across the gateway, answered at once (the inbox is new on the other side). */
    nd_integ_sendf(cb, "SUB %s.svc 3\r\nPING\r\n", p);
    ND_EXPECT(cb, "PONG\r\n");
    wait_gw_subs(a, remote_b, 2, 0);
    nd_integ_sendf(ca, "SUB _INBOX.%s 9\r\nPUB %s.svc _INBOX.%s 2\r\nhi\r\n", p, p, p);
    char tail[64];
    snprintf(tail, sizeof tail, "_INBOX.%s", p);
    snprintf(subj, sizeof subj, "%s.svc", p);
    char *reply = expect_msg_reply(cb, subj, 3, tail, "hi");
    nd_integ_sendf(cb, "PUB %s 3\r\nack\r\n", reply);
    free(reply);
    nd_integ_expectf(ca, "MSG _INBOX.%s 9 3\r\nack\r\n", p);
    /* The inbox is known on b's side by now: a plain publish there reaches it too. */
    wait_gw_subs(b, remote_a, 1, 0);
    nd_integ_sendf(cb, "PUB _INBOX.%s 4\r\nack2\r\n", p);
    nd_integ_expectf(ca, "MSG _INBOX.%s 9 4\r\nack2\r\n", p);

    ND_SEND(cb, "UNSUB 2\r\nUNSUB 3\r\nPING\r\n");
    ND_EXPECT(cb, "PONG\r\n");
    ND_PING(ca);
    nd_integ_conn_close(ca);
    nd_integ_conn_close(cb);
    wait_gw_subs(a, remote_b, 0, 0);
    wait_gw_subs(b, remote_a, 0, 0);
    nd_integ_context(NULL);
}

/* The request callback of a libnats responder: answers "pong:" + the data. */
static void
on_request(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)sub, (void)closure;
    char buf[128];
    snprintf(buf, sizeof buf, "pong:%.*s", natsMsg_GetDataLength(msg), natsMsg_GetData(msg));
    if (natsMsg_GetReply(msg) != NULL)
        natsConnection_PublishString(nc, natsMsg_GetReply(msg), buf);
    natsMsg_Destroy(msg);
}

static natsConnection *
nats_connect(node_t *n)
{
    char url[64];
    nd_integ_nats_url(n->srv, url, sizeof url);
    natsConnection *nc = NULL;
    OK(natsConnection_ConnectTo(&nc, url));
    return nc;
}

/* Request/reply with libnats: the responder on r (cluster rc), the requester on q. */
static void
check_request(node_t *q, node_t *r, const char *rc, const char *subject)
{
    nd_integ_context("request from %s (%s) to a responder on %s (%s)", q->name, q->bin, r->name,
                     r->bin);
    natsConnection *rconn = nats_connect(r), *qconn = nats_connect(q);
    natsSubscription *sub = NULL;
    OK(natsConnection_Subscribe(&sub, rconn, subject, on_request, NULL));
    OK(natsConnection_FlushTimeout(rconn, ND_INTEG_TIMEOUT_MS));
    wait_gw_subs(q, rc, 1, 0);
    for (int i = 0; i < 10; i++) {
        char data[16], want[32];
        snprintf(data, sizeof data, "r%d", i);
        snprintf(want, sizeof want, "pong:r%d", i);
        natsMsg *reply = NULL;
        OK(natsConnection_RequestString(&reply, qconn, subject, data, ND_INTEG_TIMEOUT_MS));
        cr_assert(natsMsg_GetDataLength(reply) == (int)strlen(want) &&
                      memcmp(natsMsg_GetData(reply), want, strlen(want)) == 0,
                  "reply \"%.*s\", want \"%s\"", natsMsg_GetDataLength(reply),
                  natsMsg_GetData(reply), want);
        natsMsg_Destroy(reply);
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(qconn);
    natsConnection_Destroy(rconn);
    nd_integ_context(NULL);
}

/* Queue group "grp" on <p>.work with a member on local (in the publisher's cluster) and one on
 * far (in the other cluster, far_cluster): every message goes to the local member, none across;
 * once the local member leaves, they all go to the far one. */
static void
check_queue(node_t *pub, node_t *local, node_t *far, const char *far_cluster, const char *p)
{
    enum { N = 50 };
    nd_integ_context("queue group, publisher on %s (%s), prefix %s", pub->name, pub->bin, p);
    nd_integ_conn_t *ml = client(local), *mf = client(far), *pc = client(pub);
    nd_integ_sendf(ml, "SUB %s.work grp 1\r\nPING\r\n", p);
    ND_EXPECT(ml, "PONG\r\n");
    nd_integ_sendf(mf, "SUB %s.work grp 1\r\nSUB %s.end 2\r\nPING\r\n", p, p);
    ND_EXPECT(mf, "PONG\r\n");
    wait_gw_subs(pub, far_cluster, 2, 1);
    if (pub != local) {
        char subj[64];
        snprintf(subj, sizeof subj, "%s.work", p);
        nd_integ_wait_route_sub(pub->mport, subj, 1);
    }
    for (int round = 0; round < 2; round++) {
        char *batch = NULL;
        size_t blen = 0;
        FILE *f = open_memstream(&batch, &blen);
        for (int i = 0; i < N; i++)
            fprintf(f, "PUB %s.work %d\r\n%d\r\n", p, snprintf(NULL, 0, "%d", i), i);
        fprintf(f, "PUB %s.end 0\r\n\r\nPING\r\n", p);
        fclose(f);
        nd_integ_send(pc, batch, blen);
        free(batch);
        ND_EXPECT(pc, "PONG\r\n");
        nd_integ_conn_t *got = round == 0 ? ml : mf;
        for (int i = 0; i < N; i++)
            nd_integ_expectf(got, "MSG %s.work 1 %d\r\n%d\r\n", p, snprintf(NULL, 0, "%d", i), i);
        /* The end marker went the same way as any queue message would have: the far member
         * saw none before it. */
        nd_integ_expectf(mf, "MSG %s.end 2 0\r\n\r\n", p);
        if (round == 0) {
            ND_PING(ml);
            ND_SEND(ml, "UNSUB 1\r\nPING\r\n");
            ND_EXPECT(ml, "PONG\r\n");
            if (pub != local) {
                char subj[64];
                snprintf(subj, sizeof subj, "%s.work", p);
                nd_integ_wait_route_sub(pub->mport, subj, 0);
            } else {
                ND_PING(pc);
            }
        }
    }
    nd_integ_conn_close(ml);
    nd_integ_conn_close(mf);
    nd_integ_conn_close(pc);
    wait_gw_subs(pub, far_cluster, 0, 0);
    nd_integ_context(NULL);
}

/* Returns: the reference binary to run beside natsd, or NULL when the server under test is the
 * reference itself (or there is none). */
static const char *
mixed_reference(void)
{
    const char *ref = nd_integ_reference_path();
    if (nd_integ_is_reference() || ref == NULL)
        return NULL;
    return ref;
}

/* ---- 1. pub/sub and request/reply across the super-cluster ---- */

Test(integ_gateway, pubsub_request_reply)
{
    node_t a[2], b[2];
    init_super(a, b, NULL, NULL);
    start_super(a, b);
    check_pubsub(&a[0], "A", &b[1], "B", "ab");
    check_pubsub(&b[0], "B", &a[1], "A", "ba");
    check_pubsub(&a[1], "A", &b[0], "B", "ab2");
    check_request(&a[0], &b[1], "B", "svc.echo");
    check_request(&b[0], &a[1], "A", "svc.back");
    /* /varz's gateway block names the cluster and its port. */
    json_t *v = nd_integ_get_json(a[0].mport, "/varz");
    json_t *g = json_object_get(v, "gateway");
    cr_assert(json_is_string(json_object_get(g, "name")) &&
                  strcmp(json_string_value(json_object_get(g, "name")), "A") == 0 &&
                  json_integer_value(json_object_get(g, "port")) == a[0].gport,
              "/varz gateway: %s", json_dumps(g, JSON_COMPACT));
    json_decref(v);
    stop_super(a, b);
}

/* ---- 2. queue groups prefer the local cluster ---- */

Test(integ_gateway, queue_prefers_local_cluster)
{
    node_t a[2], b[2];
    init_super(a, b, NULL, NULL);
    start_super(a, b);
    check_queue(&a[0], &a[1], &b[0], "B", "q1");
    check_queue(&b[1], &b[1], &a[0], "A", "q2");
    stop_super(a, b);
}

/* ---- 3. a gateway server killed and restored ---- */

Test(integ_gateway, server_killed_and_restored)
{
    node_t a[2], b[2];
    init_super(a, b, NULL, NULL);
    start_super(a, b);
    nd_integ_conn_t *cb = client(&b[0]), *ca = client(&a[0]);
    ND_SEND(cb, "SUB k.foo 1\r\nPING\r\n");
    ND_EXPECT(cb, "PONG\r\n");
    wait_gw_subs(&a[0], "B", 1, 0);
    ND_SEND(ca, "PUB k.foo 3\r\none\r\nPING\r\n");
    ND_EXPECT(ca, "PONG\r\n");
    ND_EXPECT(cb, "MSG k.foo 1 3\r\none\r\n");
    nd_integ_conn_close(cb);

    /* B1 dies: the interest it carried goes with it, and B2 still serves the cluster. */
    nd_integ_server_kill(b[0].srv);
    b[0].srv = NULL;
    wait_gw_subs(&a[0], "B", 0, 0);
    wait_outbound(&a[0], "B", true);

    /* B1 comes back on the same ports: a new subscriber there gets A1's messages again. */
    node_start(&b[0]);
    nd_integ_wait_routes(b[0].mport, 1);
    wait_outbound(&b[0], "A", true);
    cb = client(&b[0]);
    ND_SEND(cb, "SUB k.foo 1\r\nPING\r\n");
    ND_EXPECT(cb, "PONG\r\n");
    wait_gw_subs(&a[0], "B", 1, 0);
    ND_SEND(ca, "PUB k.foo 3\r\ntwo\r\nPING\r\n");
    ND_EXPECT(ca, "PONG\r\n");
    ND_EXPECT(cb, "MSG k.foo 1 3\r\ntwo\r\n");
    nd_integ_conn_close(cb);
    nd_integ_conn_close(ca);
    stop_super(a, b);
}

/* ---- 4. reject_unknown_cluster ---- */

Test(integ_gateway, reject_unknown_cluster)
{
    node_t a, c;
    node_init(&a, "A1", "A", NULL);
    node_init(&c, "C1", "C", NULL);
    snprintf(a.gextra, sizeof a.gextra, "  reject_unknown_cluster: true");
    node_t *const as[1] = {&a};
    gw_entry(&c, "A", as, 1);
    node_start(&a);
    size_t mark = nd_integ_server_log_mark(a.srv);
    node_start(&c);
    nd_integ_server_wait_log(a.srv, mark, "Rejecting connection from gateway \"C\"");
    json_t *gz = nd_integ_get_json(a.mport, "/gatewayz");
    cr_assert_eq(json_object_size(json_object_get(gz, "inbound_gateways")), 0);
    cr_assert_eq(json_object_size(json_object_get(gz, "outbound_gateways")), 0);
    json_decref(gz);
    node_stop(&c);
    node_stop(&a);
}

/* ---- 5. bad input on the gateway port ---- */

Test(integ_gateway, bad_gateway_input)
{
    node_t a;
    node_init(&a, "A1", "A", NULL);
    node_start(&a);
    /* The gateway INFO: the gateway's name and URL, interest-only mode. */
    nd_integ_conn_t *r = nd_integ_conn_open_port(a.gport);
    const char *info = nd_integ_conn_info(r);
    cr_assert(strstr(info, "\"gateway\":\"A\"") && strstr(info, "\"gateway_iom\":true") &&
                  strstr(info, "\"gateway_nrp\":true"),
              "gateway INFO: %s", info);
    /* Anything but CONNECT first. */
    ND_SEND(r, "GARBAGE\r\n");
    ND_EXPECT(r, "-ERR 'Authorization Violation'\r\n");
    nd_integ_expect_close(r);
    nd_integ_conn_close(r);
    r = nd_integ_conn_open_port(a.gport);
    ND_SEND(r, "PING\r\n");
    ND_EXPECT(r, "-ERR 'Authorization Violation'\r\n");
    nd_integ_expect_close(r);
    nd_integ_conn_close(r);
    /* A client's CONNECT. */
    size_t mark = nd_integ_server_log_mark(a.srv);
    r = nd_integ_conn_open_port(a.gport);
    ND_SEND(r, "CONNECT {\"verbose\":false,\"lang\":\"go\"}\r\n");
    ND_EXPECT(r, "-ERR 'attempted to connect to gateway port'\r\n");
    nd_integ_expect_close(r);
    nd_integ_conn_close(r);
    nd_integ_server_wait_log(a.srv, mark, "attempted to connect to gateway port");
    /* Clients are served, and no gateway came of it. */
    nd_integ_conn_t *cl = client(&a);
    ND_SEND(cl, "SUB ok 1\r\nPUB ok 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(cl, "MSG ok 1 2\r\nhi\r\nPONG\r\n");
    nd_integ_conn_close(cl);
    json_t *gz = nd_integ_get_json(a.mport, "/gatewayz");
    cr_assert_eq(json_object_size(json_object_get(gz, "inbound_gateways")), 0);
    cr_assert(strcmp(json_string_value(json_object_get(gz, "name")), "A") == 0);
    json_decref(gz);
    node_stop(&a);
}

/* ---- 5b. gateway blocks nats-server refuses at start ---- */

Test(integ_gateway, bad_gateway_config)
{
    static const struct {
        const char *conf, *want;
    } cases[] = {
        {"gateway { port: -1 }\n", "nats-server: gateway has no name"},
        {"cluster { name: X, port: -1 }\ngateway { name: Y, port: -1 }\n",
         "nats-server: cluster name conflicts between cluster and gateway definitions"},
        {"gateway { name: Y, port: -1, gateways: [{name: Z}] }\n",
         "nats-server: gateway \"Z\" has no URL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nd_integ_conf_t cf = {0};
        nd_integ_conf_write(&cf, cases[i].conf);
        char cmd[512];
        /* timeout(1) is the hang guard: the server must exit at once. */
        snprintf(cmd, sizeof cmd, "timeout 20 %s -c %s 2>&1", nd_integ_server_path(), cf.path);
        FILE *f = popen(cmd, "r");
        cr_assert(f != NULL);
        char out[4096];
        size_t n = fread(out, 1, sizeof out - 1, f);
        out[n] = '\0';
        int st = pclose(f);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: status %d", cases[i].conf, st);
        cr_expect(strstr(out, cases[i].want) != NULL, "%s: output %s", cases[i].conf, out);
        nd_integ_conf_remove(&cf);
    }
}

/* ---- 5c. a peer older than interest-only mode ---- */

/* A listening socket on a free port of 127.0.0.1 (the fake gateway). */
static int
fake_listen(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 4) == 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    return fd;
}

/* Reads one line (without CRLF) from fd into buf, with the hang guard; payload lines too. */
static void
fake_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_TIMEOUT_MS;
    while (n + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = (int)(deadline - nd_integ_now_ms());
        cr_assert(left > 0 && poll(&p, 1, left) == 1, "the fake gateway read nothing in time");
        char ch;
        cr_assert(read(fd, &ch, 1) == 1, "the connection to the fake gateway closed");
        if (ch == '\n')
            break;
        if (ch != '\r')
            buf[n++] = ch;
    }
    buf[n] = '\0';
}

Test(integ_gateway, optimistic_peer)
{
    /* A gateway B that does not say "gateway_iom" (nats-server before 2.9): the dialing side
     * sends it every message of an account it has not heard A- for, RS+ or not. */
    int fport;
    int lfd = fake_listen(&fport);
    node_t a;
    node_init(&a, "A1", "A", NULL);
    snprintf(a.gateways, sizeof a.gateways, "{name: B, url: \"nats://127.0.0.1:%d\"}", fport);
    node_start(&a);
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    cr_assert(poll(&p, 1, ND_INTEG_PROC_TIMEOUT_MS) == 1, "A1 never dialed the fake gateway");
    int fd = accept(lfd, NULL, NULL);
    cr_assert(fd >= 0);
    const char info[] = "INFO {\"server_id\":\"NFAKEGATEWAY\",\"server_name\":\"fake\","
                        "\"version\":\"2.8.4\",\"proto\":1,\"gateway\":\"B\","
                        "\"gateway_nrp\":true,\"headers\":true}\r\n";
    cr_assert(write(fd, info, sizeof info - 1) == (ssize_t)(sizeof info - 1));
    char line[8192];
    fake_line(fd, line, sizeof line);
    cr_assert(strncmp(line, "CONNECT {", 9) == 0 && strstr(line, "\"gateway\":\"A\""),
              "not a gateway CONNECT: %s", line);
    fake_line(fd, line, sizeof line);
    cr_assert(strncmp(line, "INFO {", 6) == 0 && strstr(line, "\"gateway\":\"A\""),
              "not a gateway INFO: %s", line);
    wait_outbound(&a, "B", true);

    /* Nobody on B subscribed to anything: a publish on A still crosses. */
    nd_integ_conn_t *ca = client(&a);
    ND_SEND(ca, "PUB opt.foo 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(ca, "PONG\r\n");
    /* The server's own traffic may come first (PINGs, $SYS messages and their payload lines):
     * skipped until the message, under fake_line's hang guard. */
    do
        fake_line(fd, line, sizeof line);
    while (strcmp(line, "RMSG $G opt.foo 2") != 0);
    fake_line(fd, line, sizeof line);
    cr_assert_str_eq(line, "hi");
    nd_integ_conn_close(ca);
    close(fd);
    close(lfd);
    node_stop(&a);
}

/* A gateway dialing in, as a peer older than interest-only mode would: every account is switched
 * to interest-only at once, even without interest ("gateway_cmd" 2 and 3, the global account's
 * name in base64), and a message for an account we do not have gets A- back. */
Test(integ_gateway, inbound_switch_and_account_no_interest)
{
    node_t a;
    node_init(&a, "A1", "A", NULL);
    node_start(&a);
    nd_integ_conn_t *r = nd_integ_conn_open_port(a.gport);
    ND_SEND(r, "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"NFAKEGATEWAY\","
               "\"gateway\":\"B\"}\r\n"
               "INFO {\"server_id\":\"NFAKEGATEWAY\",\"server_name\":\"fake\",\"gateway\":\"B\","
               "\"gateway_nrp\":true,\"headers\":true}\r\n");
    bool started = false, completed = false;
    for (;;) {
        char *f = nd_integ_read_frame(r);
        cr_assert(f != NULL, "the gateway connection closed");
        if (strstr(f, "\"gateway_cmd\":2") && strstr(f, "\"gateway_cmd_payload\":\"JEc=\""))
            started = true;
        if (strstr(f, "\"gateway_cmd\":3") && strstr(f, "\"gateway_cmd_payload\":\"JEc=\""))
            completed = started;
        free(f);
        if (completed)
            break;
    }
    ND_SEND(r, "RMSG NOPE foo 2\r\nhi\r\nPING\r\n");
    for (;;) {
        char *f = nd_integ_read_frame(r);
        cr_assert(f != NULL, "the gateway connection closed");
        bool done = strcmp(f, "A- NOPE\r\n") == 0;
        cr_assert(strncmp(f, "PONG", 4) != 0, "PONG before A- NOPE");
        free(f);
        if (done)
            break;
    }
    nd_integ_conn_close(r);
    node_stop(&a);
}

/* ---- 6. implicit gateways: only one cluster names the other ---- */

Test(integ_gateway, implicit_gateways)
{
    node_t a[2], b[2];
    init_super(a, b, NULL, NULL);
    node_t *const bs[2] = {&b[0], &b[1]};
    /* Only A's servers list B (one URL each): B's servers learn A from the inbound connections
     * and from each other over their route. */
    gw_entry(&a[0], "B", bs, 1);
    gw_entry(&a[1], "B", bs + 1, 1);
    snprintf(a[1].routes, sizeof a[1].routes, "\"nats://127.0.0.1:%d\"", a[0].cport);
    snprintf(b[1].routes, sizeof b[1].routes, "\"nats://127.0.0.1:%d\"", b[0].cport);
    for (int i = 0; i < 2; i++) {
        node_start(&b[i]);
        node_start(&a[i]);
    }
    for (int i = 0; i < 2; i++) {
        wait_outbound(&a[i], "B", true);
        wait_outbound(&b[i], "A", true);
    }
    check_pubsub(&b[1], "B", &a[0], "A", "i1");
    check_pubsub(&a[1], "A", &b[0], "B", "i2");
    stop_super(a, b);
}

/* ---- 7. gateway authorization ---- */

Test(integ_gateway, authorization)
{
    node_t a, b, c;
    node_init(&a, "A1", "A", NULL);
    node_init(&b, "B1", "B", NULL);
    node_init(&c, "C1", "C", NULL);
    snprintf(a.gextra, sizeof a.gextra, "  authorization { user: gw, password: s3cret }");
    snprintf(b.gateways, sizeof b.gateways, "{name: A, url: \"nats://gw:s3cret@127.0.0.1:%d\"}",
             a.gport);
    snprintf(c.gateways, sizeof c.gateways, "{name: A, url: \"nats://gw:wrong@127.0.0.1:%d\"}",
             a.gport);
    node_start(&a);
    size_t mark = nd_integ_server_log_mark(a.srv);
    node_start(&c);
    node_start(&b);
    wait_outbound(&b, "A", true);
    wait_outbound(&a, "B", true);
    /* C's CONNECT was refused: A logs it, and C never gets an inbound connection on A. */
    nd_integ_server_wait_log(a.srv, mark, "authentication error");
    json_t *gz = nd_integ_get_json(a.mport, "/gatewayz");
    json_t *in = json_object_get(gz, "inbound_gateways");
    cr_assert(json_object_get(in, "B") != NULL && json_object_get(in, "C") == NULL,
              "A's inbound gateways: %s", json_dumps(in, JSON_COMPACT));
    json_decref(gz);
    check_pubsub(&a, "A", &b, "B", "au");
    node_stop(&c);
    node_stop(&b);
    node_stop(&a);
}

/* ---- 8. gateway TLS ---- */

/* A and B (binaries abin, bbin) joined over TLS; with rogue, a third cluster whose certificate
 * another CA signed tries too. */
static void
check_tls(const char *abin, const char *bbin, bool with_rogue)
{
    node_t a, b, rogue;
    node_init(&a, "A1", "A", abin);
    node_init(&b, "B1", "B", bbin);
    node_init(&rogue, "R1", "R", NULL);
    /* Certificates made now with the openssl command: a CA, a certificate it signed (server and
     * client use: gateways verify both ways), and one from another CA. */
    char dir[128];
    nd_integ_conf_file(&a.cf, "", dir, sizeof dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "(set -e; cd %s; K='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'; "
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj '/CN=gw CA'; "
             "openssl req -x509 $K -keyout oca.key -out oca.pem -days 2 -subj '/CN=other CA'; "
             "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n"
             "extendedKeyUsage=serverAuth,clientAuth\\n' > ext; "
             "openssl req $K -keyout g.key -out g.csr -subj '/CN=localhost'; "
             "openssl x509 -req -in g.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out g.pem "
             "-days 2 -extfile ext; "
             "openssl req $K -keyout o.key -out o.csr -subj '/CN=localhost'; "
             "openssl x509 -req -in o.csr -CA oca.pem -CAkey oca.key -CAcreateserial -out o.pem "
             "-days 2 -extfile ext) >/dev/null 2>&1",
             dir);
    cr_assert_eq(system(cmd), 0, "openssl failed: %s", cmd);
    snprintf(a.gextra, sizeof a.gextra,
             "  tls { cert_file: \"%sg.pem\", key_file: \"%sg.key\", ca_file: \"%sca.pem\", "
             "verify: true, timeout: 2 }",
             dir, dir, dir);
    snprintf(b.gextra, sizeof b.gextra, "%s", a.gextra);
    snprintf(rogue.gextra, sizeof rogue.gextra,
             "  tls { cert_file: \"%so.pem\", key_file: \"%so.key\", ca_file: \"%sca.pem\", "
             "verify: true, timeout: 2 }",
             dir, dir, dir);
    node_t *const as[1] = {&a}, *const bs[1] = {&b};
    gw_entry(&a, "B", bs, 1);
    gw_entry(&b, "A", as, 1);
    gw_entry(&rogue, "A", as, 1);
    node_start(&a);
    node_start(&b);
    wait_outbound(&a, "B", true);
    wait_outbound(&b, "A", true);
    check_pubsub(&a, "A", &b, "B", "tls");

    check_pubsub(&b, "B", &a, "A", "tls2");
    if (!with_rogue) {
        node_stop(&b);
        node_stop(&a);
        return;
    }
    /* A certificate from another CA: the handshake fails on A, no gateway. */
    size_t mark = nd_integ_server_log_mark(a.srv);
    node_start(&rogue);
    nd_integ_server_wait_log(a.srv, mark, "TLS gateway handshake error");
    json_t *gz = nd_integ_get_json(a.mport, "/gatewayz");
    json_t *in = json_object_get(gz, "inbound_gateways");
    cr_assert(json_object_get(in, "R") == NULL, "A's inbound gateways: %s",
              json_dumps(in, JSON_COMPACT));
    json_decref(gz);
    node_stop(&rogue);
    node_stop(&b);
    node_stop(&a);
}

Test(integ_gateway, tls)
{
    check_tls(NULL, NULL, true);
}

/* ---- 9. natsd and nats-server clusters joined ---- */

static void
check_mixed(const char *abin, const char *bbin)
{
    node_t a[2], b[2];
    init_super(a, b, abin, bbin);
    start_super(a, b);
    check_pubsub(&a[0], "A", &b[1], "B", "m1");
    check_pubsub(&b[0], "B", &a[1], "A", "m2");
    check_request(&a[1], &b[0], "B", "svc.m1");
    check_request(&b[1], &a[0], "A", "svc.m2");
    check_queue(&a[0], &a[1], &b[0], "B", "mq1");
    check_queue(&b[0], &b[1], &a[1], "A", "mq2");
    (void)node_is_ref;
    stop_super(a, b);
}

Test(integ_gateway, natsd_cluster_with_reference_cluster)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    check_mixed(NULL, ref);
}

Test(integ_gateway, reference_cluster_with_natsd_cluster)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    check_mixed(ref, NULL);
}

Test(integ_gateway, tls_natsd_with_reference)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    check_tls(NULL, ref, false);
}

/* Only one cluster lists the other: the other finds it from the inbound connections and its
 * route peers, whichever kind each side is. */
static void
check_mixed_implicit(const char *abin, const char *bbin)
{
    node_t a[2], b[2];
    init_super(a, b, abin, bbin);
    node_t *const bs[2] = {&b[0], &b[1]};
    gw_entry(&a[0], "B", bs, 2);
    gw_entry(&a[1], "B", bs, 2);
    snprintf(a[1].routes, sizeof a[1].routes, "\"nats://127.0.0.1:%d\"", a[0].cport);
    snprintf(b[1].routes, sizeof b[1].routes, "\"nats://127.0.0.1:%d\"", b[0].cport);
    for (int i = 0; i < 2; i++) {
        node_start(&b[i]);
        node_start(&a[i]);
    }
    for (int i = 0; i < 2; i++) {
        wait_outbound(&a[i], "B", true);
        wait_outbound(&b[i], "A", true);
    }
    check_pubsub(&b[0], "B", &a[1], "A", "mi1");
    check_request(&a[0], &b[1], "B", "svc.mi");
    stop_super(a, b);
}

Test(integ_gateway, implicit_natsd_lists_reference)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    check_mixed_implicit(NULL, ref);
}

Test(integ_gateway, implicit_reference_lists_natsd)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    check_mixed_implicit(ref, NULL);
}

/* Each cluster mixes natsd and nats-server: routes and gateways between every pairing, and a
 * gateway reply that lands on the other kind of server of its cluster goes on over the route. */
Test(integ_gateway, mixed_clusters)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    node_t a[2], b[2];
    node_init(&a[0], "A1", "A", NULL);
    node_init(&a[1], "A2", "A", ref);
    node_init(&b[0], "B1", "B", ref);
    node_init(&b[1], "B2", "B", NULL);
    start_super(a, b);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            char p[8];
            snprintf(p, sizeof p, "x%d%d", i, j);
            check_pubsub(&a[i], "A", &b[j], "B", p);
            snprintf(p, sizeof p, "y%d%d", i, j);
            check_pubsub(&b[j], "B", &a[i], "A", p);
        }
    check_request(&a[0], &b[0], "B", "svc.x1");
    check_request(&a[1], &b[1], "B", "svc.x2");
    check_request(&b[0], &a[1], "A", "svc.x3");
    check_request(&b[1], &a[0], "A", "svc.x4");
    check_queue(&a[0], &a[1], &b[1], "B", "mxq1");
    check_queue(&b[1], &b[0], &a[0], "A", "mxq2");
    stop_super(a, b);
}
