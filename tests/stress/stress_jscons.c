/* stress_jscons: JetStream consumers under concurrent use.
 *
 * natsd runs in-process (127.0.0.1, a random port, three workers) with JetStream on a temporary
 * store. Threads, each with its own connection:
 *   - PUBLISHERS publishers into stream S (s.<i>), each waiting for its PubAck;
 *   - PULLERS pull consumers of S (durables PULL<i>): batches of pull requests with expires,
 *     every delivery acked (+ACK without a reply, every 7th with one, every 11th -NAK'd once),
 *     until each stream sequence was acked once;
 *   - PUSHERS push consumers of S (PUSH<i>, flow control and heartbeats), acking and answering
 *     flow control, until each stream sequence was acked;
 *   - a churn thread: creates and deletes consumers of S while the others run (pull, push,
 *     ephemeral), and a stream Y with a pull consumer that has requests waiting and a push
 *     consumer delivering when Y is deleted;
 *   - a lister: CONSUMER.LIST / CONSUMER.INFO of S in a loop.
 * At the end every pull/push consumer of S reports everything acked. TSan checks the consumer
 * actors against the stream (wake-ups, the store's lock, retention), the API service's consumer
 * table, and the teardown of consumers whose stream goes away under them.
 *
 * No timing assertions: every wait is a hang guard (ND_STRESS_STALL_S, default 120 s).
 * Usage: stress_jscons [scale]   (or ND_STRESS_SCALE; 1.0 = 1500 messages per publisher).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "natsd/natsd.h"
#include "stress_net.h"
#include "stress_util.h"

#define PUBLISHERS 3
#define PULLERS    2
#define PUSHERS    2

static int g_port;
static uint64_t g_msgs, g_total, g_churns;
static _Atomic bool g_done;
static _Atomic uint64_t g_progress;
/* per thread: pullers 0.., pushers 10.., publishers 20.., churn 30 */
static _Atomic uint64_t g_count[32];

/* ---- a minimal protocol reader ---- */

typedef struct conn {
    int fd;
    int id;
    char *buf;
    size_t len, cap;
} conn_t;

typedef struct frame {
    char subj[256], reply[256];
    const char *hdr; /* NULL for MSG */
    size_t hdr_len;
    const char *data;
    size_t data_len;
    size_t consumed;
} frame_t;

static void
conn_send(conn_t *c, const char *p, size_t n)
{
    STRESS_CHECK(stress_send_all(c->fd, p, n), "conn %d: server closed", c->id);
}

