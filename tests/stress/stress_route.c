/* stress_route: a cluster of in-process servers under concurrent raw-protocol clients.
 *
 * Three natsd servers A, B and C are started in this process through the embedding API
 * (natsd_opts_load_string, client ports chosen by the system, cluster ports picked free
 * beforehand); B and C have a route to A and find each other through gossip. The mesh is
 * proven, not waited for on a clock: for each ordered pair of servers a probe is published on
 * one until a subscriber on the other gets it (a message crosses one route only, so B -> C needs
 * the B-C route). Clients are plain sockets speaking the text protocol (stress_cli.h, shared
 * with stress_server.c), so TSan sees every thread of every server: workers, pollers, timers, the
 * route dialers. All scenarios run at once:
 *
 *  1. Fan-out across routes: publishers on A and B publish deterministic messages (HPUB now and
 *     then, some payloads large) on eight subjects; subscriber connections on A, B and C hold
 *     literal, `*` and `>` subscriptions and two queue groups (`r1.>` with members on A, B and
 *     C; `r1.k.*` with members on A and C). Every message is regenerated from (publisher,
 *     index) and compared byte for byte. A plain subscription must see every matching message of
 *     each publisher once and in order (a gap fails at once); a queue group must see each once
 *     across the cluster (a shared bitmap catches a duplicate; the final count catches a loss).
 *  2. Interest churn: two threads, each with a subscriber on C and a publisher on A, SUB fresh
 *     subjects (literal, `*`, queue) and UNSUB them while the publisher sends. After the SUB's
 *     PONG, probes are published on A until one reaches C (the interest crossed the route);
 *     then every message must arrive exactly once, in order, and no probe after them. The UNSUB
 *     is sent while A keeps publishing: messages may still come until its PONG (interest
 *     removal crosses the route asynchronously, as in nats-server), in order and never twice;
 *     nothing A publishes after that PONG may reach the sid. A fence subject, whose interest was
 *     proven once, shows when everything A sent before it has crossed. A message that C matched
 *     before the UNSUB but wrote after its PONG is counted as "late" (natsd writes a delivery
 *     queued for the subscriber without looking at the sub again; nats-server's deliverMsg
 *     checks sub.isClosed() under the client's lock, so it sends none):
 *     ND_STRESS_ROUTE_STRICT_UNSUB=1 makes one a failure.
 *  3. Request/reply across servers: a queue group of two responders on C answers `r3.svc`;
 *     requesters on A (one wildcard inbox each, a unique reply subject per request, 16 in
 *     flight) must get exactly one, correct reply to each request.
 *  4. Route churn: a fourth server D (route to A, fresh ports each time) joins and is stopped
 *     with natsd_stop, again and again, while publishers on A and B send `r4.a` and `r4.b`
 *     continuously and scenarios 1-3 run. A subscriber on D must get A's messages from the
 *     first one that arrives on, without a gap or a duplicate (D's interest reached A then);
 *     B's come over a gossip-made route and are only checked for order and form. The subscriber
 *     must then see natsd_stop close it.
 *  5. Shutdown: noise clients publish and subscribe on A, B and C, connections are held half-way
 *     through a PUB, and natsd_stop stops the three servers while they send. Every socket must
 *     see its server close it; nothing may leak (an ASan build reports leaks at exit).
 *
 * Flow control: publishers of scenario 1 keep every checked subscriber within a window of what
 * they sent, so nothing becomes a slow consumer; scenario 4's publishers pause after each batch.
 * There are no timing assertions: a wait fails only after ND_STRESS_STALL_S (default 120 s)
 * without progress, a hang guard. Probes are repeated until they arrive, never timed.
 *
 * Usage: stress_route [scale]   (or ND_STRESS_SCALE; see stress_util.h). Exits non-zero on the
 * first inconsistency. Knobs: ND_STRESS_ROUTE_BREAK=1 expects one message too many in scenario
 * 1, to show the run can fail; ND_STRESS_ROUTE_STRICT_UNSUB=1 (above); ND_STRESS_ROUTE_LOG=1 lets the servers log at INFO (default:
 * warnings and errors only).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "natsd/natsd.h"
#include "stress_cli.h"
#include "stress_util.h"

/* Fails the run when the whole program (every client's parsed events) made no progress for the
 * stall limit; call it in any wait loop. */
static void
stall_guard(const char *what, uint64_t *last, double *since)
{
    uint64_t p = atomic_load_explicit(&g_progress, memory_order_relaxed);
    double now = stress_now_s();
    if (p != *last) {
        *last = p;
        *since = now;
    } else if (now - *since > g_stall_s) {
        stress_fail("%s: no progress for %.0f s", what, g_stall_s);
    }
}

/* ==== the servers ==== */

#define WORKERS 2

typedef struct node {
    char name[8];
    natsd_t *srv;
    int port;  /* client port, chosen by the system */
    int cport; /* cluster port, picked free before the start */
} node_t;

static node_t g_a = {.name = "A"}, g_b = {.name = "B"}, g_c = {.name = "C"};

/* A port that was free a moment ago: bound to port 0 and closed. The cluster block needs the
 * number before the start, because the other servers' route lists name it. */
static int
free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    STRESS_CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    STRESS_CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind: %s", strerror(errno));
    socklen_t len = sizeof a;
    STRESS_CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0, "getsockname: %s",
                 strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

/* Starts n with a route to seed (NULL: none). A cluster port taken by another process between
 * free_port() and the server's bind fails the start: another port is tried then. */
static void
node_start(node_t *n, const node_t *seed)
{
    for (int tries = 0;; tries++) {
        n->cport = free_port();
        char routes[128] = "";
        if (seed != NULL)
            snprintf(routes, sizeof routes, "routes: [\"nats://127.0.0.1:%d\"]", seed->cport);
        char text[1024], err[512];
        snprintf(text, sizeof text,
                 "server_name: %s\n"
                 "listen: \"127.0.0.1:-1\"\n"
                 "worker_threads: %d\n"
                 "cluster {\n"
                 "  name: T\n"
                 "  listen: \"127.0.0.1:%d\"\n"
                 "  %s\n"
                 "}\n",
                 n->name, WORKERS, n->cport, routes);
        natsd_opts_t *o = natsd_opts_new();
        STRESS_CHECK(natsd_opts_load_string(o, text, err, sizeof err) == 0, "%s: config: %s",
                     n->name, err);
        n->srv = natsd_start(o);
        natsd_opts_free(o);
        if (n->srv != NULL)
            break;
        STRESS_CHECK(tries < 10, "%s: natsd_start failed", n->name);
    }
    n->port = natsd_port(n->srv);
}

