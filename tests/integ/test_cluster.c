/* Integration tests of clustering over routes (issue 15): three (and five) server processes on
 * loopback, each with a config file naming its client, monitoring and cluster ports (all taken
 * with nd_integ_free_port before the start, so routes can be seeded and a killed node restarted
 * on the same ports). Clients speak the raw protocol (harness.h) where the exact bytes matter,
 * and libnats where the client's own behaviour is the subject (request/reply, server discovery,
 * failover).
 *
 * Every expectation was first checked against the reference nats-server 2.9.10
 * (integ.cluster.reference runs this file with NATSD_TEST_SERVER=/usr/sbin/nats-server). The
 * mixed-cluster tests start natsd and the reference side by side (nd_integ_server_start_bin) and
 * are skipped when the server under test is the reference itself.
 *
 * Synchronisation: a route or a remote interest is waited for by polling /routez (num_routes,
 * remote_id, subs=1) with a hang guard (wait_routes_to, nd_integ_wait_route_sub); "this was
 * not delivered" is shown by a later message on the same route arriving first (one route keeps
 * the order of what one server sends to another); a client's own state by a PING round trip or
 * a libnats flush. Nothing sleeps to wait for something and nothing asserts on time.
 *
 * Route pooling: nats-server 2.9 has one route per pair of servers; 2.10 pools them (pool_size,
 * default 3) and /routez lists every pooled connection. Where both ends are natsd the mesh check
 * accepts any pool size that is the same for every peer; where either end is the reference it
 * wants exactly one route. Interest is counted in subscriptions_list, which pooling does not
 * multiply (an account's interest travels on one connection of the pool).
 *
 * What the reference does, noted where a test depends on it:
 * - client INFO connect_urls are "host:port" strings without a scheme, the server's own URL
 *   included; async INFO goes only to clients that sent "protocol":1; with cluster no_advertise
 *   the key is absent altogether.
 * - a route with a wrong password: the accepting side logs "authentication error" and
 *   "Router connection closed: Authentication Failure"; the soliciting side logs
 *   "Route Error 'Authorization Violation'" and retries about every second.
 * - a route connection that never sends CONNECT is closed with -ERR 'Authentication Timeout'
 *   only when the cluster has authorization; without, it stays open (and answers PING).
 * - different explicit cluster names: "Rejecting connection, cluster name "U" does not match
 *   "T"" and "Router connection closed: Cluster Name Conflict", retried, never a route.
 * - on the route port: garbage and an RMSG whose size lies get -ERR 'Unknown Protocol
 *   Operation' and a close (log "Router connection closed: Protocol Violation"); an RS+ with an
 *   invalid subject gets -ERR 'Invalid Subscription' and the route stays open; an RS+ with too
 *   many fields is closed without an -ERR (Protocol Violation).
 * - a route that stops answering (SIGSTOP) is closed after ping_max unanswered pings of the
 *   top-level ping_interval ("Router connection closed: Stale Connection"); 2.9 has no
 *   cluster-level ping settings.
 * - a node entering lame duck mode logs "Entering lame duck mode, stop accepting new clients";
 *   the other nodes' clients get an async INFO whose connect_urls no longer list it.
 * - route TLS starts with the handshake (no plain-text INFO on the route port); a peer whose
 *   certificate the CA does not sign: "TLS route handshake error" and "Router connection
 *   closed: TLS Handshake Failure" on the accepting side.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <nats/nats.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "integ_util.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_cluster, .fini = suite_fini, .timeout = 120);

#define OK(call) ND_NATS_OK(call)

/* ---- nodes ---- */

#define MAX_NODES 5

typedef struct node {
    const char *bin; /* borrowed: the binary this node runs */
    char name[8];
    char cluster[16]; /* the cluster name */
    int port, cport, mport;
    char routes[512];   /* the routes: [...] entries, quoted, comma-separated; "" for none */
    char cextra[512];   /* more lines inside cluster {} */
    char textra[1536];  /* more top-level lines */
    nd_integ_conf_t cf; /* the config file (kept across a kill and restart) */
    nd_integ_server_t *srv;
    char id[64]; /* server_id from /varz, refreshed at each start */
} node_t;

static void
node_init(node_t *n, const char *name, const char *bin)
{
    memset(n, 0, sizeof *n);
    n->bin = bin ? bin : nd_integ_server_path();
    snprintf(n->name, sizeof n->name, "%s", name);
    snprintf(n->cluster, sizeof n->cluster, "T");
    n->port = nd_integ_fresh_port();
    n->cport = nd_integ_fresh_port();
    n->mport = nd_integ_fresh_port();
}

/* Adds a route to `to` (with optional user:pass) to n's seed list. */
static void
node_route(node_t *n, const node_t *to, const char *userpass)
{
    size_t l = strlen(n->routes);
    snprintf(n->routes + l, sizeof n->routes - l, "%s\"nats://%s%s127.0.0.1:%d\"", l ? ", " : "",
             userpass ? userpass : "", userpass ? "@" : "", to->cport);
}

static void
node_start(node_t *n)
{
    char text[4096];
    snprintf(text, sizeof text,
             "server_name: %s\n"
             "listen: 127.0.0.1:%d\n"
             "http: 127.0.0.1:%d\n"
             "%s\n"
             "cluster {\n"
             "  name: %s\n"
             "  listen: 127.0.0.1:%d\n"
             "  routes: [%s]\n"
             "%s\n"
             "}\n",
             n->name, n->port, n->mport, n->textra, n->cluster, n->cport, n->routes, n->cextra);
    nd_integ_conf_write(&n->cf, text);
    const char *args[] = {"-c", n->cf.path, NULL};
    n->srv = nd_integ_server_start_bin(n->bin, args);
    cr_assert_eq(nd_integ_server_port(n->srv), n->port, "%s listens on %d, not %d", n->name,
                 nd_integ_server_port(n->srv), n->port);
    /* nats-server opens its route port after the client port (StartRouting runs on its own):
     * a test that dials the route port first waits for its line. */
    nd_integ_server_wait_log(n->srv, 0, "Listening for route connections on");
    json_t *v = nd_integ_get_json(n->mport, "/varz");
    const char *id = json_string_value(json_object_get(v, "server_id"));
    cr_assert(id != NULL, "%s: /varz has no server_id", n->name);
    snprintf(n->id, sizeof n->id, "%s", id);
    json_decref(v);
}

static void
node_stop(node_t *n)
{
    if (n->srv != NULL)
        nd_integ_server_stop(n->srv);
    n->srv = NULL;
    nd_integ_conf_remove(&n->cf);
}

static void
node_kill(node_t *n)
{
    nd_integ_server_kill(n->srv);
    n->srv = NULL;
}

/* Returns: whether n runs the reference nats-server. */
static bool
node_is_ref(const node_t *n)
{
    return nd_integ_bin_is_reference(n->bin);
}

/* Returns: whether /routez of n shows routes to exactly the nodes in peers (by remote_id): one
 * each where either end is nats-server 2.9 (no route pooling), and where both ends are natsd the
 * same number for every such peer (natsd may pool routes as 2.10 does: /routez then lists each
 * pooled connection). On false, *why says what was seen (owned by the caller). */
static bool
routes_are(const node_t *n, node_t *const *peers, int npeers, char **why)
{
    json_t *rz = nd_integ_get_json(n->mport, "/routez");
    json_t *routes = json_object_get(rz, "routes");
    int num = (int)json_integer_value(json_object_get(rz, "num_routes"));
    bool ok = num == (int)json_array_size(routes);
    int total = 0, pool = 0;
    for (int i = 0; ok && i < npeers; i++) {
        int seen = 0;
        size_t j;
        json_t *r;
        json_array_foreach(routes, j, r)
        {
            const char *rid = json_string_value(json_object_get(r, "remote_id"));
            if (rid != NULL && strcmp(rid, peers[i]->id) == 0)
                seen++;
        }
        total += seen;
        if (node_is_ref(n) || node_is_ref(peers[i])) {
            ok = seen == 1;
        } else {
            if (pool == 0)
                pool = seen;
            ok = seen >= 1 && seen == pool;
        }
    }
    ok = ok && total == num; /* no route to anything else, no duplicate left over */
    if (!ok && why != NULL)
        *why = json_dumps(rz, JSON_COMPACT);
    json_decref(rz);
    return ok;
}

/* Waits until n's routes are exactly to peers[0..np) (routes_are). */
static void
wait_routes_to(const node_t *n, node_t *const *peers, int np)
{
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    char *why = NULL;
    while (!routes_are(n, peers, np, nd_integ_now_ms() > deadline ? &why : NULL)) {
        if (why != NULL)
            cr_assert_fail("%s (%s) never had routes to exactly the %d servers wanted: %s", n->name,
                           n->bin, np, why);
        nd_integ_poll_gap();
    }
}

/* Waits until every node of nodes[0..k) has routes to each of the others and nothing else. */
static void
wait_mesh(node_t *nodes, int k)
{
    for (int i = 0; i < k; i++) {
        node_t *peers[MAX_NODES];
        int np = 0;
        for (int j = 0; j < k; j++)
            if (j != i)
                peers[np++] = &nodes[j];
        wait_routes_to(&nodes[i], peers, np);
    }
}

/* Starts nodes[0..k): nodes[0] first (the seed), then the others, each seeded with nodes[0]
 * only, and waits for the full mesh. */
static void
start_cluster(node_t *nodes, int k, const char *cextra)
{
    for (int i = 0; i < k; i++) {
        if (cextra != NULL)
            snprintf(nodes[i].cextra, sizeof nodes[i].cextra, "%s", cextra);
        if (i > 0)
            node_route(&nodes[i], &nodes[0], NULL);
        node_start(&nodes[i]);
    }
    wait_mesh(nodes, k);
}