static void
conn_sendf(conn_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
conn_sendf(conn_t *c, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    STRESS_CHECK(n > 0 && (size_t)n < sizeof line, "line too long");
    conn_send(c, line, (size_t)n);
}

/* PUB subj reply body (reply may be NULL). */
static void
pub(conn_t *c, const char *subj, const char *reply, const char *body)
{
    conn_sendf(c, "PUB %s %s%s%zu\r\n%s\r\n", subj, reply ? reply : "", reply ? " " : "",
               strlen(body), body);
}

static void
conn_open(conn_t *c, int id)
{
    c->id = id;
    c->cap = 1 << 20;
    c->buf = malloc(c->cap);
    c->len = 0;
    c->fd = stress_dial(g_port);
    STRESS_CHECK(stress_read_until(c->fd, c->buf, c->cap, &c->len, "\r\n"), "no INFO");
    c->len = 0;
    conn_sendf(c,
               "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
               "SUB _R%d.> 1\r\nPING\r\n",
               id);
    STRESS_CHECK(stress_read_until(c->fd, c->buf, c->cap, &c->len, "PONG\r\n"), "no PONG");
    c->len = 0;
}

static void
conn_close(conn_t *c)
{
    close(c->fd);
    free(c->buf);
}

/* Reads the next MSG/HMSG (answering PINGs, skipping +OK/PONG/INFO). timeout_ms < 0: the hang
 * guard, failing the program; else returns false when nothing came in time. The frame points into
 * c->buf until the next call. */
static bool
next_frame(conn_t *c, frame_t *f, int timeout_ms)
{
    if (f->consumed > 0) {
        memmove(c->buf, c->buf + f->consumed, c->len - f->consumed);
        c->len -= f->consumed;
        f->consumed = 0;
    }
    for (;;) {
        char *eol = memmem(c->buf, c->len, "\r\n", 2);
        if (eol != NULL) {
            size_t ll = (size_t)(eol - c->buf);
            char line[600];
            STRESS_CHECK(ll < sizeof line, "control line too long");
            memcpy(line, c->buf, ll);
            line[ll] = '\0';
            bool hmsg = strncmp(line, "HMSG ", 5) == 0;
            if (hmsg || strncmp(line, "MSG ", 4) == 0) {
                char copy[600], *save = NULL;
                memcpy(copy, line, ll + 1);
                char *tok[8];
                int nt = 0;
                for (char *s = strtok_r(line, " ", &save); s != NULL && nt < 8;
                     s = strtok_r(NULL, " ", &save))
                    tok[nt++] = s;
                int want = hmsg ? 5 : 4; /* without reply */
                STRESS_CHECK(nt == want || nt == want + 1, "conn %d: bad frame line %s", c->id,
                             copy);
                size_t hl = 0, tl;
                if (hmsg) {
                    hl = strtoul(tok[nt - 2], NULL, 10);
                    tl = strtoul(tok[nt - 1], NULL, 10);
                } else {
                    tl = strtoul(tok[nt - 1], NULL, 10);
                }
                size_t need = ll + 2 + tl + 2;
                if (c->len >= need) {
                    snprintf(f->subj, sizeof f->subj, "%s", tok[1]);
                    snprintf(f->reply, sizeof f->reply, "%s", nt == want + 1 ? tok[3] : "");
                    f->hdr = hmsg ? eol + 2 : NULL;
                    f->hdr_len = hl;
                    f->data = eol + 2 + hl;
                    f->data_len = tl - hl;
                    f->consumed = need;
                    return true;
                }
            } else {
                if (strcmp(line, "PING") == 0)
                    conn_send(c, "PONG\r\n", 6);
                else
                    STRESS_CHECK(strncmp(line, "-ERR", 4) != 0, "conn %d: %s", c->id, line);
                memmove(c->buf, eol + 2, c->len - ll - 2);
                c->len -= ll + 2;
                continue;
            }
        }
        if (c->len + 65536 > c->cap) {
            c->cap *= 2;
            c->buf = realloc(c->buf, c->cap);
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int lim = timeout_ms < 0 ? (int)(stress_stall_limit_s() * 1000) : timeout_ms;
        int r = poll(&p, 1, lim);
        if (r == 0 && timeout_ms >= 0)
            return false;
        STRESS_CHECK(r > 0, "conn %d: nothing within the hang guard", c->id);
        ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        STRESS_CHECK(n > 0, "conn %d: server closed the connection", c->id);
        c->len += (size_t)n;
    }
}

/* A request on subj with reply _R<id>.<tag>; returns a malloc'd copy of the reply's payload.
 * Other frames that arrive meanwhile are dropped (callers use it on connections that only do
 * requests). */
static char *
request(conn_t *c, const char *subj, const char *tag, const char *body)
{
    char reply[64];
    snprintf(reply, sizeof reply, "_R%d.%s", c->id, tag);
    pub(c, subj, reply, body);
    frame_t f = {0};
    for (;;) {
        next_frame(c, &f, -1);
        if (strcmp(f.subj, reply) == 0) {
            char *r = malloc(f.data_len + 1);
            memcpy(r, f.data, f.data_len);
            r[f.data_len] = '\0';
            /* leave the buffer consistent for the next call */
            memmove(c->buf, c->buf + f.consumed, c->len - f.consumed);
            c->len -= f.consumed;
            return r;
        }
    }
}

static void
api_ok(conn_t *c, const char *subj, const char *body, const char *needle)
{
    char *r = request(c, subj, "api", body);
    STRESS_CHECK(strstr(r, needle) != NULL, "%s: %.300s", subj, r);
    free(r);
}

/* The stream sequence in an ack subject $JS.ACK.<s>.<c>.<dc>.<sseq>.<dseq>.<ts>.<pending>. */
static uint64_t
ack_sseq(const char *ack)
{
    const char *p = ack;
    for (int dots = 0; dots < 5; p++) {
        STRESS_CHECK(*p != '\0', "bad ack subject %s", ack);
        if (*p == '.')
            dots++;
    }
    return strtoull(p, NULL, 10);
}

/* ---- threads ---- */

static void *
publisher(void *arg)
{
    int id = (int)(intptr_t)arg;
    conn_t c;
    conn_open(&c, id);
    char subj[32], body[64];
    snprintf(subj, sizeof subj, "s.%d", id);
    for (uint64_t i = 1; i <= g_msgs; i++) {
        snprintf(body, sizeof body, "p%d-%llu", id, (unsigned long long)i);
        char *r = request(&c, subj, "p", body);
        STRESS_CHECK(strstr(r, "\"stream\":\"S\"") != NULL, "pub %s: %s", subj, r);
        free(r);
        atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_count[20 + id], 1, memory_order_relaxed);
    }
    conn_close(&c);
    return NULL;
}

/* Counts first acks per stream sequence. */
typedef struct seen {
    unsigned char *bits;
    uint64_t n;
} seen_t;

static bool
seen_add(seen_t *s, uint64_t seq)
{
    STRESS_CHECK(seq >= 1 && seq <= g_total, "sequence %llu out of range",
                 (unsigned long long)seq);
    if (s->bits[seq])
        return false;
    s->bits[seq] = 1;
    s->n++;
    return true;
}

static void *
puller(void *arg)
{
    int id = (int)(intptr_t)arg;
    conn_t c;
    conn_open(&c, 10 + id);
    char name[16], subj[128], cfg[256], reply[32];
    snprintf(name, sizeof name, "PULL%d", id);
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.S.%s", name);
    snprintf(cfg, sizeof cfg,
             "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"%s\",\"ack_policy\":"
             "\"explicit\",\"max_ack_pending\":200}}",
             name);
    api_ok(&c, subj, cfg, "consumer_create_response\",\"stream_name");
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.MSG.NEXT.S.%s", name);
    snprintf(reply, sizeof reply, "_R%d.n", c.id);
    seen_t seen = {calloc(g_total + 1, 1), 0};
    uint64_t k = 0;
    frame_t f = {0};
    /* Messages the outstanding requests may still deliver: a request ends silently when its
     * batch is full, with 408 and Nats-Pending-Messages otherwise. */
    int64_t want = 0;
    while (seen.n < g_total) {
        while (want < 75) {
            pub(&c, subj, reply, "{\"batch\":25,\"expires\":300000000}");
            want += 25;
        }
        next_frame(&c, &f, -1);
        if (strncmp(f.subj, "_R", 2) == 0 && f.hdr == NULL)
            continue; /* an ack's reply */
        if (f.hdr != NULL && f.data_len == 0 && f.reply[0] == '\0') {
            const char *pm = memmem(f.hdr, f.hdr_len, "Nats-Pending-Messages: ", 23);
            if (pm != NULL)
                want -= strtoll(pm + 23, NULL, 10);
            else if (memmem(f.hdr, f.hdr_len, " 409 ", 5) || memmem(f.hdr, f.hdr_len, " 404 ", 5))
                want -= 25;
            continue;
        }
        want--;
        STRESS_CHECK(strncmp(f.reply, "$JS.ACK.S.", 10) == 0, "pull delivery %s without ack",
                     f.subj);
        uint64_t seq = ack_sseq(f.reply);
        k++;
        if (k % 11 == 0 && !seen.bits[seq]) {
            pub(&c, f.reply, NULL, "-NAK");
            continue;
        }
        if (seen_add(&seen, seq)) {
            atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_count[id], 1, memory_order_relaxed);
        }
        char ar[32];
        snprintf(ar, sizeof ar, "_R%d.a", c.id);
        pub(&c, f.reply, k % 7 == 0 ? ar : NULL, "+ACK");
    }
    free(seen.bits);
    conn_close(&c);
    return NULL;
}