static void
node_stop(node_t *n)
{
    natsd_stop(n->srv);
    n->srv = NULL;
}

#define CONNECT_JSON "{\"verbose\":false,\"pedantic\":false,\"headers\":true}"

/* Opens c on n and sends CONNECT. */
static void
cli_connect(cli_t *c, const char *name, const node_t *n)
{
    if (!cli_open(c, name, n->port, 0))
        stress_fail("%s: connect to %s: %s", name, n->name, strerror(errno));
    cli_handshake(c, CONNECT_JSON, false);
}

/* Publishes probes (the one-digit payload `who`) on subj from pub until sub gets one on its
 * probe_sid: then the interest behind sub's subscriptions, sent before the probe's, reached
 * pub's server (a route carries RS+ in order and applies them in order). Ctx: the thread that
 * owns both connections. */
static void
probe_until(cli_t *sub, cli_t *pub, const char *subj, int who)
{
    unsigned bit = 1u << who;
    uint64_t last = 0;
    double since = stress_now_s();
    while ((sub->probe_mask & bit) == 0) {
        cli_sendf(pub, "PUB %s 1\r\n%d\r\n", subj, who);
        cli_sync(pub);
        if (cli_pump(sub, 5) < 0)
            stress_fail("%s: closed while probing", sub->name);
        stall_guard("probing", &last, &since);
    }
}

/* ==== scenario 1: fan-out across routes ==== */

#define S1_PUBS    2
#define S1_NSUBJ   8
#define S1_CONNS   10
#define S1_WINDOW  64 /* messages a checked subscription may lag behind one publisher */
#define S1_BATCH   16
#define S1_MAXSIZE 40000
#define S1_HDR     "NATS/1.0\r\nX-I: %012llu\r\n\r\n"
#define S1_HDR_LEN 31

static const char *const s1_subjects[S1_NSUBJ] = {"r1.k.0", "r1.k.1", "r1.k.2", "r1.k.3",
                                                  "r1.m.0", "r1.m.1", "r1.m.2", "r1.m.3"};
static node_t *const s1_pub_node[S1_PUBS] = {&g_a, &g_b};
/* Where each subscriber connection is. */
static node_t *const s1_conn_node[S1_CONNS] = {&g_b, &g_c, &g_c, &g_b, &g_a,
                                               &g_b, &g_c, &g_c, &g_a, &g_c};

typedef struct s1_sid {
    const char *pattern, *queue;
    int group; /* 0 = rq, 1 = rk, -1 = plain */
    int conn;
    bool match[S1_NSUBJ];
    uint64_t expected[S1_PUBS];
    /* owner thread */
    uint64_t count[S1_PUBS];
    int64_t last[S1_PUBS];
    /* any thread: = count, for the publishers' windows */
    _Atomic uint64_t seen[S1_PUBS];
} s1_sid_t;

#define S1_SID(pat, q, g, c)                                                                       \
    {                                                                                              \
        .pattern = (pat), .queue = (q), .group = (g), .conn = (c)                                  \
    }

static s1_sid_t s1_sids[] = {
    S1_SID("r1.k.0", NULL, -1, 0), S1_SID("r1.m.>", NULL, -1, 0), /* B */
    S1_SID("r1.*.1", NULL, -1, 1), S1_SID("r1.>", NULL, -1, 1),   /* C */
    S1_SID("r1.k.*", NULL, -1, 2),                                /* C */
    S1_SID("r1.>", NULL, -1, 3),                                  /* B */
    S1_SID("r1.m.*", NULL, -1, 4), S1_SID("r1.>", "rq", 0, 4),    /* A */
    S1_SID("r1.>", "rq", 0, 5),                                   /* B */
    S1_SID("r1.>", "rq", 0, 6),                                   /* C */
    S1_SID("r1.k.*", "rk", 1, 7),                                 /* C */
    S1_SID("r1.k.*", "rk", 1, 8),                                 /* A */
    S1_SID("r1.*.*", NULL, -1, 9), S1_SID("r1.m.2", NULL, -1, 9), /* C: overlapping */
};
#define S1_NSIDS ((int)(sizeof s1_sids / sizeof s1_sids[0]))
#define S1_PROBE_SID 1000

static uint64_t s1_n; /* messages per publisher */
static uint64_t s1_gexpected[2][S1_PUBS];
static _Atomic uint64_t s1_gseen[2][S1_PUBS];
static _Atomic uint64_t *s1_gbits[2][S1_PUBS];
static _Atomic int s1_pubs_done, s1_subs_complete, s1_stop;
static bool s1_break;
static cli_t s1_subc[S1_CONNS], s1_pubc[S1_PUBS];
static pthread_t s1_sub_th[S1_CONNS], s1_pub_th[S1_PUBS];

static int
s1_subject_of(int p, uint64_t i)
{
    return (int)(mix64(((uint64_t)p << 40) ^ i) % S1_NSUBJ);
}

/* Mostly small payloads, now and then one larger than a read buffer. At least 16 bytes, room
 * for the "p.i." prefix. */
static size_t
s1_size_of(int p, uint64_t i)
{
    uint64_t h = mix64(i * 31 + (uint64_t)p + 7);
    return h % 64 == 0 ? 8000 + h % 30000 : 16 + h % 200;
}

static bool
s1_hdr_of(int p, uint64_t i)
{
    return mix64(i ^ ((uint64_t)p << 50) ^ 0xabcull) % 7 == 0;
}

static void
s1_fill(char *buf, int p, uint64_t i, size_t n)
{
    int k = snprintf(buf, n, "%d.%llu.", p, (ull)i);
    for (size_t j = (size_t)k; j < n; j++)
        buf[j] = (char)('a' + (i + j) % 26);
}