static void
stop_cluster(node_t *nodes, int k)
{
    for (int i = k - 1; i >= 0; i--)
        node_stop(&nodes[i]);
}

/* Three nodes A, B, C of the server under test. */
static void
init3(node_t n[3])
{
    node_init(&n[0], "A", NULL);
    node_init(&n[1], "B", NULL);
    node_init(&n[2], "C", NULL);
}

/* ---- raw clients ---- */

static nd_integ_conn_t *
client_with(node_t *n, const char *connect_json)
{
    nd_integ_conn_t *c = nd_integ_conn_open(n->srv);
    char line[512];
    snprintf(line, sizeof line, "CONNECT %s\r\nPING\r\n", connect_json);
    ND_SENDS(c, line);
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* A client without "protocol":1: it gets no async INFO when servers join or leave, so its stream
 * holds only what the test asked for. */
static nd_integ_conn_t *
client(node_t *n)
{
    return client_with(n, "{\"verbose\":false,\"pedantic\":false,\"headers\":true,"
                          "\"no_responders\":true}");
}

/* ---- shared checks (also run on mixed clusters) ---- */

/* Pub/sub from a to b over the raw protocol, subjects under prefix p: exact MSG and HMSG bytes
 * with and without reply subjects, UNSUB removing the interest, a request answered across the
 * route and then, once the only responder on b unsubscribed, answered by a with 503. */
static void
check_pubsub(node_t *a, node_t *b, const char *p)
{
    nd_integ_context("pub/sub from %s (%s) to %s (%s), prefix %s", a->name, a->bin, b->name, b->bin,
                     p);
    nd_integ_conn_t *cb = client(b), *ca = client(a);
    nd_integ_sendf(cb, "SUB %s.foo 1\r\nSUB %s.bar 2\r\nPING\r\n", p, p);
    ND_EXPECT(cb, "PONG\r\n");
    char subj[64];
    snprintf(subj, sizeof subj, "%s.foo", p);
    nd_integ_wait_route_sub(a->mport, subj, 1);
    snprintf(subj, sizeof subj, "%s.bar", p);
    nd_integ_wait_route_sub(a->mport, subj, 1);

    nd_integ_sendf(ca,
          "PUB %s.foo 5\r\nhello\r\n"
          "PUB %s.foo reply.1 5\r\nworld\r\n"
          "HPUB %s.foo 20 22\r\nNATS/1.0\r\nX-K: v\r\n\r\nhi\r\n"
          "HPUB %s.foo reply.2 20 25\r\nNATS/1.0\r\nX-K: v\r\n\r\nagain\r\n"
          "PUB %s.foo 0\r\n\r\n"
          "PING\r\n",
          p, p, p, p, p);
    ND_EXPECT(ca, "PONG\r\n");
    nd_integ_expectf(cb,
            "MSG %s.foo 1 5\r\nhello\r\n"
            "MSG %s.foo 1 reply.1 5\r\nworld\r\n"
            "HMSG %s.foo 1 20 22\r\nNATS/1.0\r\nX-K: v\r\n\r\nhi\r\n"
            "HMSG %s.foo 1 reply.2 20 25\r\nNATS/1.0\r\nX-K: v\r\n\r\nagain\r\n"
            "MSG %s.foo 1 0\r\n\r\n",
            p, p, p, p, p);

    /* UNSUB: once a has seen the interest go, a publish there is not delivered: the message
     * on .bar sent after it arrives first. */
    ND_SEND(cb, "UNSUB 1\r\nPING\r\n");
    ND_EXPECT(cb, "PONG\r\n");
    snprintf(subj, sizeof subj, "%s.foo", p);
    nd_integ_wait_route_sub(a->mport, subj, 0);
    nd_integ_sendf(ca, "PUB %s.foo 4\r\ngone\r\nPUB %s.bar 4\r\nnext\r\nPING\r\n", p, p);
    ND_EXPECT(ca, "PONG\r\n");
    nd_integ_expectf(cb, "MSG %s.bar 2 4\r\nnext\r\n", p);

    /* A request across the route, answered; then the responder leaves and a's no-responders
     * status comes back instead. */
    nd_integ_sendf(cb, "SUB %s.svc 3\r\nPING\r\n", p);
    ND_EXPECT(cb, "PONG\r\n");
    nd_integ_sendf(ca, "SUB _INBOX.%s 9\r\nPING\r\n", p);
    ND_EXPECT(ca, "PONG\r\n");
    snprintf(subj, sizeof subj, "%s.svc", p);
    nd_integ_wait_route_sub(a->mport, subj, 1);
    snprintf(subj, sizeof subj, "_INBOX.%s", p);
    nd_integ_wait_route_sub(b->mport, subj, 1);
    nd_integ_sendf(ca, "PUB %s.svc _INBOX.%s 2\r\nhi\r\n", p, p);
    nd_integ_expectf(cb, "MSG %s.svc 3 _INBOX.%s 2\r\nhi\r\n", p, p);
    nd_integ_sendf(cb, "PUB _INBOX.%s 3\r\nack\r\n", p);
    nd_integ_expectf(ca, "MSG _INBOX.%s 9 3\r\nack\r\n", p);
    ND_SEND(cb, "UNSUB 3\r\nPING\r\n");
    ND_EXPECT(cb, "PONG\r\n");
    snprintf(subj, sizeof subj, "%s.svc", p);
    nd_integ_wait_route_sub(a->mport, subj, 0);
    nd_integ_sendf(ca, "PUB %s.svc _INBOX.%s 2\r\nhi\r\n", p, p);
    nd_integ_expectf(ca, "HMSG _INBOX.%s 9 16 16\r\nNATS/1.0 503\r\n\r\n\r\n", p);

    /* Nothing else reached b. */
    ND_PING(cb);
    nd_integ_conn_close(ca);
    nd_integ_conn_close(cb);
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

/* Request/reply with libnats: the responder on r, the requester on q. */
static void
check_request(node_t *q, node_t *r, const char *subject)
{
    nd_integ_context("request from %s (%s) to a responder on %s (%s)", q->name, q->bin, r->name,
                     r->bin);
    natsConnection *rc = nats_connect(r), *qc = nats_connect(q);
    natsSubscription *sub = NULL;
    OK(natsConnection_Subscribe(&sub, rc, subject, on_request, NULL));
    OK(natsConnection_FlushTimeout(rc, ND_INTEG_TIMEOUT_MS));
    /* The requester's inbox is a wildcard subscription libnats makes on first use; the
     * responder's interest must have reached q. */
    nd_integ_wait_route_sub(q->mport, subject, 1);
    for (int i = 0; i < 10; i++) {
        char data[16], want[32];
        snprintf(data, sizeof data, "r%d", i);
        snprintf(want, sizeof want, "pong:r%d", i);
        natsMsg *reply = NULL;
        OK(natsConnection_RequestString(&reply, qc, subject, data, ND_INTEG_TIMEOUT_MS));
        cr_assert(natsMsg_GetDataLength(reply) == (int)strlen(want) &&
                      memcmp(natsMsg_GetData(reply), want, strlen(want)) == 0,
                  "reply \"%.*s\", want \"%s\"", natsMsg_GetDataLength(reply),
                  natsMsg_GetData(reply), want);
        natsMsg_Destroy(reply);
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(qc);
    natsConnection_Destroy(rc);
    nd_integ_context(NULL);
}

/* Reads frames from c until "MSG <end> <sid> 0", counting the MSGs on work (payload: the message
 * number) into seen[] and returning how many there were. Anything else fails the test. */
static int
read_until_end(nd_integ_conn_t *c, const char *work, const char *end, int *seen, int n,
               int *order_ok)
{
    int count = 0, last = -1;
    char wpre[64], epre[64];
    snprintf(wpre, sizeof wpre, "MSG %s ", work);
    snprintf(epre, sizeof epre, "MSG %s ", end);
    for (;;) {
        char *f = nd_integ_read_frame(c);
        cr_assert(f != NULL, "the connection closed before the end marker");
        if (strncmp(f, epre, strlen(epre)) == 0) {
            free(f);
            return count;
        }
        cr_assert(strncmp(f, wpre, strlen(wpre)) == 0, "unexpected frame: %s", f);
        const char *payload = strstr(f, "\r\n");
        cr_assert(payload != NULL);
        int i = atoi(payload + 2);
        cr_assert(i >= 0 && i < n, "bad message number in %s", f);
        seen[i]++;
        if (order_ok != NULL && i <= last)
            *order_ok = 0;
        last = i;
        count++;
        free(f);
    }
}

/* Queue group "grp" on <p>.work with one member on each of m[0..3), a plain subscriber on plain,
 * 300 messages published on pub: each message goes to exactly one member, every member gets a
 * fair share (at least 50), and the plain subscriber gets all 300 in order. */
static void
check_queue(node_t *pub, node_t *const m[3], node_t *plain, const char *p)
{
    enum { N = 300 };
    nd_integ_context("queue group, publisher on %s (%s), prefix %s", pub->name, pub->bin, p);
    nd_integ_conn_t *mc[3], *pc;
    for (int i = 0; i < 3; i++) {
        mc[i] = client(m[i]);
        nd_integ_sendf(mc[i], "SUB %s.work grp 1\r\nSUB %s.end 2\r\nPING\r\n", p, p);
        ND_EXPECT(mc[i], "PONG\r\n");
    }
    pc = client(plain);
    nd_integ_sendf(pc, "SUB %s.work 1\r\nSUB %s.end 2\r\nPING\r\n", p, p);
    ND_EXPECT(pc, "PONG\r\n");

    /* What pub must have learnt from its routes: one .work entry per queue member and one for
     * the plain subscriber, each where it is not on pub itself; one .end entry per other server
     * that has any of these connections. */
    int want_work = 0, want_end = 0;
    node_t *const all[4] = {m[0], m[1], m[2], plain};
    for (int i = 0; i < 4; i++) {
        if (all[i] == pub)
            continue;
        want_work++;
        bool first = true;
        for (int j = 0; j < i; j++)
            first = first && all[j] != all[i];
        if (first)
            want_end++;
    }
    char subj[64];
    snprintf(subj, sizeof subj, "%s.work", p);
    nd_integ_wait_route_sub(pub->mport, subj, want_work);
    snprintf(subj, sizeof subj, "%s.end", p);
    nd_integ_wait_route_sub(pub->mport, subj, want_end);

    nd_integ_conn_t *pcn = client(pub);
    char *batch = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&batch, &blen);
    for (int i = 0; i < N; i++)
        fprintf(f, "PUB %s.work %d\r\n%d\r\n", p, snprintf(NULL, 0, "%d", i), i);
    fprintf(f, "PUB %s.end 0\r\n\r\nPING\r\n", p);
    fclose(f);
    nd_integ_send(pcn, batch, blen);
    free(batch);
    ND_EXPECT(pcn, "PONG\r\n");

    int seen[N] = {0}, counts[3];
    char work[64], end[64];
    snprintf(work, sizeof work, "%s.work", p);
    snprintf(end, sizeof end, "%s.end", p);
    int total = 0;
    for (int i = 0; i < 3; i++) {
        counts[i] = read_until_end(mc[i], work, end, seen, N, NULL);
        total += counts[i];
    }
    for (int i = 0; i < N; i++)
        cr_assert(seen[i] == 1, "queue message %d delivered %d times (members got %d/%d/%d)", i,
                  seen[i], counts[0], counts[1], counts[2]);
    cr_assert_eq(total, N);
    cr_log_info("queue group from %s: %s %d, %s %d, %s %d", pub->name, m[0]->name, counts[0],
                m[1]->name, counts[1], m[2]->name, counts[2]);
    for (int i = 0; i < 3; i++)
        cr_assert(counts[i] >= 50, "member on %s got %d of %d (all: %d/%d/%d)", m[i]->name,
                  counts[i], N, counts[0], counts[1], counts[2]);

    int pseen[N] = {0}, in_order = 1;
    int pcount = read_until_end(pc, work, end, pseen, N, &in_order);
    cr_assert_eq(pcount, N, "the plain subscriber on %s got %d of %d", plain->name, pcount, N);
    cr_assert(in_order, "the plain subscriber got the messages out of order");
    for (int i = 0; i < N; i++)
        cr_assert_eq(pseen[i], 1);

    for (int i = 0; i < 3; i++)
        nd_integ_conn_close(mc[i]);
    nd_integ_conn_close(pc);
    nd_integ_conn_close(pcn);
    nd_integ_context(NULL);
}

/* ---- 1. full mesh from one seed ---- */

Test(integ_cluster, mesh_from_one_seed)
{
    node_t n[3];
    init3(n);
    start_cluster(n, 3, NULL);
    /* Each route's remote_id names one of the other two (wait_mesh); the routes the seed did not
     * solicit are not configured ones, and B and C found each other by gossip alone. */
    json_t *rz = nd_integ_get_json(n[1].mport, "/routez");
    size_t i;
    json_t *r;
    bool saw_c = false;
    json_array_foreach(json_object_get(rz, "routes"), i, r)
    {
        const char *rid = json_string_value(json_object_get(r, "remote_id"));
        if (rid != NULL && strcmp(rid, n[2].id) == 0) {
            saw_c = true;
            cr_assert(json_is_false(json_object_get(r, "is_configured")),
                      "B's route to C is marked configured");
        }
    }
    cr_assert(saw_c);
    json_decref(rz);
    stop_cluster(n, 3);
}

/* ---- 2. pub/sub across servers, raw protocol ---- */

Test(integ_cluster, pubsub_headers_unsub_no_responders)
{
    node_t n[3];
    init3(n);
    start_cluster(n, 3, NULL);
    check_pubsub(&n[0], &n[1], "ab");
    check_pubsub(&n[1], &n[0], "ba");
    check_pubsub(&n[2], &n[1], "cb");
    stop_cluster(n, 3);
}

/* ---- 3. request/reply with libnats ---- */

Test(integ_cluster, request_reply_libnats)
{
    node_t n[3];
    init3(n);
    start_cluster(n, 3, NULL);
    check_request(&n[0], &n[2], "svc.echo");
    stop_cluster(n, 3);
}

/* ---- 4. queue groups ---- */

Test(integ_cluster, queue_group_across_servers)
{
    node_t n[3];
    init3(n);
    start_cluster(n, 3, NULL);
    node_t *m[3] = {&n[0], &n[1], &n[2]};
    check_queue(&n[0], m, &n[2], "qa");
    stop_cluster(n, 3);
}

/* ---- 5. connect_urls in INFO ---- */

/* Returns: whether INFO's JSON (line as received) has connect_urls equal, as a set, to the
 * client URLs "127.0.0.1:<port>" of nodes[0..k); each URL must appear once. */
static bool
info_urls_are(const char *info_line, node_t *nodes, int k, char **why)
{
    json_error_t err;
    const char *js = info_line + 5;
    json_t *o = json_loads(js, JSON_DISABLE_EOF_CHECK, &err);
    cr_assert(json_is_object(o), "INFO is not JSON: %s", info_line);
    json_t *urls = json_object_get(o, "connect_urls");
    bool ok = json_is_array(urls) && (int)json_array_size(urls) == k;
    for (int i = 0; ok && i < k; i++) {
        char want[32];
        snprintf(want, sizeof want, "127.0.0.1:%d", nodes[i].port);
        int seen = 0;
        size_t j;
        json_t *u;
        json_array_foreach(urls, j, u)
        {
            if (json_is_string(u) && strcmp(json_string_value(u), want) == 0)
                seen++;
        }
        ok = seen == 1;
    }
    if (!ok && why != NULL)
        *why = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return ok;
}

/* Reads async INFOs from c until one lists exactly nodes[0..k); anything but INFO fails. */
static void
wait_info_urls(nd_integ_conn_t *c, node_t *nodes, int k)
{
    char *last = NULL;
    for (int tries = 0; tries < 20; tries++) {
        char *f = nd_integ_read_frame(c);
        cr_assert(f != NULL, "connection closed while waiting for INFO");
        cr_assert(strncmp(f, "INFO {", 6) == 0, "expected an async INFO, got: %s", f);
        free(last);
        last = NULL;
        bool ok = info_urls_are(f, nodes, k, &last);
        free(f);
        if (ok) {
            free(last);
            return;
        }
    }
    cr_assert_fail("no INFO listed exactly the %d servers' client URLs; the last: %s", k,
                   last ? last : "?");
}

Test(integ_cluster, info_connect_urls)
{
    node_t n[3];
    init3(n);
    node_start(&n[0]);
    /* protocol 1: this client gets the async INFO updates. */
    nd_integ_conn_t *c =
        client_with(&n[0], "{\"verbose\":false,\"pedantic\":false,\"protocol\":1}");
    /* Alone, A's INFO lists no other server: either no connect_urls or only itself. */
    const char *info0 = nd_integ_conn_info(c);
    cr_assert(strstr(info0, "\"connect_urls\"") == NULL || info_urls_are(info0, n, 1, NULL),
              "INFO of a lone server: %s", info0);
    for (int i = 1; i < 3; i++) {
        node_route(&n[i], &n[0], NULL);
        node_start(&n[i]);
    }
    wait_mesh(n, 3);
    wait_info_urls(c, n, 3);

    /* A client connecting now gets all three in its first INFO. */
    nd_integ_conn_t *fresh = nd_integ_conn_open(n[0].srv);
    char *why = NULL;
    cr_assert(info_urls_are(nd_integ_conn_info(fresh), n, 3, &why), "fresh INFO: %s", why);
    nd_integ_conn_close(fresh);

    /* C leaves: the client is told, and A's list drops C. */
    node_stop(&n[2]);
    node_t *only_b[] = {&n[1]};
    wait_routes_to(&n[0], only_b, 1);
    wait_info_urls(c, n, 2);
    nd_integ_conn_close(c);
    node_stop(&n[1]);
    node_stop(&n[0]);
}

Test(integ_cluster, info_no_advertise)
{
    node_t n[3];
    init3(n);
    snprintf(n[0].cextra, sizeof n[0].cextra, "  no_advertise: true");
    node_start(&n[0]);
    nd_integ_conn_t *c =
        client_with(&n[0], "{\"verbose\":false,\"pedantic\":false,\"protocol\":1}");
    for (int i = 1; i < 3; i++) {
        snprintf(n[i].cextra, sizeof n[i].cextra, "  no_advertise: true");
        node_route(&n[i], &n[0], NULL);
        node_start(&n[i]);
    }
    wait_mesh(n, 3);
    /* No async INFO for the joins (the PONG comes first), and a new client's INFO has no
     * connect_urls at all. */
    ND_PING(c);
    for (int i = 0; i < 3; i++) {
        nd_integ_conn_t *fresh = nd_integ_conn_open(n[i].srv);
        cr_assert(strstr(nd_integ_conn_info(fresh), "connect_urls") == NULL,
                  "no_advertise, yet %s's INFO: %s", n[i].name, nd_integ_conn_info(fresh));
        nd_integ_conn_close(fresh);
    }
    /* The cluster works all the same. */
    check_pubsub(&n[0], &n[2], "na");
    nd_integ_conn_close(c);
    stop_cluster(n, 3);
}

/* ---- 6. SIGKILL and restart on the same ports ---- */

Test(integ_cluster, kill_and_restart_node)
{
    node_t n[3];
    init3(n);
    start_cluster(n, 3, NULL);
    /* A subscription on A that B must learn again after its restart. */
    nd_integ_conn_t *sa = client(&n[0]);
    ND_SEND(sa, "SUB k.a 1\r\nSUB k.end 2\r\nPING\r\n");
    ND_EXPECT(sa, "PONG\r\n");
    nd_integ_wait_route_sub(n[1].mport, "k.a", 1);

    node_kill(&n[1]);
    node_t *only_c[] = {&n[2]}, *only_a[] = {&n[0]};
    wait_routes_to(&n[0], only_c, 1);
    wait_routes_to(&n[2], only_a, 1);
    node_start(&n[1]); /* same config: same ports, a new server id */
    wait_mesh(n, 3);

    /* A's subscription reached the new B. */
    nd_integ_wait_route_sub(n[1].mport, "k.a", 1);
    nd_integ_wait_route_sub(n[1].mport, "k.end", 1);
    /* New subscriptions on B and C reach A. */
    nd_integ_conn_t *sb = client(&n[1]), *sc = client(&n[2]);
    ND_SEND(sb, "SUB k.x 1\r\nSUB k.end 2\r\nPING\r\n");
    ND_EXPECT(sb, "PONG\r\n");
    ND_SEND(sc, "SUB k.x 1\r\nSUB k.end 2\r\nPING\r\n");
    ND_EXPECT(sc, "PONG\r\n");
    nd_integ_wait_route_sub(n[0].mport, "k.x", 2);
    nd_integ_wait_route_sub(n[0].mport, "k.end", 2);

    /* One publish each way, each delivered exactly once: the end marker comes right after. */
    nd_integ_conn_t *pa = client(&n[0]), *pb = client(&n[1]);
    ND_SEND(pa, "PUB k.x 3\r\none\r\nPUB k.end 0\r\n\r\nPING\r\n");
    ND_EXPECT(pa, "PONG\r\n");
    ND_EXPECT(sb, "MSG k.x 1 3\r\none\r\nMSG k.end 2 0\r\n\r\n");
    ND_EXPECT(sc, "MSG k.x 1 3\r\none\r\nMSG k.end 2 0\r\n\r\n");
    ND_SEND(pb, "PUB k.a 3\r\ntwo\r\nPUB k.end 0\r\n\r\nPING\r\n");
    ND_EXPECT(pb, "PONG\r\n");
    ND_EXPECT(sa, "MSG k.end 2 0\r\n\r\n"); /* A's own publish of k.end, first */
    ND_EXPECT(sa, "MSG k.a 1 3\r\ntwo\r\nMSG k.end 2 0\r\n\r\n");
    ND_EXPECT(sb, "MSG k.end 2 0\r\n\r\n"); /* B's own k.end */
    ND_EXPECT(sc, "MSG k.end 2 0\r\n\r\n");
    ND_PING(sb);
    ND_PING(sc);
    ND_PING(sa);

    nd_integ_conn_close(sa);
    nd_integ_conn_close(sb);
    nd_integ_conn_close(sc);
    nd_integ_conn_close(pa);
    nd_integ_conn_close(pb);
    stop_cluster(n, 3);
}

/* ---- 7. route authorization ---- */

Test(integ_cluster, route_authorization)
{
    node_t a, b;
    node_init(&a, "A", NULL);
    node_init(&b, "B", NULL);
    snprintf(a.cextra, sizeof a.cextra,
             "  authorization { user: ruser, password: rpass, timeout: 1 }");
    node_start(&a);
    size_t amark = nd_integ_server_log_mark(a.srv);

    node_route(&b, &a, "ruser:wrong");
    node_start(&b);
    nd_integ_server_wait_log(a.srv, amark, "authentication error");
    nd_integ_server_wait_log(a.srv, amark, "Router connection closed: Authentication Failure");
    nd_integ_server_wait_log(b.srv, 0, "Authorization Violation");
    /* A rejects at CONNECT, before it registers a route. B is not asked: the reference registers
     * its solicited route on A's INFO and drops it at the -ERR, so a retry in progress shows
     * there for a moment. */
    cr_assert_eq(nd_integ_num_routes(a.mport), 0);
    node_stop(&b);

    /* A route port connection that never sends CONNECT: the authorization timeout (1 s here)
     * closes it. */
    size_t m2 = nd_integ_server_log_mark(a.srv);
    nd_integ_conn_t *raw = nd_integ_conn_open_port(a.cport);
    cr_assert(strstr(nd_integ_conn_info(raw), "\"auth_required\":true") != NULL, "route INFO: %s",
              nd_integ_conn_info(raw));
    ND_EXPECT(raw, "-ERR 'Authentication Timeout'\r\n");
    nd_integ_expect_close(raw);
    nd_integ_conn_close(raw);
    nd_integ_server_wait_log(a.srv, m2, "Router connection closed: Authentication Timeout");

    /* The right password: the route forms and carries interest. */
    node_init(&b, "B", NULL);
    node_route(&b, &a, "ruser:rpass");
    node_start(&b);
    node_t pair[2] = {a, b};
    wait_mesh(pair, 2);
    check_pubsub(&a, &b, "au");
    node_stop(&b);
    node_stop(&a);
}

/* ---- 8. cluster name conflict ---- */

Test(integ_cluster, cluster_name_conflict)
{
    node_t a, b;
    node_init(&a, "A", NULL);
    node_init(&b, "B", NULL);
    snprintf(b.cluster, sizeof b.cluster, "U");
    node_start(&a);
    size_t amark = nd_integ_server_log_mark(a.srv);
    node_route(&b, &a, NULL);
    node_start(&b);
    nd_integ_server_wait_log(a.srv, amark,
                             "Rejecting connection, cluster name \"U\" does not match \"T\"");
    nd_integ_server_wait_log(a.srv, amark, "Router connection closed: Cluster Name Conflict");
    nd_integ_server_wait_log(b.srv, 0, "Router connection closed: Cluster Name Conflict");
    /* B retries (its route is explicit) and is rejected again: no route at any point. */
    size_t again = nd_integ_server_log_mark(a.srv);
    nd_integ_server_wait_log(a.srv, again, "Router connection closed: Cluster Name Conflict");
    cr_assert_eq(nd_integ_num_routes(a.mport), 0); /* (B: see route_authorization) */

    /* The same on a raw route connection: the -ERR names both names, then the close. */
    nd_integ_conn_t *raw = nd_integ_conn_open_port(a.cport);
    ND_SEND(raw, "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"RAWX\","
                 "\"cluster\":\"OTHER\",\"headers\":true}\r\nPING\r\n");
    ND_EXPECT(raw, "-ERR 'Rejecting connection, cluster name \"OTHER\" does not match \"T\"'\r\n");
    nd_integ_expect_close(raw);
    nd_integ_conn_close(raw);
    node_stop(&b);
    node_stop(&a);
}

/* ---- 9. libnats discovering servers and failing over ---- */

static nd_integ_waiter_t discovered, reconnected;

static void
on_discovered(natsConnection *nc, void *closure)
{
    (void)nc, (void)closure;
    nd_integ_waiter_bump(&discovered);
}

static void
on_reconnected(natsConnection *nc, void *closure)
{
    (void)nc, (void)closure;
    nd_integ_waiter_bump(&reconnected);
}

/* Returns: whether the client's discovered servers include the client URLs of B and C. */
static bool
discovered_bc(natsConnection *nc, node_t *n)
{
    char **servers = NULL;
    int count = 0;
    OK(natsConnection_GetDiscoveredServers(nc, &servers, &count));
    int seen = 0;
    for (int i = 0; i < count; i++) {
        for (int j = 1; j < 3; j++) {
            char want[48];
            snprintf(want, sizeof want, "nats://127.0.0.1:%d", n[j].port);
            if (strcmp(servers[i], want) == 0)
                seen |= 1 << j;
        }
        free(servers[i]);
    }
    free(servers);
    return seen == 6;
}

Test(integ_cluster, client_discovery_and_failover)
{
    node_t n[3];
    init3(n);
    nd_integ_waiter_init(&discovered);
    nd_integ_waiter_init(&reconnected);
    node_start(&n[0]);

    natsOptions *o = NULL;
    OK(natsOptions_Create(&o));
    char url[64];
    nd_integ_nats_url(n[0].srv, url, sizeof url);
    OK(natsOptions_SetURL(o, url));
    OK(natsOptions_SetReconnectWait(o, 50));
    OK(natsOptions_SetMaxReconnect(o, 1000));
    OK(natsOptions_SetDiscoveredServersCB(o, on_discovered, NULL));
    OK(natsOptions_SetReconnectedCB(o, on_reconnected, NULL));
    natsConnection *nc = NULL;
    OK(natsConnection_Connect(&nc, o));

    for (int i = 1; i < 3; i++) {
        node_route(&n[i], &n[0], NULL);
        node_start(&n[i]);
    }
    wait_mesh(n, 3);
    /* The client learns B and C from A's async INFO (the callback says when a list changed). */
    int64_t deadline = nd_integ_now_ms() + ND_INTEG_TIMEOUT_MS;
    int d = 0;
    while (!discovered_bc(nc, n)) {
        cr_assert(nd_integ_now_ms() < deadline, "the client never discovered B and C");
        d = nd_integ_waiter_wait(&discovered, d + 1, 100);
    }

    natsSubscription *sub = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, "fo.x"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));

    /* A dies: the client moves to B or C and keeps working there. */
    node_kill(&n[0]);
    cr_assert(nd_integ_waiter_wait(&reconnected, 1, ND_INTEG_PROC_TIMEOUT_MS) >= 1,
              "the client did not reconnect after A was killed");
    char now_url[96] = "";
    OK(natsConnection_GetConnectedUrl(nc, now_url, sizeof now_url));
    node_t *cur = NULL;
    for (int j = 1; j < 3; j++) {
        char want[48];
        snprintf(want, sizeof want, "nats://127.0.0.1:%d", n[j].port);
        if (strcmp(now_url, want) == 0)
            cur = &n[j];
    }
    cr_assert(cur != NULL, "reconnected to %s, which is neither B nor C", now_url);
    node_t *other = cur == &n[1] ? &n[2] : &n[1];

    /* Its subscription is back (resent on reconnect): a publish from the other server reaches
     * it, and its own publish reaches a subscriber there. */
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    nd_integ_wait_route_sub(other->mport, "fo.x", 1);
    natsConnection *oc = nats_connect(other);
    natsSubscription *osub = NULL;
    OK(natsConnection_SubscribeSync(&osub, oc, "fo.y"));
    OK(natsConnection_FlushTimeout(oc, ND_INTEG_TIMEOUT_MS));
    nd_integ_wait_route_sub(cur->mport, "fo.y", 1);
    OK(natsConnection_PublishString(oc, "fo.x", "to the client"));
    OK(natsConnection_PublishString(nc, "fo.y", "from the client"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    OK(natsConnection_FlushTimeout(oc, ND_INTEG_TIMEOUT_MS));
    natsMsg *m = NULL;
    OK(natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS));
    cr_assert_str_eq(natsMsg_GetData(m), "to the client");
    natsMsg_Destroy(m);
    OK(natsSubscription_NextMsg(&m, osub, ND_INTEG_TIMEOUT_MS));
    cr_assert_str_eq(natsMsg_GetData(m), "from the client");
    natsMsg_Destroy(m);

    natsSubscription_Destroy(osub);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(oc);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    node_stop(&n[2]);
    node_stop(&n[1]);
    nd_integ_conf_remove(&n[0].cf);
    nd_integ_waiter_destroy(&discovered);
    nd_integ_waiter_destroy(&reconnected);
}

/* ---- 10. mixed clusters: natsd and the reference ---- */

/* Skips unless there is a reference to mix with and the server under test is not it. */
static const char *
mixed_reference(void)
{
    const char *ref = nd_integ_reference_path();
    if (nd_integ_is_reference() || ref == NULL)
        return NULL;
    return ref;
}

static void
check_mixed(node_t n[3])
{
    start_cluster(n, 3, NULL);
    /* Raw pub/sub and interest changes both ways between the two kinds. */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (i != j && strcmp(n[i].bin, n[j].bin) != 0) {
                char p[8];
                snprintf(p, sizeof p, "m%d%d", i, j);
                check_pubsub(&n[i], &n[j], p);
            }
    check_request(&n[0], &n[1], "mx.svc1");
    check_request(&n[1], &n[0], "mx.svc2");
    check_request(&n[2], &n[0], "mx.svc3");
    node_t *m[3] = {&n[0], &n[1], &n[2]};
    check_queue(&n[0], m, &n[2], "mq0");
    check_queue(&n[1], m, &n[0], "mq1");
    stop_cluster(n, 3);
}

Test(integ_cluster, mixed_natsd_seed)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    node_t n[3];
    node_init(&n[0], "A", NULL);
    node_init(&n[1], "B", ref);
    node_init(&n[2], "C", ref);
    check_mixed(n);
}