static void *
pusher(void *arg)
{
    int id = (int)(intptr_t)arg;
    conn_t c;
    conn_open(&c, 20 + id);
    char name[16], subj[128], cfg[384];
    snprintf(name, sizeof name, "PUSH%d", id);
    conn_sendf(&c, "SUB dlv.%d 2\r\n", id);
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.S.%s", name);
    snprintf(cfg, sizeof cfg,
             "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"%s\",\"deliver_subject\":"
             "\"dlv.%d\",\"ack_policy\":\"explicit\",\"flow_control\":true,\"idle_heartbeat\":"
             "500000000,\"ack_wait\":5000000000}}",
             name, id);
    /* The create reply may come after the first deliveries: read them all in one loop. */
    char reply[32];
    snprintf(reply, sizeof reply, "_R%d.api", c.id);
    pub(&c, subj, reply, cfg);
    seen_t seen = {calloc(g_total + 1, 1), 0};
    frame_t f = {0};
    bool created = false;
    while (seen.n < g_total || !created) {
        next_frame(&c, &f, -1);
        if (strcmp(f.subj, reply) == 0) {
            STRESS_CHECK(memmem(f.data, f.data_len, "\"error\"", 7) == NULL, "push create: %.*s",
                         (int)f.data_len, f.data);
            created = true;
            continue;
        }
        if (f.hdr != NULL && f.data_len == 0) {
            /* flow control request (with a reply) or heartbeat (without) */
            if (f.reply[0] != '\0')
                pub(&c, f.reply, NULL, "");
            continue;
        }
        STRESS_CHECK(strncmp(f.reply, "$JS.ACK.S.", 10) == 0, "push delivery %s without ack",
                     f.subj);
        if (seen_add(&seen, ack_sseq(f.reply))) {
            atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_count[10 + id], 1, memory_order_relaxed);
        }
        pub(&c, f.reply, NULL, "+ACK");
    }
    free(seen.bits);
    conn_close(&c);
    return NULL;
}