static void
s1_on_msg(cli_t *c, const ev_t *ev)
{
    int conn = (int)(intptr_t)c->arg;
    if (ev->sid < 1 || ev->sid > (uint64_t)S1_NSIDS || s1_sids[ev->sid - 1].conn != conn)
        stress_fail("%s: message for unknown sid: '%.*s'", c->name, (int)ev->line_len, ev->line);
    s1_sid_t *s = &s1_sids[ev->sid - 1];
    uint64_t f[2];
    payload_fields(ev->data, ev->data_len, f, 2, c->name);
    if (f[0] >= S1_PUBS || f[1] >= s1_n)
        stress_fail("%s: bad payload in '%.*s'", c->name, (int)ev->line_len, ev->line);
    int p = (int)f[0];
    uint64_t i = f[1];
    int sj = s1_subject_of(p, i);
    if (!str_eq(ev->subj, ev->subj_len, s1_subjects[sj]) || !s->match[sj])
        stress_fail("%s: sid %llu (%s): message %d.%llu on '%.*s'", c->name, (ull)ev->sid,
                    s->pattern, p, (ull)i, (int)ev->subj_len, ev->subj);
    char want[S1_MAXSIZE];
    size_t size = s1_size_of(p, i);
    if (ev->hmsg != s1_hdr_of(p, i) || ev->data_len != size)
        stress_fail("%s: message %d.%llu: hmsg %d, %zu bytes; expected %d, %zu", c->name, p, (ull)i,
                    ev->hmsg, ev->data_len, s1_hdr_of(p, i), size);
    if (ev->hmsg) {
        char hdr[64];
        snprintf(hdr, sizeof hdr, S1_HDR, (ull)i);
        if (ev->hdr_len != S1_HDR_LEN || memcmp(ev->hdr, hdr, S1_HDR_LEN) != 0)
            stress_fail("%s: message %d.%llu: wrong header", c->name, p, (ull)i);
    }
    s1_fill(want, p, i, size);
    if (memcmp(want, ev->data, size) != 0)
        stress_fail("%s: message %d.%llu: payload differs", c->name, p, (ull)i);
    if ((int64_t)i <= s->last[p])
        stress_fail("%s: sid %llu (%s): message %d.%llu after %lld (order or duplicate)", c->name,
                    (ull)ev->sid, s->pattern, p, (ull)i, (long long)s->last[p]);
    if (s->group < 0) {
        /* A plain subscription: nothing that matches may be missing in between. */
        for (uint64_t j = (uint64_t)(s->last[p] + 1); j < i; j++)
            if (s->match[s1_subject_of(p, j)])
                stress_fail("%s: sid %llu (%s): message %d.%llu missing (got %llu)", c->name,
                            (ull)ev->sid, s->pattern, p, (ull)j, (ull)i);
    } else {
        /* acq_rel: the bitmap is the only record shared by the members of the group. */
        uint64_t bit = 1ull << (i % 64);
        uint64_t old = atomic_fetch_or_explicit(&s1_gbits[s->group][p][i / 64], bit,
                                                memory_order_acq_rel);
        if (old & bit)
            stress_fail("%s: queue group %s: message %d.%llu delivered twice in the cluster",
                        c->name, s->queue, p, (ull)i);
        atomic_fetch_add_explicit(&s1_gseen[s->group][p], 1, memory_order_relaxed);
    }
    s->last[p] = (int64_t)i;
    s->count[p]++;
    if (s->group < 0 && s->count[p] > s->expected[p])
        stress_fail("%s: sid %llu (%s): %llu messages from publisher %d, expected %llu", c->name,
                    (ull)ev->sid, s->pattern, (ull)s->count[p], p, (ull)s->expected[p]);
    atomic_store_explicit(&s->seen[p], s->count[p], memory_order_relaxed);
}

/* Whether every subscription of conn got all it should. */
static bool
s1_conn_complete(int conn)
{
    for (int k = 0; k < S1_NSIDS; k++) {
        s1_sid_t *s = &s1_sids[k];
        if (s->conn != conn)
            continue;
        for (int p = 0; p < S1_PUBS; p++) {
            if (s->group < 0 && s->count[p] < s->expected[p])
                return false;
            if (s->group >= 0 && atomic_load_explicit(&s1_gseen[s->group][p],
                                                      memory_order_relaxed) < s1_gexpected[s->group][p])
                return false;
        }
    }
    return true;
}

static void *
s1_sub_main(void *arg)
{
    int conn = (int)(intptr_t)arg;
    cli_t *c = &s1_subc[conn];
    uint64_t last = 0;
    double since = stress_now_s();
    while (!s1_conn_complete(conn)) {
        if (cli_pump(c, 20) < 0)
            stress_fail("%s: connection closed", c->name);
        stall_guard("s1 subscriber", &last, &since);
    }
    /* release: pairs with main's acquire in wait_count. */
    atomic_fetch_add_explicit(&s1_subs_complete, 1, memory_order_release);
    /* Anything more (a duplicate) would be caught while waiting for the others. */
    while (!atomic_load_explicit(&s1_stop, memory_order_acquire))
        if (cli_pump(c, 20) < 0)
            stress_fail("%s: connection closed", c->name);
    cli_sync(c);
    for (int k = 0; k < S1_NSIDS; k++) {
        s1_sid_t *s = &s1_sids[k];
        if (s->conn != conn || s->group >= 0)
            continue;
        for (int p = 0; p < S1_PUBS; p++) {
            uint64_t want = s->expected[p] + (s1_break && k == 0 && p == 0);
            if (s->count[p] != want)
                stress_fail("%s: sid %d (%s): %llu messages from publisher %d, expected %llu",
                            c->name, k + 1, s->pattern, (ull)s->count[p], p, (ull)want);
        }
    }
    cli_close(c);
    return NULL;
}

static void *
s1_pub_main(void *arg)
{
    int p = (int)(intptr_t)arg;
    cli_t *c = &s1_pubc[p];
    char *out = malloc(S1_BATCH * (S1_MAXSIZE + 128));
    uint64_t sofar[S1_NSIDS] = {0}, gsofar[2] = {0};
    uint64_t last = 0;
    double since = stress_now_s();
    for (uint64_t i = 0; i < s1_n;) {
        /* The window: every checked subscription within S1_WINDOW of what it should have. */
        for (;;) {
            bool ok = true;
            for (int k = 0; k < S1_NSIDS && ok; k++)
                if (s1_sids[k].group < 0)
                    ok = atomic_load_explicit(&s1_sids[k].seen[p], memory_order_relaxed) +
                             S1_WINDOW >=
                         sofar[k];
            for (int g = 0; g < 2 && ok; g++)
                ok = atomic_load_explicit(&s1_gseen[g][p], memory_order_relaxed) + S1_WINDOW >=
                     gsofar[g];
            if (ok)
                break;
            if (cli_pump(c, 1) < 0)
                stress_fail("%s: connection closed", c->name);
            stall_guard("s1 publisher window", &last, &since);
        }
        size_t olen = 0;
        for (int b = 0; b < S1_BATCH && i < s1_n; b++, i++) {
            int sj = s1_subject_of(p, i);
            size_t size = s1_size_of(p, i);
            if (s1_hdr_of(p, i)) {
                olen += (size_t)sprintf(out + olen, "HPUB %s %d %zu\r\n", s1_subjects[sj],
                                        S1_HDR_LEN, S1_HDR_LEN + size);
                olen += (size_t)sprintf(out + olen, S1_HDR, (ull)i);
            } else {
                olen += (size_t)sprintf(out + olen, "PUB %s %zu\r\n", s1_subjects[sj], size);
            }
            s1_fill(out + olen, p, i, size);
            olen += size;
            memcpy(out + olen, "\r\n", 2);
            olen += 2;
            for (int k = 0; k < S1_NSIDS; k++)
                if (s1_sids[k].group < 0 && s1_sids[k].match[sj])
                    sofar[k]++;
            for (int g = 0; g < 2; g++)
                if (s1_sids[g == 0 ? 7 : 10].match[sj])
                    gsofar[g]++;
        }
        cli_send(c, out, olen);
        if (cli_pump(c, 0) < 0)
            stress_fail("%s: connection closed", c->name);
    }
    free(out);
    cli_sync(c);
    cli_close(c);
    atomic_fetch_add_explicit(&s1_pubs_done, 1, memory_order_release);
    return NULL;
}