Test(integ_cluster, mixed_reference_seed)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    node_t n[3];
    node_init(&n[0], "A", ref);
    node_init(&n[1], "B", NULL);
    node_init(&n[2], "C", ref);
    check_mixed(n);
}

/* ---- 11. bad input on the route port ---- */

#define ROUTE_CONNECT                                                                              \
    "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"RAWROUTE\",\"cluster\":\"T\","       \
    "\"headers\":true}\r\n"

Test(integ_cluster, bad_route_input)
{
    node_t a;
    node_init(&a, "A", NULL);
    node_start(&a);
    nd_integ_conn_t *cl = client(&a);
    ND_SEND(cl, "SUB ok 1\r\nPING\r\n");
    ND_EXPECT(cl, "PONG\r\n");

    /* The route INFO: the cluster's name, route protocol 2, its own client URL. */
    nd_integ_conn_t *r = nd_integ_conn_open_port(a.cport);
    const char *info = nd_integ_conn_info(r);
    char want[64];
    snprintf(want, sizeof want, "\"connect_urls\":[\"127.0.0.1:%d\"]", a.port);
    cr_assert(strstr(info, "\"cluster\":\"T\"") && strstr(info, "\"proto\":2") &&
                  strstr(info, want) && strstr(info, a.id),
              "route INFO: %s", info);

    /* Garbage before CONNECT. */
    size_t mark = nd_integ_server_log_mark(a.srv);
    ND_SEND(r, "FOO BAR\r\n");
    ND_EXPECT(r, "-ERR 'Unknown Protocol Operation'\r\n");
    nd_integ_expect_close(r);
    nd_integ_conn_close(r);
    nd_integ_server_wait_log(a.srv, mark, "Router connection closed: Protocol Violation");

    /* No CONNECT and no cluster authorization: no timeout closes it; it answers PING. */
    nd_integ_conn_t *idle = nd_integ_conn_open_port(a.cport);
    ND_PING(idle);

    /* An RS+ with an invalid subject after a valid CONNECT: -ERR, and the route stays. */
    r = nd_integ_conn_open_port(a.cport);
    ND_SEND(r, ROUTE_CONNECT "RS+ $G foo..bar\r\nPING\r\n");
    ND_EXPECT(r, "-ERR 'Invalid Subscription'\r\nPONG\r\n");
    ND_SEND(r, "RS+ $G foo.>.bar\r\nPING\r\n");
    ND_EXPECT(r, "-ERR 'Invalid Subscription'\r\nPONG\r\n");
    nd_integ_conn_close(r);

    /* An RS+ with too many fields: closed, no -ERR. */
    mark = nd_integ_server_log_mark(a.srv);
    r = nd_integ_conn_open_port(a.cport);
    ND_SEND(r, ROUTE_CONNECT "RS+ $G foo bar baz qux\r\nPING\r\n");
    nd_integ_expect_close(r);
    nd_integ_conn_close(r);
    nd_integ_server_wait_log(a.srv, mark, "Router connection closed: Protocol Violation");

    /* An RMSG whose size lies (the payload is longer): the parser rejects what follows. */
    mark = nd_integ_server_log_mark(a.srv);
    r = nd_integ_conn_open_port(a.cport);
    ND_SEND(r, ROUTE_CONNECT "RMSG $G foo 5\r\ntoolongpayload\r\nPING\r\n");
    ND_EXPECT(r, "-ERR 'Unknown Protocol Operation'\r\n");
    nd_integ_expect_close(r);
    nd_integ_conn_close(r);
    nd_integ_server_wait_log(a.srv, mark, "Router connection closed: Protocol Violation");

    /* None of these became a route, the idle one is still open, and clients are served. */
    cr_assert_eq(nd_integ_num_routes(a.mport), 0);
    ND_PING(idle);
    nd_integ_conn_close(idle);
    ND_SEND(cl, "PUB ok 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(cl, "MSG ok 1 2\r\nhi\r\nPONG\r\n");
    nd_integ_conn_close(cl);
    node_stop(&a);
}

/* ---- a partition: one node stopped (SIGSTOP) and resumed ---- */

static void
expect_next(natsSubscription *sub, const char *data)
{
    natsMsg *m = NULL;
    OK(natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS));
    cr_assert(natsMsg_GetDataLength(m) == (int)strlen(data) &&
                  memcmp(natsMsg_GetData(m), data, strlen(data)) == 0,
              "got \"%.*s\", want \"%s\"", natsMsg_GetDataLength(m), natsMsg_GetData(m), data);
    natsMsg_Destroy(m);
}