static void *
churn(void *arg)
{
    (void)arg;
    conn_t c;
    conn_open(&c, 100);
    /* A second connection holds Y's pull requests and push subscription. */
    conn_t y;
    conn_open(&y, 101);
    conn_sendf(&y, "SUB ydlv 2\r\n");
    char subj[128], cfg[384];
    for (uint64_t i = 0; i < g_churns; i++) {
        /* consumers of S come and go while S is busy */
        int kind = (int)(i % 3);
        snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.S.CH%llu", (unsigned long long)i);
        snprintf(cfg, sizeof cfg,
                 "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"CH%llu\",\"ack_policy\":"
                 "\"explicit\"%s}}",
                 (unsigned long long)i,
                 kind == 1 ? ",\"deliver_subject\":\"nobody.listens\"" : "");
        api_ok(&c, subj, cfg, "consumer_create_response\",\"stream_name");
        if (kind == 0) {
            /* a pull request waiting on it when it goes */
            snprintf(subj, sizeof subj, "$JS.API.CONSUMER.MSG.NEXT.S.CH%llu",
                     (unsigned long long)i);
            pub(&y, subj, "_R101.w", "{\"batch\":5,\"expires\":2000000000}");
        }
        snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DELETE.S.CH%llu", (unsigned long long)i);
        api_ok(&c, subj, "", "\"success\":true");
        if (kind == 2)
            api_ok(&c, "$JS.API.CONSUMER.CREATE.S",
                   "{\"stream_name\":\"S\",\"config\":{\"ack_policy\":\"none\","
                   "\"inactive_threshold\":100000000}}",
                   "consumer_create_response\",\"stream_name");

        /* a stream deleted under its consumers */
        if (i % 4 == 0) {
            api_ok(&c, "$JS.API.STREAM.CREATE.Y",
                   i % 8 ? "{\"name\":\"Y\",\"subjects\":[\"y.>\"]}"
                         : "{\"name\":\"Y\",\"subjects\":[\"y.>\"],\"storage\":\"memory\","
                           "\"retention\":\"interest\"}",
                   "\"did_create\":true");
            api_ok(&c, "$JS.API.CONSUMER.CREATE.Y.YP",
                   "{\"stream_name\":\"Y\",\"config\":{\"durable_name\":\"YP\",\"ack_policy\":"
                   "\"explicit\"}}",
                   "consumer_create_response\",\"stream_name");
            api_ok(&c, "$JS.API.CONSUMER.CREATE.Y.YQ",
                   "{\"stream_name\":\"Y\",\"config\":{\"durable_name\":\"YQ\",\"ack_policy\":"
                   "\"explicit\",\"deliver_subject\":\"ydlv\"}}",
                   "consumer_create_response\",\"stream_name");
            for (int k = 0; k < 3; k++)
                pub(&y, "$JS.API.CONSUMER.MSG.NEXT.Y.YP", "_R101.y",
                    "{\"batch\":10,\"expires\":5000000000}");
            for (int k = 0; k < 20; k++)
                pub(&c, "y.x", NULL, "yy");
            api_ok(&c, "$JS.API.STREAM.DELETE.Y", "", "\"success\":true");
        }
        /* drain what y received (deliveries, 409 Consumer Deleted, timeouts); ack some */
        frame_t f = {0};
        while (next_frame(&y, &f, 0)) {
            if (f.reply[0] != '\0' && strncmp(f.reply, "$JS.ACK.", 8) == 0)
                pub(&y, f.reply, NULL, "+ACK");
        }
        atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_count[30], 1, memory_order_relaxed);
    }
    conn_close(&y);
    conn_close(&c);
    return NULL;
}