/* Connects, subscribes and proves every subscription's interest on both publishers' servers
 * before any thread starts. */
static void
s1_setup(double scale)
{
    s1_n = stress_scaled(20000, scale);
    const char *b = getenv("ND_STRESS_ROUTE_BREAK");
    s1_break = b != NULL && atoi(b) != 0;
    STRESS_CHECK(s1_sids[7].group == 0 && s1_sids[10].group == 1, "s1: group table");
    for (int g = 0; g < 2; g++)
        for (int p = 0; p < S1_PUBS; p++)
            s1_gbits[g][p] = calloc((s1_n + 63) / 64, sizeof(uint64_t));
    for (int k = 0; k < S1_NSIDS; k++) {
        s1_sid_t *s = &s1_sids[k];
        for (int sj = 0; sj < S1_NSUBJ; sj++)
            s->match[sj] = subj_match(s->pattern, s1_subjects[sj], strlen(s1_subjects[sj]));
        for (int p = 0; p < S1_PUBS; p++) {
            s->last[p] = -1;
            for (uint64_t i = 0; i < s1_n; i++)
                s->expected[p] += s->match[s1_subject_of(p, i)];
        }
    }
    for (int p = 0; p < S1_PUBS; p++) {
        s1_gexpected[0][p] = s1_sids[7].expected[p];
        s1_gexpected[1][p] = s1_sids[10].expected[p];
    }
    static char names[S1_CONNS + S1_PUBS][16];
    for (int p = 0; p < S1_PUBS; p++) {
        snprintf(names[S1_CONNS + p], 16, "s1-pub%d@%s", p, s1_pub_node[p]->name);
        cli_connect(&s1_pubc[p], names[S1_CONNS + p], s1_pub_node[p]);
    }
    for (int conn = 0; conn < S1_CONNS; conn++) {
        cli_t *c = &s1_subc[conn];
        snprintf(names[conn], 16, "s1-sub%d@%s", conn, s1_conn_node[conn]->name);
        cli_connect(c, names[conn], s1_conn_node[conn]);
        c->on_msg = s1_on_msg;
        c->arg = (void *)(intptr_t)conn;
        c->probe_sid = S1_PROBE_SID;
        for (int k = 0; k < S1_NSIDS; k++) {
            s1_sid_t *s = &s1_sids[k];
            if (s->conn != conn)
                continue;
            if (s->queue != NULL)
                cli_sendf(c, "SUB %s %s %d\r\n", s->pattern, s->queue, k + 1);
            else
                cli_sendf(c, "SUB %s %d\r\n", s->pattern, k + 1);
        }
        char probe[32];
        snprintf(probe, sizeof probe, "pr1.%d", conn);
        cli_sendf(c, "SUB %s %d\r\n", probe, S1_PROBE_SID);
        cli_sync(c);
        for (int p = 0; p < S1_PUBS; p++)
            probe_until(c, &s1_pubc[p], probe, p);
    }
}

static void
s1_start(void)
{
    for (int conn = 0; conn < S1_CONNS; conn++)
        spawn(&s1_sub_th[conn], s1_sub_main, (void *)(intptr_t)conn);
    for (int p = 0; p < S1_PUBS; p++)
        spawn(&s1_pub_th[p], s1_pub_main, (void *)(intptr_t)p);
}

/* Returns: the deliveries checked. */
static uint64_t
s1_finish(void)
{
    wait_count("s1 subscribers complete", &s1_subs_complete, S1_CONNS);
    /* release: the subscribers do their final check once they see it. */
    atomic_store_explicit(&s1_stop, 1, memory_order_release);
    for (int p = 0; p < S1_PUBS; p++)
        join(s1_pub_th[p]);
    for (int conn = 0; conn < S1_CONNS; conn++)
        join(s1_sub_th[conn]);
    uint64_t total = 0;
    for (int g = 0; g < 2; g++)
        for (int p = 0; p < S1_PUBS; p++) {
            uint64_t got = atomic_load(&s1_gseen[g][p]);
            if (got != s1_gexpected[g][p])
                stress_fail("s1: queue group %d: %llu of publisher %d's messages, expected %llu", g,
                            (ull)got, p, (ull)s1_gexpected[g][p]);
            total += got;
            free(s1_gbits[g][p]);
        }
    for (int k = 0; k < S1_NSIDS; k++)
        for (int p = 0; p < S1_PUBS; p++)
            if (s1_sids[k].group < 0)
                total += s1_sids[k].count[p];
    return total;
}

/* ==== scenario 2: interest churn across the route C -> A ==== */

#define S2_THREADS 2
#define S2_MSGS    16
#define S2_AFTER   6
#define S2_FENCE   1

typedef struct s2_state {
    int t;
    char subj[48];         /* what the publisher on A sends to in this round */
    uint64_t cur_sid;      /* the live subscription; 0 between rounds */
    uint64_t dead_below;   /* sids below it were unsubscribed and answered */
    uint64_t unsub_sid;    /* the sid whose UNSUB is in flight or answered */
    uint64_t unsub_pong;   /* the PONG count that answers that UNSUB */
    int64_t last_probe, last_after;
    bool probe_seen;
    uint64_t next_msg;
    uint64_t fence_seen;
} s2_state_t;

static _Atomic int s2_done;
static _Atomic uint64_t s2_rounds, s2_late;
static uint64_t s2_iters;
static bool s2_strict;
static pthread_t s2_th[S2_THREADS];