Test(integ_cluster, partition_sigstop_sigcont)
{
    node_t n[3];
    init3(n);
    /* Pings every second and two unanswered ones make a connection stale (routes use the
     * server's ping settings in 2.9). Only libnats clients here: they answer the pings. */
    for (int i = 0; i < 3; i++)
        snprintf(n[i].textra, sizeof n[i].textra, "ping_interval: \"1s\"\nping_max: 2");
    start_cluster(n, 3, NULL);
    natsConnection *ca = nats_connect(&n[0]), *cb = nats_connect(&n[1]), *cc = nats_connect(&n[2]);
    natsSubscription *sb = NULL, *sc = NULL;
    OK(natsConnection_SubscribeSync(&sb, cb, "pt.x"));
    OK(natsConnection_SubscribeSync(&sc, cc, "pt.x"));
    OK(natsConnection_FlushTimeout(cb, ND_INTEG_TIMEOUT_MS));
    OK(natsConnection_FlushTimeout(cc, ND_INTEG_TIMEOUT_MS));
    nd_integ_wait_route_sub(n[0].mport, "pt.x", 2);

    /* B stops answering: A and C find its routes stale and drop them. */
    size_t mark = nd_integ_server_log_mark(n[0].srv);
    nd_integ_server_signal(n[1].srv, SIGSTOP);
    node_t *only_c[] = {&n[2]}, *only_a[] = {&n[0]};
    wait_routes_to(&n[0], only_c, 1);
    wait_routes_to(&n[2], only_a, 1);
    nd_integ_server_wait_log(n[0].srv, mark, "Router connection closed: Stale Connection");
    OK(natsConnection_PublishString(ca, "pt.x", "during"));
    OK(natsConnection_FlushTimeout(ca, ND_INTEG_TIMEOUT_MS));
    expect_next(sc, "during");

    /* B resumes: the mesh forms again, B's interest comes back, and each message is delivered
     * once to each subscriber (B never gets what was published while it was away). */
    nd_integ_server_signal(n[1].srv, SIGCONT);
    wait_mesh(n, 3);
    nd_integ_wait_route_sub(n[0].mport, "pt.x", 2);
    OK(natsConnection_PublishString(ca, "pt.x", "after"));
    OK(natsConnection_PublishString(ca, "pt.x", "end"));
    OK(natsConnection_FlushTimeout(ca, ND_INTEG_TIMEOUT_MS));
    expect_next(sb, "after");
    expect_next(sb, "end");
    expect_next(sc, "after");
    expect_next(sc, "end");
    OK(natsConnection_FlushTimeout(cb, ND_INTEG_TIMEOUT_MS));
    OK(natsConnection_FlushTimeout(cc, ND_INTEG_TIMEOUT_MS));
    int pb = -1, pc = -1, bytes;
    OK(natsSubscription_GetPending(sb, &pb, &bytes));
    OK(natsSubscription_GetPending(sc, &pc, &bytes));
    cr_assert(pb == 0 && pc == 0, "left over after the end marker: B %d, C %d", pb, pc);

    natsSubscription_Destroy(sb);
    natsSubscription_Destroy(sc);
    natsConnection_Destroy(ca);
    natsConnection_Destroy(cb);
    natsConnection_Destroy(cc);
    stop_cluster(n, 3);
}