static void *
lister(void *arg)
{
    (void)arg;
    conn_t c;
    conn_open(&c, 200);
    while (!atomic_load(&g_done)) {
        char *r = request(&c, "$JS.API.CONSUMER.LIST.S", "l", "");
        STRESS_CHECK(strstr(r, "consumer_list_response") != NULL, "list: %.200s", r);
        free(r);
        r = request(&c, "$JS.API.CONSUMER.INFO.S.PULL0", "i", "");
        STRESS_CHECK(strstr(r, "consumer_info_response") != NULL, "info: %.200s", r);
        free(r);
        r = request(&c, "$JS.API.STREAM.INFO.S", "s", "");
        free(r);
    }
    conn_close(&c);
    return NULL;
}

/* The consumer's info must say everything was delivered and acked. */
static void
check_all_acked(conn_t *c, const char *name)
{
    char subj[128], want[64];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.INFO.S.%s", name);
    for (int tries = 0;; tries++) {
        char *r = request(c, subj, "f", "");
        snprintf(want, sizeof want, "\"num_ack_pending\":0,");
        bool ok = strstr(r, want) != NULL && strstr(r, "\"num_pending\":0") != NULL;
        if (ok || tries > 200) {
            STRESS_CHECK(ok, "%s not fully acked: %.600s", name, r);
            free(r);
            return;
        }
        free(r);
        stress_sleep_us(50000);
    }
}

typedef struct group {
    pthread_t t[16];
    int n;
    _Atomic int done;
} group_t;