static void
s2_on_msg(cli_t *c, const ev_t *ev)
{
    s2_state_t *st = c->arg;
    if (ev->sid == S2_FENCE) {
        if (ev->data_len == 1)
            return; /* a late probe of the fence */
        uint64_t f[1];
        if (ev->data_len < 2 || ev->data[0] != 'F')
            stress_fail("%s: bad fence '%.*s'", c->name, (int)ev->data_len, ev->data);
        payload_fields(ev->data + 1, ev->data_len - 1, f, 1, c->name);
        if (f[0] != st->fence_seen + 1)
            stress_fail("%s: fence %llu after %llu", c->name, (ull)f[0], (ull)st->fence_seen);
        st->fence_seen = f[0];
        return;
    }
    if (ev->sid < st->dead_below)
        stress_fail("%s: message on sid %llu, unsubscribed and answered: '%.*s'", c->name,
                    (ull)ev->sid, (int)ev->data_len, ev->data);
    if (ev->sid != st->cur_sid && ev->sid != st->unsub_sid)
        stress_fail("%s: message on unknown sid %llu", c->name, (ull)ev->sid);
    if (!str_eq(ev->subj, ev->subj_len, st->subj))
        stress_fail("%s: sid %llu: subject '%.*s', expected %s", c->name, (ull)ev->sid,
                    (int)ev->subj_len, ev->subj, st->subj);
    uint64_t f[1];
    if (ev->data_len < 3)
        stress_fail("%s: bad payload '%.*s'", c->name, (int)ev->data_len, ev->data);
    payload_fields(ev->data + 1, ev->data_len - 1, f, 1, c->name);
    bool after_pong = ev->sid == st->unsub_sid && c->pongs >= st->unsub_pong;
    switch (ev->data[0]) {
    case 'P':
        if (st->next_msg > 0 || st->unsub_sid == ev->sid)
            stress_fail("%s: probe %llu after the messages", c->name, (ull)f[0]);
        if ((int64_t)f[0] <= st->last_probe)
            stress_fail("%s: probe %llu after %lld", c->name, (ull)f[0], (long long)st->last_probe);
        st->last_probe = (int64_t)f[0];
        st->probe_seen = true;
        break;
    case 'M':
        if (f[0] != st->next_msg || st->unsub_sid == ev->sid)
            stress_fail("%s: sid %llu: message %llu, expected %llu (lost, twice or reordered)",
                        c->name, (ull)ev->sid, (ull)f[0], (ull)st->next_msg);
        st->next_msg++;
        break;
    case 'A': /* published while the UNSUB was in flight */
    case 'Z': /* published after the UNSUB's PONG */
        if (ev->sid != st->unsub_sid)
            stress_fail("%s: '%.*s' before the UNSUB", c->name, (int)ev->data_len, ev->data);
        if ((int64_t)f[0] <= st->last_after)
            stress_fail("%s: sid %llu: after-message %llu after %lld (twice or reordered)",
                        c->name, (ull)ev->sid, (ull)f[0], (long long)st->last_after);
        st->last_after = (int64_t)f[0];
        if (ev->data[0] == 'Z')
            stress_fail("%s: sid %llu: '%.*s', published on A after the UNSUB's PONG, delivered",
                        c->name, (ull)ev->sid, (int)ev->data_len, ev->data);
        if (after_pong) {
            /* Matched on C before the UNSUB, delivered after its PONG: nats-server never does
             * (deliverMsg checks sub.isClosed under the client's lock). */
            atomic_fetch_add_explicit(&s2_late, 1, memory_order_relaxed);
            if (s2_strict)
                stress_fail("%s: sid %llu: '%.*s' delivered after the UNSUB's PONG", c->name,
                            (ull)ev->sid, (int)ev->data_len, ev->data);
        }
        break;
    default:
        stress_fail("%s: bad payload '%.*s'", c->name, (int)ev->data_len, ev->data);
    }
}

static void
s2_pub(cli_t *p, const char *subj, char kind, uint64_t j)
{
    char pl[32];
    int n = snprintf(pl, sizeof pl, "%c%llu.", kind, (ull)j);
    cli_sendf(p, "PUB %s %d\r\n%s\r\n", subj, n, pl);
}

/* Publishes a fence from A and waits until C has it: what A sent before has crossed. */
static void
s2_fence(cli_t *s, cli_t *p, s2_state_t *st, const char *fence_subj)
{
    uint64_t want = st->fence_seen + 1;
    char pl[32];
    int n = snprintf(pl, sizeof pl, "F%llu.", (ull)want);
    cli_sendf(p, "PUB %s %d\r\n%s\r\n", fence_subj, n, pl);
    double since = stress_now_s();
    while (st->fence_seen < want) {
        cli_step(s, &since, "waiting for a fence", false);
        if (cli_pump(p, 0) < 0)
            stress_fail("%s: connection closed", p->name);
    }
}

static void *
s2_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    char sname[16], pname[16], fence[16];
    snprintf(sname, sizeof sname, "s2-sub%d@C", t);
    snprintf(pname, sizeof pname, "s2-pub%d@A", t);
    snprintf(fence, sizeof fence, "r2f.%d", t);
    cli_t s, p;
    s2_state_t st = {.t = t, .last_probe = -1, .last_after = -1};
    cli_connect(&s, sname, &g_c);
    cli_connect(&p, pname, &g_a);
    s.on_msg = s2_on_msg;
    s.arg = &st;
    cli_sendf(&s, "SUB %s %d\r\n", fence, S2_FENCE);
    cli_sync(&s);
    s.probe_sid = S2_FENCE;
    probe_until(&s, &p, fence, 0);
    s.probe_sid = 0;
    for (uint64_t it = 0; it < s2_iters; it++) {
        uint64_t sid = 100 + it;
        int kind = (int)(it % 3);
        st.cur_sid = sid;
        st.last_probe = st.last_after = -1;
        st.probe_seen = false;
        st.next_msg = 0;
        snprintf(st.subj, sizeof st.subj, "r2.%d.%llu%s", t, (ull)it, kind == 1 ? ".x" : "");
        if (kind == 0)
            cli_sendf(&s, "SUB r2.%d.%llu %llu\r\n", t, (ull)it, (ull)sid);
        else if (kind == 1)
            cli_sendf(&s, "SUB r2.%d.%llu.* %llu\r\n", t, (ull)it, (ull)sid);
        else
            cli_sendf(&s, "SUB r2.%d.%llu q%d %llu\r\n", t, (ull)it, t, (ull)sid);
        cli_sync(&s);
        /* Probes until one crosses: the interest is on A from then on. */
        uint64_t k = 0, last = 0;
        double since = stress_now_s();
        while (!st.probe_seen) {
            s2_pub(&p, st.subj, 'P', k++);
            cli_sync(&p);
            if (cli_pump(&s, 2) < 0)
                stress_fail("%s: connection closed", s.name);
            stall_guard("s2 probing", &last, &since);
        }
        for (uint64_t j = 0; j < S2_MSGS; j++)
            s2_pub(&p, st.subj, 'M', j);
        s2_fence(&s, &p, &st, fence);
        if (st.next_msg != S2_MSGS)
            stress_fail("%s: sid %llu: %llu of %d messages before the fence", s.name, (ull)sid,
                        (ull)st.next_msg, S2_MSGS);
        /* UNSUB while A keeps publishing; after its PONG, more from A. */
        st.unsub_sid = sid;
        st.unsub_pong = s.pongs + 1;
        cli_sendf(&s, "UNSUB %llu\r\n", (ull)sid);
        for (uint64_t j = 0; j < S2_AFTER / 2; j++)
            s2_pub(&p, st.subj, 'A', j);
        cli_sync(&s);
        st.cur_sid = 0;
        for (uint64_t j = S2_AFTER / 2; j < S2_AFTER; j++)
            s2_pub(&p, st.subj, 'Z', j);
        s2_fence(&s, &p, &st, fence);
        st.dead_below = sid + 1;
        atomic_fetch_add_explicit(&s2_rounds, 1, memory_order_relaxed);
    }
    cli_sync(&p);
    cli_sync(&s);
    cli_close(&p);
    cli_close(&s);
    atomic_fetch_add_explicit(&s2_done, 1, memory_order_release);
    return NULL;
}