/* ---- lame duck: a node's clients move to the others ---- */

static nd_integ_waiter_t ldm_seen;

static void
on_ldm(natsConnection *nc, void *closure)
{
    (void)nc, (void)closure;
    nd_integ_waiter_bump(&ldm_seen);
}

Test(integ_cluster, lame_duck_moves_clients)
{
    node_t n[3];
    init3(n);
    /* 30 s is nats-server's minimum duration; with few clients they are closed right after the
     * grace period. */
    snprintf(n[0].textra, sizeof n[0].textra,
             "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"");
    start_cluster(n, 3, NULL);
    nd_integ_waiter_init(&ldm_seen);
    nd_integ_waiter_init(&reconnected);

    /* A raw client on B sees A leave its connect_urls when A enters lame duck mode. */
    nd_integ_conn_t *rb = client_with(&n[1], "{\"verbose\":false,\"pedantic\":false,"
                                             "\"protocol\":1}");
    char *why = NULL;
    cr_assert(info_urls_are(nd_integ_conn_info(rb), n, 3, &why), "B's INFO: %s", why);

    natsOptions *o = NULL;
    OK(natsOptions_Create(&o));
    char url[64];
    nd_integ_nats_url(n[0].srv, url, sizeof url);
    OK(natsOptions_SetURL(o, url));
    OK(natsOptions_SetReconnectWait(o, 50));
    OK(natsOptions_SetMaxReconnect(o, 1000));
    OK(natsOptions_SetLameDuckModeCB(o, on_ldm, NULL));
    OK(natsOptions_SetReconnectedCB(o, on_reconnected, NULL));
    natsConnection *nc = NULL;
    OK(natsConnection_Connect(&nc, o));
    natsSubscription *sub = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, "ld.x"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));

    size_t mark = nd_integ_server_log_mark(n[0].srv);
    nd_integ_server_signal(n[0].srv, SIGUSR2);
    nd_integ_server_wait_log(n[0].srv, mark, "Entering lame duck mode, stop accepting new clients");
    cr_assert(nd_integ_waiter_wait(&ldm_seen, 1, ND_INTEG_PROC_TIMEOUT_MS) >= 1,
              "the client on A got no lame duck notice");
    wait_info_urls(rb, n + 1, 2);

    /* After the grace period the client is closed and moves to B or C, where it works. */
    cr_assert(nd_integ_waiter_wait(&reconnected, 1, ND_INTEG_PROC_TIMEOUT_MS) >= 1,
              "the client did not reconnect");
    char now_url[96] = "";
    OK(natsConnection_GetConnectedUrl(nc, now_url, sizeof now_url));
    cr_assert(strcmp(now_url, url) != 0, "still connected to A");
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    nd_integ_server_wait_exit(n[0].srv);
    n[0].srv = NULL;
    node_t *only_c[] = {&n[2]}, *only_b[] = {&n[1]};
    wait_routes_to(&n[1], only_c, 1);
    wait_routes_to(&n[2], only_b, 1);
    /* A publish on the server the client is not on reaches it across the route. */
    char want_c[48];
    snprintf(want_c, sizeof want_c, "nats://127.0.0.1:%d", n[2].port);
    node_t *other = strcmp(now_url, want_c) == 0 ? &n[1] : &n[2];
    nd_integ_wait_route_sub(other->mport, "ld.x", 1);
    natsConnection *cb = nats_connect(other);
    OK(natsConnection_PublishString(cb, "ld.x", "moved"));
    OK(natsConnection_FlushTimeout(cb, ND_INTEG_TIMEOUT_MS));
    expect_next(sub, "moved");

    natsConnection_Destroy(cb);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    nd_integ_conn_close(rb);
    node_stop(&n[2]);
    node_stop(&n[1]);
    nd_integ_conf_remove(&n[0].cf);
    nd_integ_waiter_destroy(&ldm_seen);
    nd_integ_waiter_destroy(&reconnected);
}