static void *
joiner(void *arg)
{
    group_t *g = arg;
    for (int i = 0; i < g->n; i++)
        pthread_join(g->t[i], NULL);
    /* release: pairs with stress_wait's acquire. */
    atomic_store_explicit(&g->done, 1, memory_order_release);
    return NULL;
}

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    g_msgs = stress_scaled(1500, f);
    g_total = g_msgs * PUBLISHERS;
    g_churns = stress_scaled(120, f);
    char dir[] = "/tmp/stress_jscons_XXXXXX";
    STRESS_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256], conf[512];
    snprintf(path, sizeof path, "%s/natsd.conf", dir);
    snprintf(conf, sizeof conf, "jetstream { store_dir: \"%s/store\" }\n", dir);
    FILE *fp = fopen(path, "w");
    STRESS_CHECK(fp != NULL && fputs(conf, fp) >= 0 && fclose(fp) == 0, "config");
    natsd_t *s = stress_start_server(path);
    g_port = natsd_port(s);

    conn_t c;
    conn_open(&c, 300);
    api_ok(&c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}",
           "\"did_create\":true");

    group_t g = {.n = 0};
    for (int i = 0; i < PULLERS; i++)
        STRESS_CHECK(pthread_create(&g.t[g.n++], NULL, puller, (void *)(intptr_t)i) == 0, "thread");
    for (int i = 0; i < PUSHERS; i++)
        STRESS_CHECK(pthread_create(&g.t[g.n++], NULL, pusher, (void *)(intptr_t)i) == 0, "thread");
    for (int i = 0; i < PUBLISHERS; i++)
        STRESS_CHECK(pthread_create(&g.t[g.n++], NULL, publisher, (void *)(intptr_t)i) == 0,
                     "thread");
    STRESS_CHECK(pthread_create(&g.t[g.n++], NULL, churn, NULL) == 0, "thread");
    pthread_t ls, jn;
    STRESS_CHECK(pthread_create(&ls, NULL, lister, NULL) == 0, "thread");
    STRESS_CHECK(pthread_create(&jn, NULL, joiner, &g) == 0, "thread");
    {
        double limit = stress_stall_limit_s(), since = stress_now_s();
        uint64_t last = atomic_load(&g_progress);
        /* acquire: pairs with joiner's release. */
        while (!atomic_load_explicit(&g.done, memory_order_acquire)) {
            stress_sleep_us(20000);
            uint64_t p = atomic_load(&g_progress);
            if (p != last) {
                last = p;
                since = stress_now_s();
                continue;
            }
            if (stress_now_s() - since < limit)
                continue;
            fprintf(stderr, "stuck: pullers");
            for (int i = 0; i < PULLERS; i++)
                fprintf(stderr, " %llu", (unsigned long long)atomic_load(&g_count[i]));
            fprintf(stderr, ", pushers");
            for (int i = 0; i < PUSHERS; i++)
                fprintf(stderr, " %llu", (unsigned long long)atomic_load(&g_count[10 + i]));
            fprintf(stderr, ", publishers");
            for (int i = 0; i < PUBLISHERS; i++)
                fprintf(stderr, " %llu", (unsigned long long)atomic_load(&g_count[20 + i]));
            fprintf(stderr, ", churns %llu of %llu; of %llu messages each\n",
                    (unsigned long long)atomic_load(&g_count[30]), (unsigned long long)g_churns,
                    (unsigned long long)g_total);
            const char *names[] = {"PULL0", "PULL1", "PUSH0", "PUSH1"};
            for (int i = 0; i < 4; i++) {
                char subj[64];
                snprintf(subj, sizeof subj, "$JS.API.CONSUMER.INFO.S.%s", names[i]);
                char *r = request(&c, subj, "diag", "");
                fprintf(stderr, "%s: %s\n", names[i], r);
                free(r);
            }
            stress_fail("consumers: no progress for %.0f s", limit);
        }
    }
    pthread_join(jn, NULL);
    atomic_store(&g_done, true);
    pthread_join(ls, NULL);

    char name[16];
    for (int i = 0; i < PULLERS; i++) {
        snprintf(name, sizeof name, "PULL%d", i);
        check_all_acked(&c, name);
    }
    for (int i = 0; i < PUSHERS; i++) {
        snprintf(name, sizeof name, "PUSH%d", i);
        check_all_acked(&c, name);
    }
    conn_close(&c);
    natsd_stop(s);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    STRESS_CHECK(system(cmd) == 0, "cleanup");
    printf("stress_jscons: %d publishers x %llu msgs, %d pull + %d push consumers, %llu churns: "
           "ok\n",
           PUBLISHERS, (unsigned long long)g_msgs, PULLERS, PUSHERS,
           (unsigned long long)g_churns);
    return 0;
}