static void
s2_start(double scale)
{
    s2_iters = stress_scaled(500, scale);
    const char *v = getenv("ND_STRESS_ROUTE_STRICT_UNSUB");
    s2_strict = v != NULL && atoi(v) != 0;
    for (int t = 0; t < S2_THREADS; t++)
        spawn(&s2_th[t], s2_main, (void *)(intptr_t)t);
}

/* ==== scenario 3: request/reply across servers ==== */

#define S3_REQUESTERS 2
#define S3_RESPONDERS 2
#define S3_INFLIGHT   16

static _Atomic int s3_stop, s3_ready, s3_done;
static _Atomic uint64_t s3_replies;
static uint64_t s3_n;
static pthread_t s3_req_th[S3_REQUESTERS], s3_resp_th[S3_RESPONDERS];

static void
s3_resp_on_msg(cli_t *c, const ev_t *ev)
{
    if (!str_eq(ev->subj, ev->subj_len, "r3.svc") || ev->reply_len == 0 || ev->hmsg)
        stress_fail("%s: unexpected '%.*s'", c->name, (int)ev->line_len, ev->line);
    char line[128];
    int n = snprintf(line, sizeof line, "PUB %.*s %zu\r\n", (int)ev->reply_len, ev->reply,
                     ev->data_len);
    cli_send(c, line, (size_t)n);
    cli_send(c, ev->data, ev->data_len);
    cli_send(c, "\r\n", 2);
}

static void *
s3_resp_main(void *arg)
{
    int r = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "s3-resp%d@C", r);
    cli_t c;
    cli_connect(&c, name, &g_c);
    c.on_msg = s3_resp_on_msg;
    CLI_SEND_LIT(&c, "SUB r3.svc svc 1\r\n");
    cli_sync(&c);
    atomic_fetch_add_explicit(&s3_ready, 1, memory_order_release);
    while (!atomic_load_explicit(&s3_stop, memory_order_acquire))
        if (cli_pump(&c, 20) < 0)
            stress_fail("%s: connection closed", c.name);
    cli_sync(&c);
    cli_close(&c);
    return NULL;
}

typedef struct s3_req {
    int t;
    uint8_t *got; /* replies per request */
    uint64_t replies;
    bool probe_answered;
} s3_req_t;

static void
s3_req_on_msg(cli_t *c, const ev_t *ev)
{
    s3_req_t *st = c->arg;
    char prefix[16];
    int pl = snprintf(prefix, sizeof prefix, "_R3.%d.", st->t);
    if (ev->subj_len <= (size_t)pl || memcmp(ev->subj, prefix, (size_t)pl) != 0)
        stress_fail("%s: unexpected '%.*s'", c->name, (int)ev->line_len, ev->line);
    const char *rest = ev->subj + pl;
    size_t rest_len = ev->subj_len - (size_t)pl;
    if (rest[0] == 'p') {
        st->probe_answered = true;
        return;
    }
    uint64_t n = parse_u64(rest, rest_len, c->name);
    if (n >= s3_n)
        stress_fail("%s: reply to unknown request %llu", c->name, (ull)n);
    char want[64];
    int wl = snprintf(want, sizeof want, "%d.%llu.%llx", st->t, (ull)n, (ull)mix64(n));
    if (ev->data_len != (size_t)wl || memcmp(ev->data, want, (size_t)wl) != 0)
        stress_fail("%s: reply to %llu: '%.*s', expected '%s'", c->name, (ull)n,
                    (int)ev->data_len, ev->data, want);
    if (st->got[n]++ != 0)
        stress_fail("%s: request %llu answered twice", c->name, (ull)n);
    st->replies++;
    atomic_fetch_add_explicit(&s3_replies, 1, memory_order_relaxed);
}

static void *
s3_req_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "s3-req%d@A", t);
    cli_t c;
    s3_req_t st = {.t = t, .got = calloc(s3_n, 1)};
    cli_connect(&c, name, &g_a);
    c.on_msg = s3_req_on_msg;
    c.arg = &st;
    cli_sendf(&c, "SUB _R3.%d.> 1\r\n", t);
    cli_sync(&c);
    /* Probe requests until one is answered: the responders' interest reached A and ours C. */
    uint64_t k = 0, last = 0;
    double since = stress_now_s();
    while (!st.probe_answered) {
        cli_sendf(&c, "PUB r3.svc _R3.%d.p%llu 1\r\nx\r\n", t, (ull)k++);
        cli_sync(&c);
        stall_guard("s3 probing", &last, &since);
    }
    for (uint64_t n = 0; n < s3_n; n++) {
        since = stress_now_s();
        while (n >= st.replies + S3_INFLIGHT)
            cli_step(&c, &since, "waiting for replies", false);
        char pl[64];
        int len = snprintf(pl, sizeof pl, "%d.%llu.%llx", t, (ull)n, (ull)mix64(n));
        cli_sendf(&c, "PUB r3.svc _R3.%d.%llu %d\r\n%s\r\n", t, (ull)n, len, pl);
    }
    since = stress_now_s();
    while (st.replies < s3_n)
        cli_step(&c, &since, "waiting for the last replies", false);
    cli_sync(&c);
    free(st.got);
    cli_close(&c);
    atomic_fetch_add_explicit(&s3_done, 1, memory_order_release);
    return NULL;
}