/* ---- route TLS ---- */

/* Connects to 127.0.0.1:port, sends nothing, and reads until the server closes (a reset counts).
 * Returns: how many bytes came first. Fails the test on the hang guard. */
static size_t
silent_then_closed(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect: %s", strerror(errno));
    size_t got = 0;
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, ND_INTEG_TIMEOUT_MS);
        cr_assert(r > 0, "the server neither sent anything nor closed within %d ms",
                  ND_INTEG_TIMEOUT_MS);
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return got;
}

Test(integ_cluster, route_tls)
{
    node_t a, b, rogue;
    node_init(&a, "A", NULL);
    node_init(&b, "B", NULL);
    node_init(&rogue, "R", NULL);
    /* Certificates made now with the openssl command, in A's config directory: a CA, a route
     * certificate it signed (server and client use: routes verify both ways), and one from
     * another CA. */
    char dir[128];
    nd_integ_conf_file(&a.cf, "", dir, sizeof dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "(set -e; cd %s; K='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'; "
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj '/CN=route CA'; "
             "openssl req -x509 $K -keyout oca.key -out oca.pem -days 2 -subj '/CN=other CA'; "
             "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n"
             "extendedKeyUsage=serverAuth,clientAuth\\n' > ext; "
             "openssl req $K -keyout r.key -out r.csr -subj '/CN=localhost'; "
             "openssl x509 -req -in r.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out r.pem "
             "-days 2 -extfile ext; "
             "openssl req $K -keyout o.key -out o.csr -subj '/CN=localhost'; "
             "openssl x509 -req -in o.csr -CA oca.pem -CAkey oca.key -CAcreateserial -out o.pem "
             "-days 2 -extfile ext) >/dev/null 2>&1",
             dir);
    cr_assert_eq(system(cmd), 0, "openssl failed: %s", cmd);
    snprintf(a.cextra, sizeof a.cextra,
             "  tls { cert_file: \"%sr.pem\", key_file: \"%sr.key\", ca_file: \"%sca.pem\", "
             "verify: true, timeout: 2 }",
             dir, dir, dir);
    snprintf(b.cextra, sizeof b.cextra, "%s", a.cextra);
    snprintf(rogue.cextra, sizeof rogue.cextra,
             "  tls { cert_file: \"%so.pem\", key_file: \"%so.key\", ca_file: \"%sca.pem\", "
             "verify: true, timeout: 2 }",
             dir, dir, dir);

    node_start(&a);
    /* The route port starts with the TLS handshake (2.9.10 sends no plain-text INFO first):
     * a peer that says nothing gets nothing, and is closed at the TLS timeout. */
    cr_assert_eq(silent_then_closed(a.cport), 0, "bytes in plain text on a TLS route port");
    node_route(&b, &a, NULL);
    node_start(&b);
    node_t pair[2] = {a, b};
    wait_mesh(pair, 2);
    check_pubsub(&a, &b, "tls");

    /* A certificate from another CA: the handshake fails on A, no route. */
    size_t mark = nd_integ_server_log_mark(a.srv);
    node_route(&rogue, &a, NULL);
    node_start(&rogue);
    nd_integ_server_wait_log(a.srv, mark, "TLS route handshake error");
    nd_integ_server_wait_log(a.srv, mark, "Router connection closed: TLS Handshake Failure");
    node_t *only_b[] = {&b};
    char *why = NULL;
    cr_assert(routes_are(&a, only_b, 1, &why), "A's routes after the rogue tried: %s", why);
    node_stop(&rogue);
    node_stop(&b);
    node_stop(&a);
}

/* ---- five servers from one seed ---- */

Test(integ_cluster, five_node_mesh)
{
    node_t n[5];
    static const char *names[] = {"A", "B", "C", "D", "E"};
    for (int i = 0; i < 5; i++)
        node_init(&n[i], names[i], NULL);
    start_cluster(n, 5, NULL);
    /* Interest from the last joiner reaches the seed's clients. */
    check_pubsub(&n[0], &n[4], "five");
    stop_cluster(n, 5);
}

/* ---- rolling migration: nats-server nodes replaced one at a time by natsd ---- */

/* Publishes the numbered messages [from, to) of p.work on c. */
static void
publish_range(nd_integ_conn_t *c, const char *p, int from, int to)
{
    char *batch = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&batch, &blen);
    for (int i = from; i < to; i++)
        fprintf(f, "PUB %s.work %d\r\n%d\r\n", p, snprintf(NULL, 0, "%d", i), i);
    fprintf(f, "PING\r\n");
    fclose(f);
    nd_integ_send(c, batch, blen);
    free(batch);
    ND_EXPECT(c, "PONG\r\n");
}

/* A cluster of three reference servers becomes a natsd cluster, one node at a time (stopped,
 * then started as natsd on the same ports and config), while a publisher and a subscriber on
 * the two nodes that stay up exchange numbered messages before, during and after each
 * replacement: the subscriber gets every one, once and in order. Then the all-natsd cluster
 * passes the pub/sub checks. Skipped when the server under test is the reference. */