static void
s3_start(double scale)
{
    s3_n = stress_scaled(10000, scale);
    for (int r = 0; r < S3_RESPONDERS; r++)
        spawn(&s3_resp_th[r], s3_resp_main, (void *)(intptr_t)r);
    wait_count("s3 responders", &s3_ready, S3_RESPONDERS);
    for (int t = 0; t < S3_REQUESTERS; t++)
        spawn(&s3_req_th[t], s3_req_main, (void *)(intptr_t)t);
}

static void
s3_finish(void)
{
    for (int t = 0; t < S3_REQUESTERS; t++)
        join(s3_req_th[t]);
    atomic_store_explicit(&s3_stop, 1, memory_order_release);
    for (int r = 0; r < S3_RESPONDERS; r++)
        join(s3_resp_th[r]);
}

/* ==== scenario 4: a server that joins and leaves ==== */

#define S4_BATCH   16
#define S4_ENOUGH  64 /* A's messages a round waits for after the first */

static _Atomic int s4_stop;
static _Atomic uint64_t s4_sent[2], s4_got_a, s4_got_b, s4_got_sink;
static uint64_t s4_rounds;
static pthread_t s4_pub_th[2], s4_th;

/* Publishes r4.a (on A) or r4.b (on B), numbered, until s4_stop. */
static void *
s4_pub_main(void *arg)
{
    int w = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "s4-pub@%s", w == 0 ? "A" : "B");
    cli_t c;
    cli_connect(&c, name, w == 0 ? &g_a : &g_b);
    uint64_t seq = 0;
    char out[S4_BATCH * 64];
    while (!atomic_load_explicit(&s4_stop, memory_order_acquire)) {
        size_t olen = 0;
        for (int i = 0; i < S4_BATCH; i++, seq++) {
            char pl[24];
            int n = snprintf(pl, sizeof pl, "%llu.", (ull)seq);
            olen += (size_t)sprintf(out + olen, "PUB r4.%c %d\r\n%s\r\n", w == 0 ? 'a' : 'b', n,
                                    pl);
        }
        cli_send(&c, out, olen);
        cli_sync(&c); /* a pace that a subscriber on D keeps up with */
        atomic_store_explicit(&s4_sent[w], seq, memory_order_relaxed);
        stress_sleep_us(500);
    }
    cli_close(&c);
    return NULL;
}

typedef struct s4_sub {
    int64_t last[2]; /* -1 until the first of A's (B's) messages */
    uint64_t got[2];
} s4_sub_t;

static void
s4_on_msg(cli_t *c, const ev_t *ev)
{
    s4_sub_t *st = c->arg;
    if (ev->sid == 2) { /* the r1.> sink: load for the route to D */
        atomic_fetch_add_explicit(&s4_got_sink, 1, memory_order_relaxed);
        return;
    }
    int w;
    if (str_eq(ev->subj, ev->subj_len, "r4.a"))
        w = 0;
    else if (str_eq(ev->subj, ev->subj_len, "r4.b"))
        w = 1;
    else
        stress_fail("%s: unexpected '%.*s'", c->name, (int)ev->line_len, ev->line);
    uint64_t f[1];
    payload_fields(ev->data, ev->data_len, f, 1, c->name);
    if (st->last[w] >= 0 && (w == 0 ? (int64_t)f[0] != st->last[w] + 1
                                    : (int64_t)f[0] <= st->last[w]))
        stress_fail("%s: r4.%c message %llu after %lld (%s)", c->name, w == 0 ? 'a' : 'b',
                    (ull)f[0], (long long)st->last[w],
                    w == 0 ? "a gap or a duplicate once D's interest reached A"
                           : "reordered or twice");
    st->last[w] = (int64_t)f[0];
    st->got[w]++;
}

static void *
s4_main(void *arg)
{
    (void)arg;
    for (uint64_t r = 0; r < s4_rounds; r++) {
        node_t d = {.name = "D"};
        node_start(&d, &g_a);
        cli_t c;
        s4_sub_t st = {.last = {-1, -1}};
        cli_connect(&c, "s4-sub@D", &d);
        c.on_msg = s4_on_msg;
        c.arg = &st;
        c.allow_err = true; /* natsd_stop may say why it closes */
        CLI_SEND_LIT(&c, "SUB r4.> 1\r\nSUB r1.> 2\r\n");
        cli_sync(&c);
        double since = stress_now_s();
        while (st.got[0] < S4_ENOUGH)
            cli_step(&c, &since, "waiting for A's messages on D", false);
        /* Stop D with messages in flight; the subscriber must see the close. */
        node_stop(&d);
        since = stress_now_s();
        while (cli_step(&c, &since, "waiting for natsd_stop to close it", true))
            ;
        cli_close(&c);
        atomic_fetch_add_explicit(&s4_got_a, st.got[0], memory_order_relaxed);
        atomic_fetch_add_explicit(&s4_got_b, st.got[1], memory_order_relaxed);
    }
    return NULL;
}

static void
s4_start(double scale)
{
    s4_rounds = stress_scaled(24, scale);
    for (int w = 0; w < 2; w++)
        spawn(&s4_pub_th[w], s4_pub_main, (void *)(intptr_t)w);
    spawn(&s4_th, s4_main, NULL);
}

static void
s4_finish(void)
{
    join(s4_th);
    atomic_store_explicit(&s4_stop, 1, memory_order_release);
    for (int w = 0; w < 2; w++)
        join(s4_pub_th[w]);
}

/* ==== scenario 5: natsd_stop on every server under load ==== */

#define S5_THREADS 3

static _Atomic int s5_stopping, s5_active;
static _Atomic uint64_t s5_sent, s5_reconnects;
static pthread_t s5_th[S5_THREADS];
static cli_t s5_held[3];

static void
s5_on_msg(cli_t *c, const ev_t *ev)
{
    (void)c;
    (void)ev;
}

static node_t *
s5_node(int i)
{
    return i == 0 ? &g_a : i == 1 ? &g_b : &g_c;
}