Test(integ_cluster, rolling_migration)
{
    enum { K = 200 };
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    node_t n[3];
    node_init(&n[0], "A", ref);
    node_init(&n[1], "B", ref);
    node_init(&n[2], "C", ref);
    start_cluster(n, 3, NULL);
    /* Replace C (traffic A -> B), then B (A -> C), then A (B -> C). */
    static const int order[3][3] = {{2, 0, 1}, {1, 0, 2}, {0, 1, 2}};
    for (int step = 0; step < 3; step++) {
        node_t *z = &n[order[step][0]], *pn = &n[order[step][1]], *sn = &n[order[step][2]];
        char p[16], subj[32];
        snprintf(p, sizeof p, "mig%d", step);
        nd_integ_context("migration step %d: replacing %s, publisher on %s, subscriber on %s",
                         step, z->name, pn->name, sn->name);
        nd_integ_conn_t *sc = client(sn), *pc = client(pn);
        nd_integ_sendf(sc, "SUB %s.work 1\r\nSUB %s.end 2\r\nPING\r\n", p, p);
        ND_EXPECT(sc, "PONG\r\n");
        snprintf(subj, sizeof subj, "%s.work", p);
        nd_integ_wait_route_sub(pn->mport, subj, 1);
        snprintf(subj, sizeof subj, "%s.end", p);
        nd_integ_wait_route_sub(pn->mport, subj, 1);

        publish_range(pc, p, 0, K);
        node_stop(z);
        publish_range(pc, p, K, 2 * K);
        z->bin = nd_integ_server_path(); /* natsd */
        node_start(z);
        wait_mesh(n, 3);
        publish_range(pc, p, 2 * K, 3 * K);
        nd_integ_sendf(pc, "PUB %s.end 0\r\n\r\nPING\r\n", p);
        ND_EXPECT(pc, "PONG\r\n");

        int seen[3 * K] = {0}, in_order = 1;
        char work[32], end[32];
        snprintf(work, sizeof work, "%s.work", p);
        snprintf(end, sizeof end, "%s.end", p);
        int got = read_until_end(sc, work, end, seen, 3 * K, &in_order);
        cr_assert_eq(got, 3 * K, "the subscriber on %s got %d of %d", sn->name, got, 3 * K);
        cr_assert(in_order, "out of order on %s", sn->name);
        for (int i = 0; i < 3 * K; i++)
            cr_assert_eq(seen[i], 1, "message %d seen %d times", i, seen[i]);
        nd_integ_conn_close(sc);
        nd_integ_conn_close(pc);
    }
    nd_integ_context(NULL);
    check_pubsub(&n[0], &n[1], "allnd01");
    check_pubsub(&n[2], &n[0], "allnd20");
    stop_cluster(n, 3);
}

/* ---- accounts: stream and service imports across routes ----
 *
 * Account A exports streams feed.> and pfeed.> and services svc.> and msvc.echo; account B
 * imports feed.> as is, pfeed.> with the prefix "p", svc.> as is and msvc.echo as "echo". What
 * nats-server 2.9 does (checked with both servers the reference): the importing server sends
 * the routes its importer's interest in the exporter's account (a B subscription on feed.x
 * becomes an RS+ in A for feed.x, as well as B's own RS+), so the exporter's server forwards
 * the exporter's message once (RMSG A) and the importing server delivers it in B; a service
 * import's request goes over the route in A under the exported subject with an `_R_.` reply,
 * and the importing server's interest in its `_R_.` subjects brings the response back. */

#define XACCT_ACCOUNTS                                                                             \
    "accounts {\n"                                                                                 \
    "  A { users: [{user: a, password: a}]\n"                                                      \
    "      exports: [{stream: \"feed.>\"}, {stream: \"pfeed.>\"},\n"                               \
    "                {service: \"svc.>\"}, {service: \"msvc.echo\"}] }\n"                          \
    "  B { users: [{user: b, password: b}]\n"                                                      \
    "      imports: [{stream: {account: A, subject: \"feed.>\"}},\n"                               \
    "                {stream: {account: A, subject: \"pfeed.>\"}, prefix: \"p\"},\n"               \
    "                {service: {account: A, subject: \"svc.>\"}},\n"                               \
    "                {service: {account: A, subject: \"msvc.echo\"}, to: \"echo\"}] }\n"           \
    "}\n"

#define XACCT_CONNECT(u)                                                                           \
    "{\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,"              \
    "\"user\":\"" u "\",\"pass\":\"" u "\"}"

static void
xacct_start(node_t n[2])
{
    for (int i = 0; i < 2; i++)
        snprintf(n[i].textra, sizeof n[i].textra, "%s", XACCT_ACCOUNTS);
    start_cluster(n, 2, NULL);
}

/* Stream imports, publisher (account A) on pn, subscribers in B and A on sn and on pn: each gets
 * each message exactly once, under B's subject; a later message on the same route arriving next
 * shows that nothing else (a duplicate) came. */
static void
check_stream_import(node_t *pn, node_t *sn, const char *t)
{
    nd_integ_context("stream import: publisher on %s (%s), subscriber on %s (%s), token %s",
                     pn->name, pn->bin, sn->name, sn->bin, t);
    nd_integ_conn_t *rb = client_with(sn, XACCT_CONNECT("b"));
    nd_integ_conn_t *ra = client_with(sn, XACCT_CONNECT("a"));
    nd_integ_conn_t *lb = client_with(pn, XACCT_CONNECT("b"));
    nd_integ_conn_t *pa = client_with(pn, XACCT_CONNECT("a"));
    nd_integ_sendf(rb, "SUB feed.%s.* 1\r\nSUB p.pfeed.%s.> 2\r\nPING\r\n", t, t);
    ND_EXPECT(rb, "PONG\r\n");
    nd_integ_sendf(ra, "SUB feed.%s.a 1\r\nPING\r\n", t);
    ND_EXPECT(ra, "PONG\r\n");
    nd_integ_sendf(lb, "SUB feed.%s.a 1\r\nPING\r\n", t);
    ND_EXPECT(lb, "PONG\r\n");
    /* pn learns feed.<t>.* in B and A (rb), feed.<t>.a in A (ra), p.pfeed.<t>.> in B and
     * pfeed.<t>.> in A (rb). */
    char subj[64];
    snprintf(subj, sizeof subj, "feed.%s.*", t);
    nd_integ_wait_route_sub(pn->mport, subj, 2);
    snprintf(subj, sizeof subj, "feed.%s.a", t);
    nd_integ_wait_route_sub(pn->mport, subj, 1);
    snprintf(subj, sizeof subj, "p.pfeed.%s.>", t);
    nd_integ_wait_route_sub(pn->mport, subj, 1);
    snprintf(subj, sizeof subj, "pfeed.%s.>", t);
    nd_integ_wait_route_sub(pn->mport, subj, 1);

    nd_integ_sendf(pa,
                   "PUB feed.%s.a 1\r\n1\r\n"
                   "PUB feed.%s.b r.1 1\r\n2\r\n"
                   "PUB pfeed.%s.c.d 1\r\n3\r\n"
                   "HPUB feed.%s.a 12 13\r\nNATS/1.0\r\n\r\n4\r\n"
                   "PING\r\n",
                   t, t, t, t);
    ND_EXPECT(pa, "PONG\r\n");
    nd_integ_expectf(rb,
                     "MSG feed.%s.a 1 1\r\n1\r\n"
                     "MSG feed.%s.b 1 r.1 1\r\n2\r\n"
                     "MSG p.pfeed.%s.c.d 2 1\r\n3\r\n"
                     "HMSG feed.%s.a 1 12 13\r\nNATS/1.0\r\n\r\n4\r\n",
                     t, t, t, t);
    nd_integ_expectf(ra, "MSG feed.%s.a 1 1\r\n1\r\nHMSG feed.%s.a 1 12 13\r\nNATS/1.0\r\n\r\n4\r\n",
                     t, t);
    nd_integ_expectf(lb, "MSG feed.%s.a 1 1\r\n1\r\nHMSG feed.%s.a 1 12 13\r\nNATS/1.0\r\n\r\n4\r\n",
                     t, t);
    /* A publish in B is not imported back into A, nor anywhere else. */
    nd_integ_sendf(lb, "PUB feed.%s.a 1\r\nx\r\nPING\r\n", t);
    nd_integ_expectf(lb, "MSG feed.%s.a 1 1\r\nx\r\nPONG\r\n", t);
    nd_integ_expectf(rb, "MSG feed.%s.a 1 1\r\nx\r\n", t);
    /* Nothing more: the next message is the next one published. */
    nd_integ_sendf(pa, "PUB feed.%s.a 1\r\n5\r\nPING\r\n", t);
    ND_EXPECT(pa, "PONG\r\n");
    nd_integ_expectf(rb, "MSG feed.%s.a 1 1\r\n5\r\n", t);
    nd_integ_expectf(ra, "MSG feed.%s.a 1 1\r\n5\r\n", t);
    nd_integ_expectf(lb, "MSG feed.%s.a 1 1\r\n5\r\n", t);

    /* The importer's interest goes away with its subscriptions. */
    ND_SEND(rb, "UNSUB 1\r\nUNSUB 2\r\nPING\r\n");
    ND_EXPECT(rb, "PONG\r\n");
    snprintf(subj, sizeof subj, "feed.%s.*", t);
    nd_integ_wait_route_sub(pn->mport, subj, 0);
    snprintf(subj, sizeof subj, "pfeed.%s.>", t);
    nd_integ_wait_route_sub(pn->mport, subj, 0);
    ND_PING(rb);
    ND_PING(ra);
    ND_PING(lb);
    nd_integ_conn_close(rb);
    nd_integ_conn_close(ra);
    nd_integ_conn_close(lb);
    nd_integ_conn_close(pa);
    nd_integ_context(NULL);
}

/* Reads a request frame ("MSG|HMSG <subject> <sid> <reply> ..."): checks its subject and that the
 * reply is an `_R_.` subject, and copies the reply into reply. */
static void
read_request(nd_integ_conn_t *c, const char *subject, char *reply, size_t cap)
{
    char *f = nd_integ_read_frame(c);
    cr_assert(f != NULL, "the responder's connection closed");
    char op[8], subj[128], sid[16], rep[128];
    cr_assert(sscanf(f, "%7s %127s %15s %127s", op, subj, sid, rep) == 4, "bad frame %s", f);
    cr_assert(strcmp(op, "MSG") == 0 || strcmp(op, "HMSG") == 0, "not a message: %s", f);
    cr_assert_str_eq(subj, subject, "request frame %s", f);
    cr_assert(strncmp(rep, "_R_.", 4) == 0, "the reply is not an _R_ subject: %s", f);
    cr_assert(strstr(f, "\r\nreq") != NULL || strstr(f, "\r\n\r\nreq") != NULL,
              "payload missing: %s", f);
    snprintf(reply, cap, "%s", rep);
    free(f);
}

/* Service imports, requester (account B) on qn, responder (account A) on rn: the request reaches
 * the responder under the exported subject with an `_R_.` reply, the response comes back to the
 * requester's inbox, once. */
static void
check_service_import(node_t *qn, node_t *rn, const char *t)
{
    nd_integ_context("service import: requester on %s (%s), responder on %s (%s), token %s",
                     qn->name, qn->bin, rn->name, rn->bin, t);
    nd_integ_conn_t *resp = client_with(rn, XACCT_CONNECT("a"));
    nd_integ_conn_t *req = client_with(qn, XACCT_CONNECT("b"));
    nd_integ_sendf(resp, "SUB svc.%s.* 1\r\nSUB msvc.echo 2\r\nPING\r\n", t);
    ND_EXPECT(resp, "PONG\r\n");
    nd_integ_sendf(req, "SUB _INBOX.%s.* 1\r\nPING\r\n", t);
    ND_EXPECT(req, "PONG\r\n");
    char subj[64], reply[128];
    snprintf(subj, sizeof subj, "svc.%s.*", t);
    nd_integ_wait_route_sub(qn->mport, subj, 1);
    nd_integ_wait_route_sub(qn->mport, "msvc.echo", 1);

    for (int i = 0; i < 3; i++) {
        nd_integ_sendf(req, "PUB svc.%s.x _INBOX.%s.%d 3\r\nreq\r\n", t, t, i);
        snprintf(subj, sizeof subj, "svc.%s.x", t);
        read_request(resp, subj, reply, sizeof reply);
        nd_integ_sendf(resp, "PUB %s 5\r\nresp%d\r\n", reply, i);
        nd_integ_expectf(req, "MSG _INBOX.%s.%d 1 5\r\nresp%d\r\n", t, i, i);
    }
    /* The import with `to`: B's "echo" is A's "msvc.echo". */
    nd_integ_sendf(req, "PUB echo _INBOX.%s.e 3\r\nreq\r\n", t);
    read_request(resp, "msvc.echo", reply, sizeof reply);
    nd_integ_sendf(resp, "PUB %s 2\r\nok\r\n", reply);
    nd_integ_expectf(req, "MSG _INBOX.%s.e 1 2\r\nok\r\n", t);
    /* Nothing more on either side. */
    ND_PING(req);
    ND_PING(resp);
    nd_integ_conn_close(req);
    nd_integ_conn_close(resp);
    nd_integ_context(NULL);
}

/* Service imports with libnats (request, wildcard inbox), both ways. */
static void
check_service_libnats(node_t *qn, node_t *rn, const char *subject)
{
    nd_integ_context("libnats service import: requester on %s (%s), responder on %s (%s)",
                     qn->name, qn->bin, rn->name, rn->bin);
    char url[96];
    natsConnection *rc = NULL, *qc = NULL;
    snprintf(url, sizeof url, "nats://a:a@127.0.0.1:%d", rn->port);
    OK(natsConnection_ConnectTo(&rc, url));
    snprintf(url, sizeof url, "nats://b:b@127.0.0.1:%d", qn->port);
    OK(natsConnection_ConnectTo(&qc, url));
    natsSubscription *sub = NULL;
    OK(natsConnection_Subscribe(&sub, rc, subject, on_request, NULL));
    OK(natsConnection_FlushTimeout(rc, ND_INTEG_TIMEOUT_MS));
    nd_integ_wait_route_sub(qn->mport, subject, 1);
    for (int i = 0; i < 10; i++) {
        char data[16], want[32];
        snprintf(data, sizeof data, "r%d", i);
        snprintf(want, sizeof want, "pong:r%d", i);
        natsMsg *reply = NULL;
        OK(natsConnection_RequestString(&reply, qc, subject, data, ND_INTEG_TIMEOUT_MS));
        cr_assert(natsMsg_GetDataLength(reply) == (int)strlen(want) &&
                      memcmp(natsMsg_GetData(reply), want, strlen(want)) == 0,
                  "reply \"%.*s\", want \"%s\"", natsMsg_GetDataLength(reply),
                  natsMsg_GetData(reply), want);
        natsMsg_Destroy(reply);
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(qc);
    natsConnection_Destroy(rc);
    nd_integ_context(NULL);
}

static void
check_xacct(node_t n[2])
{
    xacct_start(n);
    check_stream_import(&n[1], &n[0], "t10");
    check_stream_import(&n[0], &n[1], "t01");
    check_service_import(&n[0], &n[1], "t01");
    check_service_import(&n[1], &n[0], "t10");
    check_service_libnats(&n[0], &n[1], "svc.lib01");
    check_service_libnats(&n[1], &n[0], "svc.lib10");
    stop_cluster(n, 2);
}

Test(integ_cluster, imports_across_routes)
{
    node_t n[2];
    node_init(&n[0], "A", NULL);
    node_init(&n[1], "B", NULL);
    check_xacct(n);
}

Test(integ_cluster, imports_across_routes_mixed)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    node_t n[2];
    node_init(&n[0], "A", NULL);
    node_init(&n[1], "B", ref);
    check_xacct(n);
    node_init(&n[0], "A", ref);
    node_init(&n[1], "B", NULL);
    check_xacct(n);
}

/* The importer's interest already there when the route forms: the new route's dump carries the
 * shadow interest in A (and the `_R_` interest for responses). A queue group of B on the
 * importing server gets each message once. */
static void
check_xacct_dump(node_t n[2])
{
    for (int i = 0; i < 2; i++)
        snprintf(n[i].textra, sizeof n[i].textra, "%s", XACCT_ACCOUNTS);
    node_start(&n[0]);
    nd_integ_conn_t *rb = client_with(&n[0], XACCT_CONNECT("b"));
    nd_integ_conn_t *q1 = client_with(&n[0], XACCT_CONNECT("b"));
    nd_integ_conn_t *q2 = client_with(&n[0], XACCT_CONNECT("b"));
    ND_SEND(rb, "SUB p.> 1\r\nSUB feed.end 2\r\nPING\r\n");
    ND_EXPECT(rb, "PONG\r\n");
    ND_SEND(q1, "SUB feed.q grp 1\r\nSUB feed.end 2\r\nPING\r\n");
    ND_EXPECT(q1, "PONG\r\n");
    ND_SEND(q2, "SUB feed.q grp 1\r\nSUB feed.end 2\r\nPING\r\n");
    ND_EXPECT(q2, "PONG\r\n");
    node_route(&n[1], &n[0], NULL);
    node_start(&n[1]);
    wait_mesh(n, 2);
    /* n1 learns p.> in B and pfeed.> in A (the prefix import), feed.q grp in B and A. */
    nd_integ_wait_route_sub(n[1].mport, "pfeed.>", 1);
    nd_integ_wait_route_sub(n[1].mport, "feed.q", 2);
    nd_integ_wait_route_sub(n[1].mport, "feed.end", 2);
    nd_integ_conn_t *pa = client_with(&n[1], XACCT_CONNECT("a"));
    for (int i = 0; i < 20; i++)
        nd_integ_sendf(pa, "PUB feed.q %d\r\n%d\r\n", i < 10 ? 1 : 2, i);
    ND_SEND(pa, "PUB pfeed.x 2\r\nhi\r\nPUB feed.end 0\r\n\r\nPING\r\n");
    ND_EXPECT(pa, "PONG\r\n");
    nd_integ_expectf(rb, "MSG p.pfeed.x 1 2\r\nhi\r\nMSG feed.end 2 0\r\n\r\n");
    int seen[20] = {0};
    int got = read_until_end(q1, "feed.q", "feed.end", seen, 20, NULL);
    got += read_until_end(q2, "feed.q", "feed.end", seen, 20, NULL);
    cr_assert_eq(got, 20, "the queue group got %d of 20", got);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(seen[i], 1, "queue message %d delivered %d times", i, seen[i]);
    nd_integ_conn_close(pa);
    nd_integ_conn_close(rb);
    nd_integ_conn_close(q1);
    nd_integ_conn_close(q2);
    /* A request from n0 (B) to a responder on n1 (A), the response on n0's `_R_` interest. */
    check_service_libnats(&n[0], &n[1], "svc.dump");
    stop_cluster(n, 2);
}

Test(integ_cluster, imports_in_route_dump)
{
    node_t n[2];
    node_init(&n[0], "A", NULL);
    node_init(&n[1], "B", NULL);
    check_xacct_dump(n);
}

Test(integ_cluster, imports_in_route_dump_mixed)
{
    const char *ref = mixed_reference();
    if (ref == NULL)
        cr_skip_test("the server under test is the reference (or there is none): nothing to mix");
    node_t n[2];
    node_init(&n[0], "A", NULL);
    node_init(&n[1], "B", ref);
    check_xacct_dump(n);
    node_init(&n[0], "A", ref);
    node_init(&n[1], "B", NULL);
    check_xacct_dump(n);
}