static void *
s5_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[48], line[128];
    snprintf(name, sizeof name, "s5-noise@%s", s5_node(t)->name);
    int port = s5_node(t)->port;
    bool counted = false;
    while (!atomic_load_explicit(&s5_stopping, memory_order_acquire)) {
        cli_t c;
        bool ok = cli_open(&c, name, port, 0);
        c.on_msg = s5_on_msg;
        c.allow_err = true;
        if (ok)
            ok = cli_handshake(&c, "{\"verbose\":false,\"pedantic\":false}", true) &&
                 CLI_TRY_LIT(&c, "SUB r5.> 1\r\n");
        if (ok && !counted) {
            counted = true;
            atomic_fetch_add_explicit(&s5_active, 1, memory_order_release);
        }
        while (ok) {
            for (int i = 0; i < 4 && ok; i++) {
                int n = snprintf(line, sizeof line, "PUB r5.%d 16\r\n0123456789abcdef\r\n", t);
                ok = cli_send_try(&c, line, (size_t)n);
                atomic_fetch_add_explicit(&s5_sent, ok, memory_order_relaxed);
            }
            if (ok)
                ok = cli_pump(&c, 0) >= 0;
            stress_sleep_us(2000); /* noise, not load */
        }
        cli_close(&c);
        /* A refused connect after the stop is expected; before it, a reconnect loop is a bug. */
        if (!atomic_load_explicit(&s5_stopping, memory_order_acquire) &&
            atomic_fetch_add_explicit(&s5_reconnects, 1, memory_order_relaxed) > 10000)
            stress_fail("%s: reconnecting over and over", name);
    }
    return NULL;
}

static void
s5_start(void)
{
    for (int t = 0; t < S5_THREADS; t++)
        spawn(&s5_th[t], s5_main, (void *)(intptr_t)t);
    wait_count("s5 noise connected", &s5_active, S5_THREADS);
}

/* One connection per server held half-way through a PUB across the stop. */
static void
s5_hold(void)
{
    static const char *const names[3] = {"held@A", "held@B", "held@C"};
    for (int i = 0; i < 3; i++) {
        cli_t *c = &s5_held[i];
        cli_connect(c, names[i], s5_node(i));
        c->on_msg = s5_on_msg;
        c->allow_err = true;
        CLI_SEND_LIT(c, "SUB r5.> 1\r\n");
        cli_sync(c);
        CLI_SEND_LIT(c, "PUB r5.held 100\r\n0123456789");
    }
}

static void
s5_finish(void)
{
    for (int t = 0; t < S5_THREADS; t++)
        join(s5_th[t]);
    for (int i = 0; i < 3; i++) {
        cli_t *c = &s5_held[i];
        double since = stress_now_s();
        while (cli_step(c, &since, "waiting for natsd_stop to close it", true))
            ;
        cli_close(c);
    }
}

/* ==== main ==== */

/* Proves the full mesh: for each ordered pair (x, y), a probe published on x reaches a
 * subscriber on y. A message crosses one route only, so each pair needs its own route. */
static void
wait_mesh(void)
{
    node_t *nodes[3] = {&g_a, &g_b, &g_c};
    cli_t sub[3], pub[3];
    static const char *const sn[3] = {"mesh-sub@A", "mesh-sub@B", "mesh-sub@C"};
    static const char *const pn[3] = {"mesh-pub@A", "mesh-pub@B", "mesh-pub@C"};
    for (int i = 0; i < 3; i++) {
        cli_connect(&sub[i], sn[i], nodes[i]);
        cli_connect(&pub[i], pn[i], nodes[i]);
        sub[i].probe_sid = 1;
        cli_sendf(&sub[i], "SUB mesh.%d 1\r\n", i);
        cli_sync(&sub[i]);
    }
    for (int y = 0; y < 3; y++) {
        char subj[16];
        snprintf(subj, sizeof subj, "mesh.%d", y);
        for (int x = 0; x < 3; x++)
            if (x != y)
                probe_until(&sub[y], &pub[x], subj, x);
    }
    for (int i = 0; i < 3; i++) {
        cli_close(&sub[i]);
        cli_close(&pub[i]);
    }
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    double scale = stress_scale(argc, argv);
    g_stall_s = stress_stall_limit_s();
    const char *lg = getenv("ND_STRESS_ROUTE_LOG");
    if (lg == NULL || atoi(lg) == 0)
        natsd_set_log_level(NATSD_LOG_WARN);
    double t0 = stress_now_s();

    node_start(&g_a, NULL);
    node_start(&g_b, &g_a);
    node_start(&g_c, &g_a);
    printf("stress_route: A %d/%d, B %d/%d, C %d/%d (client/cluster), %d workers each, scale "
           "%.2f\n",
           g_a.port, g_a.cport, g_b.port, g_b.cport, g_c.port, g_c.cport, WORKERS, scale);
    wait_mesh();
    printf("  [%5.1f s] full mesh\n", stress_now_s() - t0);

    s1_setup(scale);
    s5_start();
    s3_start(scale);
    s2_start(scale);
    s4_start(scale);
    s1_start();

    wait_count("s1 publishers", &s1_pubs_done, S1_PUBS);
    uint64_t s1_msgs = s1_finish();
    printf("  [%5.1f s] s1 fan-out: %llu messages from %d publishers, %llu deliveries checked\n",
           stress_now_s() - t0, (ull)s1_n, S1_PUBS, (ull)s1_msgs);
    wait_count("s2 churn threads", &s2_done, S2_THREADS);
    for (int t = 0; t < S2_THREADS; t++)
        join(s2_th[t]);
    printf("  [%5.1f s] s2 interest churn: %llu subscriptions, %llu late deliveries after an "
           "UNSUB's PONG\n",
           stress_now_s() - t0, (ull)atomic_load(&s2_rounds), (ull)atomic_load(&s2_late));
    wait_count("s3 requesters", &s3_done, S3_REQUESTERS);
    s3_finish();
    printf("  [%5.1f s] s3 request/reply: %llu replies\n", stress_now_s() - t0,
           (ull)atomic_load(&s3_replies));
    s4_finish();
    printf("  [%5.1f s] s4 route churn: %llu rounds of D; on D %llu of A's, %llu of B's, %llu "
           "fan-out messages\n",
           stress_now_s() - t0, (ull)s4_rounds, (ull)atomic_load(&s4_got_a),
           (ull)atomic_load(&s4_got_b), (ull)atomic_load(&s4_got_sink));

    s5_hold();
    uint64_t before = atomic_load(&s5_sent), last = before;
    double since = stress_now_s();
    while (last < before + 64) {
        stress_sleep_us(1000);
        uint64_t now = atomic_load(&s5_sent);
        if (now != last) {
            last = now;
            since = stress_now_s();
        } else if (stress_now_s() - since > g_stall_s) {
            stress_fail("s5: the noise clients stopped sending");
        }
    }
    /* release: the noise threads stop reconnecting once they see it. */
    atomic_store_explicit(&s5_stopping, 1, memory_order_release);
    node_stop(&g_a);
    node_stop(&g_b);
    node_stop(&g_c);
    s5_finish();
    printf("  [%5.1f s] s5 stop under load: %llu noise messages sent, %llu reconnects\n",
           stress_now_s() - t0, (ull)atomic_load(&s5_sent), (ull)atomic_load(&s5_reconnects));
    printf("stress_route: OK in %.1f s\n", stress_now_s() - t0);
    return 0;
}
