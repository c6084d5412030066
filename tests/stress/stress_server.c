/* stress_server: the whole server, in-process, under concurrent raw-protocol clients.
 *
 * natsd is started through the embedding API (natsd_start on 127.0.0.1, a random port, three
 * workers, max_pending 256 KiB, a short ping interval so the timer thread fires often) and driven
 * over loopback by plain-socket client threads that speak the text protocol (stress_cli.h), so that
 * TSan sees every server thread (the workers, the worker blocked in epoll, the timer thread) and
 * ASan/LSan see every allocation of src/net, src/subj and src/actors. All scenarios run at once:
 *
 *  1. Fan-out: three publishers (one with an echo subscription of its own, one sending HPUB with
 *     headers now and then) publish deterministic messages on eight subjects; ten subscriber
 *     connections hold literal, `*` and `>` subscriptions and two queue groups, some without
 *     header support (they get the payload alone). Every message is regenerated from its
 *     (publisher, index) and checked byte for byte: subject, headers, payload. A plain
 *     subscription must see every matching message of each publisher in order (a gap fails at
 *     once); a queue group must see each one exactly once (a shared bitmap catches duplicates).
 *     After the publishers' final PING/PONG, each subscriber's own PING/PONG must find every
 *     message delivered: the counts are then compared with the exact expectation.
 *  2. Subscription churn: two threads, each with a subscriber connection S and a publisher P,
 *     SUB/UNSUB fresh subjects continuously while P publishes. Checked: the messages of a sub
 *     form a gap-free prefix of what P sent; after `UNSUB sid N` (sent before any message could
 *     match, or after a known number were delivered) exactly min(N, sent) arrive and never more;
 *     after `UNSUB sid` and its PONG, no PUB written by P after that PONG reaches the sid (P keeps
 *     publishing while the UNSUB is in flight). Wildcard and queue subscriptions come and go in
 *     between (sublist churn, with or without traffic). A monitor (`s2.>` plain, and a queue
 *     group of two) must see every message of both threads exactly once, in per-thread order.
 *  3. Connection churn: two threads connect, subscribe, publish, request (a queue group of two
 *     responders answers `s3.svc`; a subject with no subscriber must answer the 503 no-responders
 *     status, CONNECT {"headers":true,"no_responders":true}), subscribe to the fan-out traffic
 *     without reading it, and leave abruptly: close(), RST (SO_LINGER 0), close half-way through
 *     a PUB payload (small, and big enough for the private read buffer), or shutdown(SHUT_WR)
 *     and wait for the server to close. A CONNECT asking no_responders without headers must get
 *     -ERR and be closed. A sink subscriber checks every delivered payload is complete.
 *  4. Slow consumer: a subscriber with a tiny receive buffer stops reading while a publisher
 *     floods it (and a fast subscriber on the same subject). The publisher learns that the server
 *     closed the slow one through a no-responders probe on a subject only the slow one had. The
 *     publisher must stay connected and the fast subscriber must still get every message; what
 *     the slow one got before being cut off must be an in-order prefix.
 *  5. Shutdown: noise clients publish and subscribe throughout, and natsd_stop() is called while
 *     they are still sending, with held connections that are half-way through a PUB, not reading
 *     their output, or silent. Every socket must then see the server close it; nothing may leak.
 *
 * Flow control: max_pending is small, so the test keeps every reader it checks within a window of
 * what it has been sent (publishers wait for the subscribers' progress counters), and a check never
 * depends on a reader being fast. Readers whose input cannot be bounded (the s3 sink, churn
 * connections subscribed to traffic they do not read, the noise clients) may be closed as slow
 * consumers, and that is allowed. There are no timing assertions: waits on one connection fail
 * only after ND_STRESS_STALL_S (default 120 s) with nothing but server PINGs, a hang guard.
 *
 * Delivery after PONG: when a subscriber's PONG arrives before messages that other connections
 * had already handed over (their PONG came first), the check is retried with a few more PING/PONG
 * rounds and counted as "late" in the summary; ND_STRESS_STRICT_PONG=1 makes it a failure (that
 * is the nats-server guarantee: a publisher's flush then the subscriber's flush delivers all).
 *
 * Bugs this program found (fixed in 080cee2): a publisher's outbox used recipient connections
 * after its epoch section without a reference (TSan heap-use-after-free in nd_deliver_flush,
 * then messages delivered to whatever connection reused the memory), and data arriving with the
 * FIN in one readiness event left the connection open forever (scenario 3 corks its last PUB
 * with the FIN on purpose).
 *
 * Usage: stress_server [scale]   (or ND_STRESS_SCALE; see stress_util.h). Exits non-zero on the
 * first inconsistency. Knobs: ND_STRESS_SERVER_BREAK=1 adds a deliberately wrong expectation (one
 * more message expected by a fan-out subscriber), to show the run can fail;
 * ND_STRESS_STRICT_PONG=1 (above); ND_STRESS_SERVER_FIN_ALONE=1 sends the FIN of scenario 3
 * only after a PING/PONG, so that the rest can be run on a server with the FIN bug.
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

#include "actors/alloc.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"
#include "stress_cli.h"
#include "stress_util.h"

#define WORKERS     3
#define MAX_PENDING (256 * 1024)

static int g_port;
static bool g_strict_pong;
static _Atomic uint64_t g_late; /* checks that needed another PING/PONG after the first */

/* After a PONG that should have followed every message counted by *count: checks that
 * want arrived (at least want, unless exact), else (late delivery) gives the server a few more
 * PING/PONG rounds: a message already handed over to the subscriber arrives after one more. */
static void
expect_count_ex(cli_t *c, const uint64_t *count, uint64_t want, bool exact, const char *what)
{
    if (!exact && *count >= want)
        return;
    if (*count > want)
        stress_fail("%s: %s: %llu messages, expected %llu", c->name, what, (ull)*count, (ull)want);
    if (*count == want)
        return;
    atomic_fetch_add_explicit(&g_late, 1, memory_order_relaxed);
    if (g_strict_pong)
        stress_fail("%s: %s: %llu of %llu messages delivered before the PONG", c->name, what,
                    (ull)*count, (ull)want);
    for (int i = 0; i < 10 && *count < want; i++)
        cli_sync(c);
    if (exact ? *count != want : *count < want)
        stress_fail("%s: %s: %llu messages, expected %llu", c->name, what, (ull)*count, (ull)want);
}

static void
expect_count(cli_t *c, const uint64_t *count, uint64_t want, const char *what)
{
    expect_count_ex(c, count, want, true, what);
}

/* ==== scenario 1: fan-out with literal, wildcard and queue subscriptions ==== */

#define S1_PUBS    3
#define S1_NSUBJ   8
#define S1_CONNS   10
#define S1_WINDOW  16 /* messages a checked subscriber may lag behind one publisher */
#define S1_PREFIX  16 /* "pp.iiiiiiiiiiii." */
#define S1_HDR     "NATS/1.0\r\nX-I: %012llu\r\n\r\n"
#define S1_HDR_LEN 31

static const char *const s1_subjects[S1_NSUBJ] = {"s1.k.0", "s1.k.1", "s1.k.2", "s1.k.3",
                                                  "s1.m.0", "s1.m.1", "s1.m.2", "s1.m.3"};

typedef struct s1_sid {
    const char *pattern, *queue;
    int group; /* 0 = qa, 1 = qb, -1 = plain */
    int conn;  /* index in s1_conns; S1_CONNS = publisher 0's own connection */
    /* owner thread */
    uint64_t count[S1_PUBS];
    int64_t last[S1_PUBS];
    /* written by the owner before it counts itself in s1_synced */
    uint64_t snap[S1_PUBS];
    /* any thread: = count, for the publishers' windows and the main thread's wait */
    _Atomic uint64_t seen[S1_PUBS];
} s1_sid_t;

#define S1_SID(pat, q, g, c)                                                                       \
    {                                                                                              \
        .pattern = (pat), .queue = (q), .group = (g), .conn = (c)                                  \
    }

static s1_sid_t s1_sids[] = {
    S1_SID("s1.k.0", NULL, -1, 0),        S1_SID("s1.m.>", NULL, -1, 0), /* conn 0 */
    S1_SID("s1.*.1", NULL, -1, 1),                                       /* conn 1 */
    S1_SID("s1.k.*", NULL, -1, 2),                                       /* conn 2 */
    S1_SID("s1.>", NULL, -1, 3),                                         /* conn 3, no headers */
    S1_SID("s1.*.*", NULL, -1, 4),        S1_SID("s1.*.3", NULL, -1, 4), /* conn 4, no headers */
    S1_SID("s1.k.*", "qa", 0, 5),         S1_SID("s1.k.*", "qa", 0, 6),
    S1_SID("s1.k.*", "qa", 0, 7), /* conn 7: no headers */
    S1_SID("s1.>", "qb", 1, 8),           S1_SID("s1.>", "qb", 1, 9),
    S1_SID("s1.*.2", NULL, -1, S1_CONNS), /* publisher 0's echo subscription */
};
#define S1_NSIDS ((int)(sizeof s1_sids / sizeof s1_sids[0]))

static const bool s1_conn_headers[S1_CONNS + 1] = {true, true,  true, false, false, true,
                                                   true, false, true, true,  true};

typedef struct s1_target {
    const char *pattern;
    int sids[3], nsids;
    int group;
    bool match[S1_NSUBJ];
    uint64_t expected[S1_PUBS];
} s1_target_t;

static s1_target_t s1_targets[S1_NSIDS];
static int s1_ntargets;
static uint64_t s1_n; /* messages per publisher */
static _Atomic uint64_t *s1_gbits[2][S1_PUBS];
static _Atomic int s1_ready, s1_pubs_ready, s1_pubs_done, s1_synced, s1_stop;
static bool s1_break; /* ND_STRESS_SERVER_BREAK: expect one message too many at the end */

typedef struct s1_conn {
    int id;
    bool headers;
    cli_t cli;
    char name[24];
    pthread_t th;
} s1_conn_t;

static s1_conn_t s1_conns[S1_CONNS + 1];

typedef struct s1_gen {
    uint64_t h;
    uint32_t subj, size;
    bool hdr;
} s1_gen_t;

/* Message i of publisher p: its subject, payload size and whether it carries headers. */
static s1_gen_t
s1_gen(int p, uint64_t i)
{
    s1_gen_t g;
    g.h = mix64(((uint64_t)p << 48) ^ i ^ 0x5EED);
    g.subj = (uint32_t)(g.h % S1_NSUBJ);
    uint32_t r = (uint32_t)((g.h >> 8) % 100);
    /* Mostly small (batched into chunks), some over 2 KiB (sent as refcounted payloads). */
    g.size =
        r < 85 ? S1_PREFIX + (uint32_t)((g.h >> 16) % 300) : 2049 + (uint32_t)((g.h >> 16) % 2000);
    g.hdr = p == 1 && (g.h >> 40) % 3 == 0;
    return g;
}

static char
s1_fill(const s1_gen_t *g, size_t j)
{
    return (char)('a' + (unsigned)(((g->h >> ((j & 7) * 8)) & 0xff) + j) % 26);
}

static size_t
s1_format(char *out, int p, uint64_t i)
{
    s1_gen_t g = s1_gen(p, i);
    const char *subj = s1_subjects[g.subj];
    int n;
    if (g.hdr)
        n = sprintf(out, "HPUB %s %d %u\r\n" S1_HDR, subj, S1_HDR_LEN, S1_HDR_LEN + g.size, (ull)i);
    else
        n = sprintf(out, "PUB %s %u\r\n", subj, g.size);
    char *pl = out + n;
    sprintf(pl, "%02d.%012llu.", p, (ull)i);
    for (size_t j = S1_PREFIX; j < g.size; j++)
        pl[j] = s1_fill(&g, j);
    memcpy(pl + g.size, "\r\n", 2);
    return (size_t)n + g.size + 2;
}

static void
s1_on_msg(cli_t *c, const ev_t *ev)
{
    s1_conn_t *sc = c->arg;
    if (ev->sid == 0 || ev->sid > (uint64_t)S1_NSIDS || s1_sids[ev->sid - 1].conn != sc->id)
        stress_fail("%s: message for a sid it does not hold: '%.*s'", c->name, (int)ev->line_len,
                    ev->line);
    s1_sid_t *s = &s1_sids[ev->sid - 1];
    if (ev->data_len < S1_PREFIX || ev->data[2] != '.' || ev->data[S1_PREFIX - 1] != '.')
        stress_fail("%s: bad payload in '%.*s'", c->name, (int)ev->line_len, ev->line);
    int p = (int)parse_u64(ev->data, 2, c->name);
    uint64_t i = parse_u64(ev->data + 3, 12, c->name);
    if (p >= S1_PUBS || i >= s1_n)
        stress_fail("%s: message %d.%llu out of range", c->name, p, (ull)i);
    s1_gen_t g = s1_gen(p, i);
    const char *subj = s1_subjects[g.subj];
    if (!str_eq(ev->subj, ev->subj_len, subj) || ev->reply_len != 0)
        stress_fail("%s: message %d.%llu came as '%.*s', sent on %s", c->name, p, (ull)i,
                    (int)ev->line_len, ev->line, subj);
    if (!subj_match(s->pattern, subj, strlen(subj)))
        stress_fail("%s: %s delivered to sid %llu (%s)", c->name, subj, (ull)ev->sid, s->pattern);
    if (ev->data_len != g.size)
        stress_fail("%s: message %d.%llu has %zu bytes, sent %u", c->name, p, (ull)i, ev->data_len,
                    g.size);
    if (g.hdr && sc->headers) {
        char hdr[64];
        snprintf(hdr, sizeof hdr, S1_HDR, (ull)i);
        if (!ev->hmsg || ev->hdr_len != S1_HDR_LEN || memcmp(ev->hdr, hdr, S1_HDR_LEN) != 0)
            stress_fail("%s: message %d.%llu lost its headers: '%.*s'", c->name, p, (ull)i,
                        (int)ev->line_len, ev->line);
    } else if (ev->hmsg) {
        stress_fail("%s: message %d.%llu came as HMSG: '%.*s'", c->name, p, (ull)i,
                    (int)ev->line_len, ev->line);
    }
    for (size_t j = S1_PREFIX; j < g.size; j++)
        if (ev->data[j] != s1_fill(&g, j))
            stress_fail("%s: message %d.%llu corrupt at byte %zu", c->name, p, (ull)i, j);
    if ((int64_t)i <= s->last[p])
        stress_fail("%s: sid %llu: message %d.%llu after %d.%lld", c->name, (ull)ev->sid, p, (ull)i,
                    p, (long long)s->last[p]);
    if (s->group < 0) {
        /* A plain subscription gets every matching message: nothing may be skipped. */
        for (uint64_t j = (uint64_t)(s->last[p] + 1); j < i; j++) {
            const char *sj = s1_subjects[s1_gen(p, j).subj];
            if (subj_match(s->pattern, sj, strlen(sj)))
                stress_fail("%s: sid %llu (%s): message %d.%llu on %s lost (got %llu next)",
                            c->name, (ull)ev->sid, s->pattern, p, (ull)j, sj, (ull)i);
        }
    } else {
        uint64_t bit = 1ull << (i % 64);
        uint64_t old =
            atomic_fetch_or_explicit(&s1_gbits[s->group][p][i / 64], bit, memory_order_relaxed);
        if (old & bit)
            stress_fail("%s: queue group %s got message %d.%llu twice", c->name, s->queue, p,
                        (ull)i);
    }
    s->last[p] = (int64_t)i;
    s->count[p]++;
    atomic_store_explicit(&s->seen[p], s->count[p], memory_order_relaxed);
}

static uint64_t
s1_target_seen(const s1_target_t *t, int p)
{
    uint64_t n = 0;
    for (int k = 0; k < t->nsids; k++)
        n += atomic_load_explicit(&s1_sids[t->sids[k]].seen[p], memory_order_relaxed);
    return n;
}

/* Publisher p waits until every target is within S1_WINDOW messages of what p sent it. */
static void
s1_window(cli_t *c, int p, const uint64_t *sent)
{
    for (int t = 0; t < s1_ntargets; t++) {
        uint64_t last = UINT64_MAX;
        double since = stress_now_s();
        for (;;) {
            uint64_t got = s1_target_seen(&s1_targets[t], p);
            if (sent[t] <= got + S1_WINDOW)
                break;
            double now = stress_now_s();
            if (got != last) {
                last = got;
                since = now;
            } else if (now - since > g_stall_s) {
                stress_fail("%s: %s stuck at %llu of %llu messages", c->name, s1_targets[t].pattern,
                            (ull)got, (ull)sent[t]);
            }
            if (cli_pump(c, 1) < 0)
                stress_fail("%s: connection closed", c->name);
        }
    }
}

/* The end of a subscriber: once every publisher is done, PING/PONG and snapshot the counts,
 * then keep reading until the main thread has checked them. */
static void
s1_final(cli_t *c, int conn)
{
    while (atomic_load_explicit(&s1_pubs_done, memory_order_acquire) < S1_PUBS)
        if (cli_pump(c, 20) < 0)
            stress_fail("%s: connection closed", c->name);
    cli_sync(c);
    for (int k = 0; k < S1_NSIDS; k++)
        if (s1_sids[k].conn == conn)
            memcpy(s1_sids[k].snap, s1_sids[k].count, sizeof s1_sids[k].snap);
    /* release: publishes the snapshot to the main thread. */
    atomic_fetch_add_explicit(&s1_synced, 1, memory_order_release);
    while (!atomic_load_explicit(&s1_stop, memory_order_acquire))
        if (cli_pump(c, 20) < 0)
            stress_fail("%s: connection closed", c->name);
    cli_sync(c);
    cli_close(c);
}

static void *
s1_sub_main(void *arg)
{
    s1_conn_t *sc = arg;
    cli_t *c = &sc->cli;
    if (!cli_open(c, sc->name, g_port, 0))
        stress_fail("%s: connect: %s", sc->name, strerror(errno));
    c->on_msg = s1_on_msg;
    c->arg = sc;
    cli_handshake(c,
                  sc->headers ? "{\"verbose\":false,\"pedantic\":false,\"headers\":true}"
                              : "{\"verbose\":false,\"pedantic\":false}",
                  false);
    for (int k = 0; k < S1_NSIDS; k++) {
        s1_sid_t *s = &s1_sids[k];
        if (s->conn != sc->id)
            continue;
        if (s->queue)
            cli_sendf(c, "SUB %s %s %d\r\n", s->pattern, s->queue, k + 1);
        else
            cli_sendf(c, "SUB %s %d\r\n", s->pattern, k + 1);
    }
    cli_sync(c);
    atomic_fetch_add_explicit(&s1_ready, 1, memory_order_release);
    s1_final(c, sc->id);
    return NULL;
}

static void *
s1_pub_main(void *arg)
{
    int p = (int)(intptr_t)arg;
    s1_conn_t *own = &s1_conns[S1_CONNS];
    cli_t pc, *c = p == 0 ? &own->cli : &pc;
    char name[24];
    snprintf(name, sizeof name, "s1-pub%d", p);
    if (!cli_open(c, p == 0 ? own->name : name, g_port, 0))
        stress_fail("%s: connect: %s", name, strerror(errno));
    cli_handshake(c, "{\"verbose\":false,\"pedantic\":false,\"headers\":true}", false);
    if (p == 0) {
        c->on_msg = s1_on_msg;
        c->arg = own;
        cli_sendf(c, "SUB %s %d\r\n", s1_sids[S1_NSIDS - 1].pattern, S1_NSIDS);
    }
    cli_sync(c);
    /* Publisher 0's own subscription must be in place before anyone publishes. */
    atomic_fetch_add_explicit(&s1_pubs_ready, 1, memory_order_release);
    while (atomic_load_explicit(&s1_pubs_ready, memory_order_acquire) < S1_PUBS)
        if (cli_pump(c, 1) < 0)
            stress_fail("%s: connection closed", c->name);
    uint64_t sent[S1_NSIDS] = {0};
    size_t cap = 64 * 1024, olen = 0;
    char *out = malloc(cap);
    for (uint64_t i = 0; i < s1_n; i++) {
        s1_gen_t g = s1_gen(p, i);
        olen += s1_format(out + olen, p, i);
        for (int t = 0; t < s1_ntargets; t++)
            sent[t] += s1_targets[t].match[g.subj];
        if (olen > 16384 || (i & 15) == 15 || i == s1_n - 1) {
            cli_send(c, out, olen);
            olen = 0;
            s1_window(c, p, sent);
        }
    }
    free(out);
    cli_sync(c);
    atomic_fetch_add_explicit(&s1_pubs_done, 1, memory_order_release);
    if (p == 0)
        s1_final(c, S1_CONNS);
    else
        cli_close(c);
    return NULL;
}

static void
s1_setup(double scale)
{
    s1_n = stress_scaled(14000, scale);
    for (int k = 0; k < S1_NSIDS; k++) {
        s1_sid_t *s = &s1_sids[k];
        for (int p = 0; p < S1_PUBS; p++) {
            s->last[p] = -1;
            atomic_init(&s->seen[p], 0);
        }
        s1_target_t *t = NULL;
        for (int j = 0; s->group >= 0 && j < s1_ntargets; j++)
            if (s1_targets[j].group == s->group)
                t = &s1_targets[j];
        if (t == NULL) {
            t = &s1_targets[s1_ntargets++];
            t->pattern = s->pattern;
            t->group = s->group;
            for (int j = 0; j < S1_NSUBJ; j++)
                t->match[j] = subj_match(s->pattern, s1_subjects[j], strlen(s1_subjects[j]));
        }
        t->sids[t->nsids++] = k;
    }
    for (int g = 0; g < 2; g++)
        for (int p = 0; p < S1_PUBS; p++)
            s1_gbits[g][p] = calloc((s1_n + 63) / 64, sizeof(uint64_t));
    for (int t = 0; t < s1_ntargets; t++)
        for (int p = 0; p < S1_PUBS; p++)
            for (uint64_t i = 0; i < s1_n; i++)
                s1_targets[t].expected[p] += s1_targets[t].match[s1_gen(p, i).subj];
    const char *brk = getenv("ND_STRESS_SERVER_BREAK");
    s1_break = brk != NULL && atoi(brk) != 0;
    for (int i = 0; i <= S1_CONNS; i++) {
        s1_conns[i].id = i;
        s1_conns[i].headers = s1_conn_headers[i];
        snprintf(s1_conns[i].name, sizeof s1_conns[i].name, i < S1_CONNS ? "s1-sub%d" : "s1-pub0",
                 i);
    }
}

static void
s1_start_subs(void)
{
    for (int i = 0; i < S1_CONNS; i++)
        spawn(&s1_conns[i].th, s1_sub_main, &s1_conns[i]);
    wait_count("s1 subscribers ready", &s1_ready, S1_CONNS);
}

static pthread_t s1_pubs[S1_PUBS];

static void
s1_start_pubs(void)
{
    for (int p = 0; p < S1_PUBS; p++)
        spawn(&s1_pubs[p], s1_pub_main, (void *)(intptr_t)p);
}

/* Runs once every publisher is done. Returns: messages delivered. */
static uint64_t
s1_finish(void)
{
    wait_count("s1 final PING/PONG", &s1_synced, S1_CONNS + 1);
    for (int t = 0; t < s1_ntargets; t++) {
        s1_target_t *tg = &s1_targets[t];
        for (int p = 0; p < S1_PUBS; p++) {
            uint64_t snap = 0;
            for (int k = 0; k < tg->nsids; k++)
                snap += s1_sids[tg->sids[k]].snap[p];
            if (snap > tg->expected[p])
                stress_fail("s1: %s%s%s: %llu messages from publisher %d, expected %llu",
                            tg->pattern, tg->group >= 0 ? " queue " : "",
                            tg->group >= 0 ? s1_sids[tg->sids[0]].queue : "", (ull)snap, p,
                            (ull)tg->expected[p]);
            if (snap < tg->expected[p]) {
                atomic_fetch_add_explicit(&g_late, 1, memory_order_relaxed);
                if (g_strict_pong)
                    stress_fail("s1: %s: %llu of %llu messages from publisher %d delivered "
                                "before the final PONG",
                                tg->pattern, (ull)snap, (ull)tg->expected[p], p);
            }
            /* The rest (if any) is on its way: wait for it, with the stall guard. */
            uint64_t last = UINT64_MAX;
            double since = stress_now_s();
            for (;;) {
                uint64_t got = s1_target_seen(tg, p);
                if (got >= tg->expected[p])
                    break;
                if (got != last) {
                    last = got;
                    since = stress_now_s();
                } else if (stress_now_s() - since > g_stall_s) {
                    stress_fail("s1: %s: %llu of %llu messages from publisher %d ever delivered",
                                tg->pattern, (ull)got, (ull)tg->expected[p], p);
                }
                stress_sleep_us(1000);
            }
        }
    }
    /* release: pairs with the subscribers' acquire loads. */
    atomic_store_explicit(&s1_stop, 1, memory_order_release);
    for (int p = 0; p < S1_PUBS; p++)
        join(s1_pubs[p]);
    for (int i = 0; i < S1_CONNS; i++)
        join(s1_conns[i].th);
    uint64_t total = 0;
    for (int t = 0; t < s1_ntargets; t++) {
        s1_target_t *tg = &s1_targets[t];
        for (int p = 0; p < S1_PUBS; p++) {
            uint64_t n = 0, want = tg->expected[p] + (s1_break && t == 0 && p == 0);
            for (int k = 0; k < tg->nsids; k++)
                n += s1_sids[tg->sids[k]].count[p];
            if (n != want)
                stress_fail("s1: %s: %llu messages from publisher %d, expected %llu", tg->pattern,
                            (ull)n, p, (ull)want);
            if (tg->group >= 0) {
                uint64_t bits = 0;
                for (uint64_t w = 0; w < (s1_n + 63) / 64; w++)
                    bits += (uint64_t)__builtin_popcountll(
                        atomic_load_explicit(&s1_gbits[tg->group][p][w], memory_order_relaxed));
                if (bits != n)
                    stress_fail("s1: queue group %d: %llu distinct of %llu", tg->group, (ull)bits,
                                (ull)n);
            }
            total += n;
        }
    }
    for (int g = 0; g < 2; g++)
        for (int p = 0; p < S1_PUBS; p++)
            free(s1_gbits[g][p]);
    return total;
}

/* ==== scenario 2: subscription churn under traffic ==== */

#define S2_THREADS 2

typedef struct s2_sid {
    bool checked;   /* false: a churn-only wildcard sub, its messages are not counted */
    uint32_t k;     /* subject s2.<t>.<k> */
    int64_t last;   /* last seq received */
    uint64_t count; /* messages received */
    uint64_t maxn;  /* never more than this many (0: no limit) */
    uint64_t fence; /* no message with seq >= fence may arrive */
} s2_sid_t;

typedef struct s2 {
    int t;
    cli_t s, p; /* subscriber, publisher */
    char sname[16], pname[16];
    s2_sid_t *sids;
    uint32_t nsids, cap;
    uint32_t nextk;
    uint64_t gseq; /* messages published, all subjects */
    uint64_t rng;
    char *out;
    size_t olen, ocap;
    uint64_t checks;
    pthread_t th;
} s2_t;

static s2_t s2s[S2_THREADS];
static uint64_t s2_iters;
static _Atomic int s2_ready, s2_done;
static _Atomic uint64_t s2_published[S2_THREADS]; /* final gseq of each thread */
static pthread_t s2_mon_th;
static _Atomic uint64_t s2_mon_seen;
/* The monitor's progress per churn thread (plain, and both queue members together), for the
 * churn publishers' window: the monitor reads everything and must never become slow. */
static _Atomic uint64_t s2_mon_pseen[S2_THREADS], s2_mon_qseen[S2_THREADS];
#define S2_WINDOW 32

static void
s2_on_msg(cli_t *c, const ev_t *ev)
{
    s2_t *st = c->arg;
    if (ev->sid == 0 || ev->sid > st->nsids)
        stress_fail("%s: unknown sid in '%.*s'", c->name, (int)ev->line_len, ev->line);
    s2_sid_t *s = &st->sids[ev->sid - 1];
    uint64_t f[4];
    payload_fields(ev->data, ev->data_len, f, 4, c->name);
    if (!s->checked)
        return;
    char subj[48];
    snprintf(subj, sizeof subj, "s2.%d.%u", st->t, s->k);
    if (f[0] != (uint64_t)st->t || f[1] != s->k || !str_eq(ev->subj, ev->subj_len, subj))
        stress_fail("%s: sid %llu (%s) got '%.*s' (%.*s)", c->name, (ull)ev->sid, subj,
                    (int)ev->line_len, ev->line, (int)(ev->data_len > 40 ? 40 : ev->data_len),
                    ev->data);
    if ((int64_t)f[2] != s->last + 1)
        stress_fail("%s: sid %llu (%s): seq %llu after %lld (not a prefix of what was sent)",
                    c->name, (ull)ev->sid, subj, (ull)f[2], (long long)s->last);
    if (f[2] >= s->fence)
        stress_fail("%s: sid %llu (%s): seq %llu delivered, published after the UNSUB's PONG "
                    "(fence %llu)",
                    c->name, (ull)ev->sid, subj, (ull)f[2], (ull)s->fence);
    s->last = (int64_t)f[2];
    s->count++;
    if (s->maxn != 0 && s->count > s->maxn)
        stress_fail("%s: sid %llu (%s): %llu messages after UNSUB %llu", c->name, (ull)ev->sid,
                    subj, (ull)s->count, (ull)s->maxn);
}

static uint64_t
s2_new_sid(s2_t *st, bool checked, uint32_t k)
{
    if (st->nsids == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 256;
        st->sids = realloc(st->sids, st->cap * sizeof(*st->sids));
    }
    s2_sid_t *s = &st->sids[st->nsids++];
    *s = (s2_sid_t){.checked = checked, .k = k, .last = -1, .fence = UINT64_MAX};
    return st->nsids;
}

/* Queues a PUB of seq on s2.<t>.<k>; s2_flush sends what is queued. */
static void
s2_pub(s2_t *st, uint32_t k, uint64_t seq)
{
    if (st->ocap - st->olen < 4096) {
        st->ocap = st->ocap ? st->ocap * 2 : 65536;
        st->out = realloc(st->out, st->ocap);
    }
    uint64_t r = stress_rand(&st->rng);
    size_t fill = r % 16 == 0 ? 2100 + (size_t)(r >> 8) % 400 : (size_t)(r >> 8) % 120;
    char head[64];
    int hn = snprintf(head, sizeof head, "%d.%u.%llu.%llu.", st->t, k, (ull)seq, (ull)st->gseq);
    st->olen += (size_t)sprintf(st->out + st->olen, "PUB s2.%d.%u %zu\r\n%s", st->t, k,
                                (size_t)hn + fill, head);
    memset(st->out + st->olen, 'z', fill);
    st->olen += fill;
    memcpy(st->out + st->olen, "\r\n", 2);
    st->olen += 2;
    st->gseq++;
}

/* Sends what is queued, then waits until the monitor is within S2_WINDOW messages. */
static void
s2_flush(s2_t *st)
{
    if (st->olen > 0)
        cli_send(&st->p, st->out, st->olen);
    st->olen = 0;
    uint64_t last = UINT64_MAX;
    double since = stress_now_s();
    for (;;) {
        uint64_t p = atomic_load_explicit(&s2_mon_pseen[st->t], memory_order_relaxed);
        uint64_t q = atomic_load_explicit(&s2_mon_qseen[st->t], memory_order_relaxed);
        if (st->gseq <= p + S2_WINDOW && st->gseq <= q + S2_WINDOW)
            break;
        if (p + q != last) {
            last = p + q;
            since = stress_now_s();
        } else if (stress_now_s() - since > g_stall_s) {
            stress_fail("%s: the monitor is stuck at %llu/%llu of %llu", st->p.name, (ull)p, (ull)q,
                        (ull)st->gseq);
        }
        if (cli_pump(&st->s, 1) < 0)
            stress_fail("%s: connection closed", st->s.name);
    }
}

static void
s2_pub_many(s2_t *st, uint32_t k, uint64_t from, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        s2_pub(st, k, from + i);
        if (st->olen > 32768)
            s2_flush(st);
    }
    s2_flush(st);
}

/* A plain UNSUB while P keeps publishing on the subject. */
static void
s2_op_unsub_under_traffic(s2_t *st)
{
    uint32_t k = st->nextk++;
    uint64_t sid = s2_new_sid(st, true, k);
    cli_sendf(&st->s, "SUB s2.%d.%u %llu\r\n", st->t, k, (ull)sid);
    cli_sync(&st->s);
    uint64_t m1 = 1 + stress_rand(&st->rng) % 16;
    s2_pub_many(st, k, 0, m1);
    cli_sync(&st->p); /* all m1 handed to S before the UNSUB is sent */
    uint64_t want = st->s.pongs + 1;
    cli_sendf(&st->s, "UNSUB %llu\r\nPING\r\n", (ull)sid);
    uint64_t seq = m1;
    double since = stress_now_s();
    while (st->s.pongs < want) {
        s2_pub(st, k, seq++);
        s2_flush(st);
        uint64_t before = st->s.events;
        if (cli_pump(&st->s, seq - m1 > 200 ? 1 : 0) < 0)
            stress_fail("%s: connection closed", st->s.name);
        if (st->s.events != before)
            since = stress_now_s();
        else if (stress_now_s() - since > g_stall_s)
            stress_fail("%s: no PONG after UNSUB", st->s.name);
    }
    /* Every PUB from here on is written after the UNSUB was acknowledged. */
    st->sids[sid - 1].fence = seq;
    s2_pub_many(st, k, seq, 1 + stress_rand(&st->rng) % 8);
    cli_sync(&st->p);
    cli_sync(&st->s);
    expect_count_ex(&st->s, &st->sids[sid - 1].count, m1, false, "messages before UNSUB");
    st->checks++;
}

/* SUB and `UNSUB sid N` before anything is published on the subject. */
static void
s2_op_autounsub_fresh(s2_t *st)
{
    uint32_t k = st->nextk++;
    uint64_t sid = s2_new_sid(st, true, k);
    uint64_t n = 1 + stress_rand(&st->rng) % 10;
    uint64_t m = stress_rand(&st->rng) % (2 * n + 1);
    st->sids[sid - 1].maxn = n;
    cli_sendf(&st->s, "SUB s2.%d.%u %llu\r\nUNSUB %llu %llu\r\n", st->t, k, (ull)sid, (ull)sid,
              (ull)n);
    cli_sync(&st->s);
    s2_pub_many(st, k, 0, m);
    cli_sync(&st->p);
    cli_sync(&st->s);
    expect_count(&st->s, &st->sids[sid - 1].count, m < n ? m : n, "UNSUB N before publishing");
    st->checks++;
}

/* `UNSUB sid N` after a known number of deliveries (N may be at or below it: removed at once). */
static void
s2_op_autounsub_late(s2_t *st)
{
    uint32_t k = st->nextk++;
    uint64_t sid = s2_new_sid(st, true, k);
    s2_sid_t *s;
    cli_sendf(&st->s, "SUB s2.%d.%u %llu\r\n", st->t, k, (ull)sid);
    cli_sync(&st->s);
    uint64_t m1 = 1 + stress_rand(&st->rng) % 12;
    s2_pub_many(st, k, 0, m1);
    cli_sync(&st->p);
    cli_sync(&st->s);
    s = &st->sids[sid - 1];
    expect_count(&st->s, &s->count, m1, "before UNSUB N");
    uint64_t n = 1 + stress_rand(&st->rng) % (m1 + 8);
    s = &st->sids[sid - 1];
    s->maxn = n > m1 ? n : m1;
    cli_sendf(&st->s, "UNSUB %llu %llu\r\n", (ull)sid, (ull)n);
    cli_sync(&st->s);
    uint64_t m2 = stress_rand(&st->rng) % 16;
    s2_pub_many(st, k, m1, m2);
    cli_sync(&st->p);
    cli_sync(&st->s);
    uint64_t want = n > m1 ? (n < m1 + m2 ? n : m1 + m2) : m1;
    s = &st->sids[sid - 1];
    expect_count(&st->s, &s->count, want, "UNSUB N after deliveries");
    st->checks++;
}

/* Wildcard and queue subscriptions that come and go (sublist churn; their messages are not
 * counted). They only match this thread's subjects: a connection that is not being read must
 * not receive another thread's traffic, or it would become a slow consumer. */
static void
s2_op_churn(s2_t *st)
{
    char line[4096];
    size_t len = 0;
    uint32_t k = st->nextk++;
    int n = 4 + (int)(stress_rand(&st->rng) % 8);
    uint64_t sids[12];
    for (int i = 0; i < n; i++) {
        uint64_t r = stress_rand(&st->rng);
        sids[i] = s2_new_sid(st, false, 0);
        char subj[48];
        switch (r % 3) {
        case 0:
            snprintf(subj, sizeof subj, "s2.%d.*", st->t);
            break;
        case 1:
            snprintf(subj, sizeof subj, "s2.%d.>", st->t);
            break;
        default:
            snprintf(subj, sizeof subj, "s2.%d.%u", st->t, k);
            break;
        }
        if ((r >> 16) % 3 == 0)
            len += (size_t)sprintf(line + len, "SUB %s cq%u %llu\r\n", subj,
                                   (unsigned)((r >> 20) % 2), (ull)sids[i]);
        else
            len += (size_t)sprintf(line + len, "SUB %s %llu\r\n", subj, (ull)sids[i]);
        if ((r >> 24) % 4 == 0) /* SUB and UNSUB in one write */
            len += (size_t)sprintf(line + len, "UNSUB %llu\r\n", (ull)sids[i]);
        else if ((r >> 24) % 4 == 1)
            len += (size_t)sprintf(line + len, "UNSUB %llu 1\r\n", (ull)sids[i]);
    }
    cli_send(&st->s, line, len);
    uint64_t r = stress_rand(&st->rng);
    if (r % 2)
        cli_sync(&st->s);
    if ((r >> 8) % 2) {
        /* A little traffic for them, racing with the SUBs when there was no sync. */
        s2_pub_many(st, k, 0, 1 + (r >> 16) % 8);
        cli_sync(&st->p);
        cli_sync(&st->s);
    }
    len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(line + len, "UNSUB %llu\r\n", (ull)sids[i]);
    cli_send(&st->s, line, len);
}

static void *
s2_main(void *arg)
{
    s2_t *st = arg;
    if (!cli_open(&st->s, st->sname, g_port, 0) || !cli_open(&st->p, st->pname, g_port, 0))
        stress_fail("s2: connect: %s", strerror(errno));
    st->s.on_msg = s2_on_msg;
    st->s.arg = st;
    cli_handshake(&st->s, "{\"verbose\":false,\"pedantic\":false}", false);
    cli_handshake(&st->p, "{\"verbose\":false,\"pedantic\":false}", false);
    cli_sync(&st->s);
    cli_sync(&st->p);
    atomic_fetch_add_explicit(&s2_ready, 1, memory_order_release);
    for (uint64_t it = 0; it < s2_iters; it++) {
        switch (stress_rand(&st->rng) % 4) {
        case 0:
            s2_op_unsub_under_traffic(st);
            break;
        case 1:
            s2_op_autounsub_fresh(st);
            break;
        case 2:
            s2_op_autounsub_late(st);
            break;
        default:
            s2_op_churn(st);
            break;
        }
    }
    cli_sync(&st->p);
    cli_sync(&st->s);
    cli_close(&st->p);
    cli_close(&st->s);
    atomic_store_explicit(&s2_published[st->t], st->gseq, memory_order_relaxed);
    /* release: publishes s2_published and the thread's results. */
    atomic_fetch_add_explicit(&s2_done, 1, memory_order_release);
    return NULL;
}

/* The monitor: `s2.>` plain (every message, in order per thread) and a queue group of two
 * (every message exactly once between them). One thread owns all three connections. */
typedef struct s2_mon {
    cli_t plain, q[2];
    int64_t plast[S2_THREADS];
    uint64_t pcount[S2_THREADS];
    int64_t qlast[2][S2_THREADS];
    uint64_t qcount[S2_THREADS];
    uint8_t *qbits[S2_THREADS];
    size_t qbits_len[S2_THREADS];
} s2_mon_t;

static s2_mon_t s2_mon;

static void
s2_mon_on_msg(cli_t *c, const ev_t *ev)
{
    s2_mon_t *m = &s2_mon;
    uint64_t f[4];
    payload_fields(ev->data, ev->data_len, f, 4, c->name);
    if (f[0] >= S2_THREADS)
        stress_fail("%s: bad thread in '%.*s'", c->name, (int)ev->line_len, ev->line);
    int t = (int)f[0];
    uint64_t g = f[3];
    atomic_fetch_add_explicit(&s2_mon_seen, 1, memory_order_relaxed);
    if (c == &m->plain) {
        if ((int64_t)g != m->plast[t] + 1)
            stress_fail("%s: thread %d message %llu after %lld", c->name, t, (ull)g,
                        (long long)m->plast[t]);
        m->plast[t] = (int64_t)g;
        m->pcount[t]++;
        atomic_store_explicit(&s2_mon_pseen[t], m->pcount[t], memory_order_relaxed);
        return;
    }
    int q = c == &m->q[0] ? 0 : 1;
    if ((int64_t)g <= m->qlast[q][t])
        stress_fail("%s: thread %d message %llu after %lld", c->name, t, (ull)g,
                    (long long)m->qlast[q][t]);
    m->qlast[q][t] = (int64_t)g;
    if (g / 8 >= m->qbits_len[t]) {
        size_t n = m->qbits_len[t] ? m->qbits_len[t] : 1024;
        while (n <= g / 8)
            n *= 2;
        m->qbits[t] = realloc(m->qbits[t], n);
        memset(m->qbits[t] + m->qbits_len[t], 0, n - m->qbits_len[t]);
        m->qbits_len[t] = n;
    }
    if (m->qbits[t][g / 8] & (1u << (g % 8)))
        stress_fail("%s: queue group got thread %d message %llu twice", c->name, t, (ull)g);
    m->qbits[t][g / 8] |= (uint8_t)(1u << (g % 8));
    m->qcount[t]++;
    atomic_store_explicit(&s2_mon_qseen[t], m->qcount[t], memory_order_relaxed);
}

static void *
s2_mon_main(void *arg)
{
    (void)arg;
    s2_mon_t *m = &s2_mon;
    cli_t *cs[3] = {&m->plain, &m->q[0], &m->q[1]};
    const char *names[3] = {"s2-mon", "s2-monq0", "s2-monq1"};
    for (int i = 0; i < 3; i++) {
        if (!cli_open(cs[i], names[i], g_port, 0))
            stress_fail("%s: connect: %s", names[i], strerror(errno));
        cs[i]->on_msg = s2_mon_on_msg;
        cli_handshake(cs[i], "{\"verbose\":false,\"pedantic\":false}", false);
        if (i == 0)
            CLI_SEND_LIT(cs[i], "SUB s2.> 1\r\n");
        else
            CLI_SEND_LIT(cs[i], "SUB s2.> s2q 1\r\n");
    }
    for (int t = 0; t < S2_THREADS; t++)
        m->plast[t] = m->qlast[0][t] = m->qlast[1][t] = -1;
    cli_sync_all(cs, 3);
    atomic_fetch_add_explicit(&s2_ready, 1, memory_order_release);
    while (atomic_load_explicit(&s2_done, memory_order_acquire) < S2_THREADS)
        cli_pump_many(cs, 3, 20);
    cli_sync_all(cs, 3);
    uint64_t total = 0, qtotal = 0, want = 0;
    for (int t = 0; t < S2_THREADS; t++) {
        uint64_t pub = atomic_load_explicit(&s2_published[t], memory_order_relaxed);
        want += pub;
        expect_count(&m->plain, &m->pcount[t], pub, "monitor s2.>");
        total += m->pcount[t];
    }
    for (int i = 0; i < 11; i++) {
        qtotal = m->qcount[0] + m->qcount[1];
        if (qtotal >= want)
            break;
        if (i == 0) {
            atomic_fetch_add_explicit(&g_late, 1, memory_order_relaxed);
            if (g_strict_pong)
                stress_fail("s2-monq: %llu of %llu delivered before the PONG", (ull)qtotal,
                            (ull)want);
        }
        cli_sync_all(&cs[1], 2);
    }
    if (qtotal != want || total != want)
        stress_fail("s2 monitor: %llu plain and %llu queue messages, %llu published", (ull)total,
                    (ull)qtotal, (ull)want);
    for (int i = 0; i < 3; i++)
        cli_close(cs[i]);
    for (int t = 0; t < S2_THREADS; t++)
        free(m->qbits[t]);
    return NULL;
}

static void
s2_start(double scale)
{
    s2_iters = stress_scaled(1800, scale);
    spawn(&s2_mon_th, s2_mon_main, NULL);
    wait_count("s2 monitor ready", &s2_ready, 1);
    for (int t = 0; t < S2_THREADS; t++) {
        s2_t *st = &s2s[t];
        st->t = t;
        st->rng = mix64(0x2222 + (uint64_t)t);
        snprintf(st->sname, sizeof st->sname, "s2-sub%d", t);
        snprintf(st->pname, sizeof st->pname, "s2-pub%d", t);
        spawn(&st->th, s2_main, st);
    }
}

static uint64_t
s2_finish(void)
{
    uint64_t checks = 0;
    for (int t = 0; t < S2_THREADS; t++) {
        join(s2s[t].th);
        checks += s2s[t].checks;
        free(s2s[t].sids);
        free(s2s[t].out);
    }
    join(s2_mon_th);
    return checks;
}

/* ==== scenario 3: connection churn, request/reply, no responders ==== */

#define S3_THREADS 2

static uint64_t s3_iters;
static bool s3_fin_alone; /* ND_STRESS_SERVER_FIN_ALONE: never send data and FIN together */
static _Atomic int s3_ready, s3_stop;
static _Atomic uint64_t s3_requests, s3_noresp, s3_sink_msgs, s3_sink_reconnects;
static pthread_t s3_resp_th[2], s3_sink_th, s3_th[S3_THREADS];

typedef struct s3_conn {
    uint64_t want_sid; /* the inbox sid awaiting an answer */
    bool want_503;
    const char *want_data;
    size_t want_len;
    bool answered;
} s3_conn_t;

static void
s3_resp_on_msg(cli_t *c, const ev_t *ev)
{
    if (ev->reply_len == 0)
        stress_fail("%s: request without reply subject", c->name);
    char head[160];
    int n = snprintf(head, sizeof head, "PUB %.*s %zu\r\nreply:", (int)ev->reply_len, ev->reply,
                     ev->data_len + 6);
    if (!cli_send_try(c, head, (size_t)n) || !cli_send_try(c, ev->data, ev->data_len) ||
        !cli_send_try(c, "\r\n", 2))
        stress_fail("%s: send: %s", c->name, strerror(errno));
}

static void *
s3_resp_main(void *arg)
{
    cli_t c;
    const char *name = arg;
    if (!cli_open(&c, name, g_port, 0))
        stress_fail("%s: connect: %s", name, strerror(errno));
    c.on_msg = s3_resp_on_msg;
    cli_handshake(&c, "{\"verbose\":false,\"pedantic\":false}", false);
    CLI_SEND_LIT(&c, "SUB s3.svc svc 1\r\n");
    cli_sync(&c);
    atomic_fetch_add_explicit(&s3_ready, 1, memory_order_release);
    while (!atomic_load_explicit(&s3_stop, memory_order_acquire))
        if (cli_pump(&c, 20) < 0)
            stress_fail("%s: connection closed", name);
    cli_sync(&c);
    cli_close(&c);
    return NULL;
}

/* s3.sink.<t> payloads are "<len>:" followed by 'x' up to len bytes; a churn connection may
 * vanish half-way through one, which must then never be delivered. */
static void
s3_sink_check(cli_t *c, const ev_t *ev)
{
    const char *colon = memchr(ev->data, ':', ev->data_len < 12 ? ev->data_len : 12);
    if (colon == NULL)
        stress_fail("%s: bad sink payload in '%.*s'", c->name, (int)ev->line_len, ev->line);
    uint64_t n = parse_u64(ev->data, (size_t)(colon - ev->data), c->name);
    if (n != ev->data_len)
        stress_fail("%s: sink payload says %llu bytes, has %zu", c->name, (ull)n, ev->data_len);
    for (const char *p = colon + 1; p < ev->data + ev->data_len; p++)
        if (*p != 'x')
            stress_fail("%s: corrupt sink payload", c->name);
}

static void
s3_sink_on_msg(cli_t *c, const ev_t *ev)
{
    atomic_fetch_add_explicit(&s3_sink_msgs, 1, memory_order_relaxed);
    if (ev->subj_len > 8 && memcmp(ev->subj, "s3.sink.", 8) == 0)
        s3_sink_check(c, ev);
}

static void
s3_sink_open(cli_t *c)
{
    if (!cli_open(c, "s3-sink", g_port, 0))
        stress_fail("s3-sink: connect: %s", strerror(errno));
    c->on_msg = s3_sink_on_msg;
    cli_handshake(c, "{\"verbose\":false,\"pedantic\":false}", false);
    CLI_SEND_LIT(c, "SUB s3.> 1\r\n");
    cli_sync(c);
}

/* The sink's input is not flow-controlled (what the churn connections publish before they
 * vanish is not known), so when it falls behind the server may close it as a slow consumer:
 * it then reconnects. */
static void *
s3_sink_main(void *arg)
{
    (void)arg;
    cli_t c;
    s3_sink_open(&c);
    atomic_fetch_add_explicit(&s3_ready, 1, memory_order_release);
    while (!atomic_load_explicit(&s3_stop, memory_order_acquire)) {
        if (cli_pump(&c, 20) < 0) {
            cli_close(&c);
            atomic_fetch_add_explicit(&s3_sink_reconnects, 1, memory_order_relaxed);
            s3_sink_open(&c);
        }
    }
    cli_sync(&c);
    cli_close(&c);
    return NULL;
}

static void
s3_on_msg(cli_t *c, const ev_t *ev)
{
    s3_conn_t *st = c->arg;
    if (ev->sid == 99)
        return; /* fan-out traffic it subscribed to and may not read */
    if (ev->sid == 98) {
        s3_sink_check(c, ev);
        return;
    }
    if (ev->sid != st->want_sid || st->answered)
        stress_fail("%s: unexpected '%.*s'", c->name, (int)ev->line_len, ev->line);
    if (st->want_503) {
        if (!ev->hmsg || ev->data_len != 0 || ev->hdr_len < 12 ||
            memcmp(ev->hdr, "NATS/1.0 503", 12) != 0)
            stress_fail("%s: expected a 503 no-responders status, got '%.*s'", c->name,
                        (int)ev->line_len, ev->line);
    } else {
        if (ev->hmsg || ev->data_len != st->want_len + 6 || memcmp(ev->data, "reply:", 6) != 0 ||
            memcmp(ev->data + 6, st->want_data, st->want_len) != 0)
            stress_fail("%s: wrong reply '%.*s'", c->name, (int)ev->line_len, ev->line);
    }
    st->answered = true;
}

/* Waits for the answer to the request in flight. Returns: false when the connection closed
 * and may_close. */
static bool
s3_wait_answer(cli_t *c, s3_conn_t *st, bool may_close)
{
    double since = stress_now_s();
    while (!st->answered)
        if (!cli_step(c, &since, "waiting for a reply", may_close))
            return false;
    return true;
}

/* Returns: false when the send failed and may_fail (the server may have closed us). */
static bool
s3_send(cli_t *c, const void *p, size_t n, bool may_fail)
{
    if (cli_send_try(c, p, n))
        return true;
    if (!may_fail)
        stress_fail("%s: send: %s", c->name, strerror(errno));
    return false;
}

static void
s3_one(int t, uint64_t it, uint64_t *rng, char *big)
{
    char name[64], inbox[64], line[256];
    /* The name records the actions taken, for the failure message. */
    int nlen = snprintf(name, sizeof name, "s3-churn%d #%llu [", t, (ull)it);
    cli_t c;
    s3_conn_t st = {0};
    if (!cli_open(&c, name, g_port, 0))
        stress_fail("%s: connect: %s", name, strerror(errno));
    c.on_msg = s3_on_msg;
    c.arg = &st;
    uint64_t r = stress_rand(rng) % 100;
    if (r < 8) { /* gone before reading INFO */
        if (r < 4)
            cli_reset(&c);
        else
            cli_close(&c);
        return;
    }
    if (r < 16) {
        /* no_responders without headers: -ERR, then the server closes. */
        c.allow_err = true;
        cli_handshake(&c, "{\"verbose\":false,\"headers\":false,\"no_responders\":true}", false);
        double since = stress_now_s();
        while (cli_step(&c, &since, "waiting to be closed", true))
            ;
        if (c.errs != 1 || strcasestr(c.err, "no responders requires headers") == NULL)
            stress_fail("%s: no_responders without headers: got '%s'", name, c.err);
        cli_close(&c);
        return;
    }
    bool verbose = r % 4 == 0;
    snprintf(line, sizeof line,
             "{\"verbose\":%s,\"pedantic\":false,\"headers\":true,\"no_responders\":true,"
             "\"echo\":%s}",
             verbose ? "true" : "false", r % 3 ? "true" : "false");
    cli_handshake(&c, line, false);
    bool lenient = false; /* once subscribed to unread traffic it may be closed as slow */
    int nact = 1 + (int)(stress_rand(rng) % 4);
    bool open = true;
    for (int a = 0; a < nact && open; a++) {
        uint64_t x = stress_rand(rng);
        snprintf(inbox, sizeof inbox, "_INBOX.s3.%d.%llu.%d", t, (ull)it, a);
        nlen += snprintf(name + nlen, sizeof name - (size_t)nlen, "%d", (int)(x % 5));
        switch (x % 5) {
        case 0:
            st = (s3_conn_t){.want_sid = (uint64_t)(10 + a), .want_503 = true};
            snprintf(line, sizeof line, "SUB %s %d\r\nPUB s3x.none.%d %s 5\r\nhello\r\n", inbox,
                     10 + a, t, inbox);
            open = s3_send(&c, line, strlen(line), lenient) && s3_wait_answer(&c, &st, lenient);
            if (open)
                atomic_fetch_add_explicit(&s3_noresp, 1, memory_order_relaxed);
            break;
        case 1: {
            char req[64];
            int rn = snprintf(req, sizeof req, "req:%d:%llu:%d:%llu", t, (ull)it, a, (ull)(x >> 8));
            st = (s3_conn_t){
                .want_sid = (uint64_t)(10 + a), .want_data = req, .want_len = (size_t)rn};
            snprintf(line, sizeof line, "SUB %s %d\r\nPUB s3.svc %s %d\r\n%s\r\n", inbox, 10 + a,
                     inbox, rn, req);
            open = s3_send(&c, line, strlen(line), lenient) && s3_wait_answer(&c, &st, lenient);
            if (open)
                atomic_fetch_add_explicit(&s3_requests, 1, memory_order_relaxed);
            break;
        }
        case 2: {
            int k = 1 + (int)((x >> 8) % 8);
            for (int i = 0; i < k && open; i++) {
                size_t n = (size_t)(stress_rand(rng) % 3000) + 8;
                int hn = snprintf(line, sizeof line, "PUB s3.sink.%d %zu\r\n", t, n);
                int pn = snprintf(big, 16, "%zu:", n);
                memset(big + pn, 'x', n - (size_t)pn);
                memcpy(big + n, "\r\n", 2);
                open = s3_send(&c, line, (size_t)hn, lenient) && s3_send(&c, big, n + 2, lenient);
            }
            break;
        }
        case 3:
            open = s3_send(&c, "SUB s1.k.0 99\r\n", 15, lenient);
            lenient = true;
            break;
        default:
            open = s3_send(&c, "SUB s3.sink.> 98\r\n", 18, lenient);
            lenient = true; /* not flow-controlled either */
            break;
        }
    }
    if (!open) {
        cli_close(&c);
        return;
    }
    uint64_t end = stress_rand(rng) % 5;
    snprintf(name + nlen, sizeof name - (size_t)nlen, "] end %d v%d", (int)end, verbose);
    switch (end) {
    case 0:
        cli_close(&c);
        break;
    case 1: { /* half-way through a small payload */
        size_t cut = (size_t)(stress_rand(rng) % 3000);
        int hn = snprintf(line, sizeof line, "PUB s3.sink.%d 3000\r\n", t);
        memset(big, 'x', cut);
        (void)(cli_send_try(&c, line, (size_t)hn) && cli_send_try(&c, big, cut));
        cli_close(&c);
        break;
    }
    case 2: { /* half-way through a payload big enough for the private read buffer */
        int hn = snprintf(line, sizeof line, "PUB s3.sink.%d 60000\r\n", t);
        memset(big, 'x', 40000);
        (void)(cli_send_try(&c, line, (size_t)hn) && cli_send_try(&c, big, 40000));
        if (stress_rand(rng) % 2)
            cli_reset(&c);
        else
            cli_close(&c);
        break;
    }
    case 3:
        cli_reset(&c);
        break;
    default: { /* FIN: the server must close its side */
        /* Corked, the last PUB and the FIN leave in one segment, so the server sees the data and
         * the end of the stream in one readiness event: it must still read on to the EOF. */
        int one = 1;
        int hn = snprintf(line, sizeof line, "PUB s3.sink.%d 7\r\n7:xxxxx\r\n", t);
        if (s3_fin_alone) {
            /* The workaround knob: everything is consumed before the FIN is sent. */
            if (!s3_send(&c, line, (size_t)hn, lenient) || !cli_sync_try(&c, lenient)) {
                cli_close(&c);
                break;
            }
        } else {
            setsockopt(c.fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one);
            if (!s3_send(&c, line, (size_t)hn, lenient)) {
                cli_close(&c);
                break;
            }
        }
        shutdown(c.fd, SHUT_WR);
        double since = stress_now_s();
        while (cli_step(&c, &since, "waiting for the server to close", true))
            ;
        cli_close(&c);
        break;
    }
    }
}

static void *
s3_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    uint64_t rng = mix64(0x3333 + (uint64_t)t);
    char *big = malloc(64 * 1024);
    for (uint64_t it = 0; it < s3_iters; it++)
        s3_one(t, it, &rng, big);
    free(big);
    return NULL;
}

static void
s3_start(double scale)
{
    s3_iters = stress_scaled(900, scale);
    const char *fa = getenv("ND_STRESS_SERVER_FIN_ALONE");
    s3_fin_alone = fa != NULL && atoi(fa) != 0;
    static const char *const names[2] = {"s3-resp0", "s3-resp1"};
    for (int i = 0; i < 2; i++)
        spawn(&s3_resp_th[i], s3_resp_main, (void *)names[i]);
    spawn(&s3_sink_th, s3_sink_main, NULL);
    wait_count("s3 responders ready", &s3_ready, 3);
    for (int t = 0; t < S3_THREADS; t++)
        spawn(&s3_th[t], s3_main, (void *)(intptr_t)t);
}

static void
s3_finish(void)
{
    for (int t = 0; t < S3_THREADS; t++)
        join(s3_th[t]);
    /* release: pairs with the responders' acquire loads. */
    atomic_store_explicit(&s3_stop, 1, memory_order_release);
    for (int i = 0; i < 2; i++)
        join(s3_resp_th[i]);
    join(s3_sink_th);
}

/* ==== scenario 4: a slow consumer ==== */

#define S4_SIZE      1024
#define S4_BURST     32
#define S4_WINDOW    64
#define S4_MAX_FLOOD (256 * 1024) /* messages: 256 MiB, far past any socket buffer */

static _Atomic int s4_fast_ready;
static _Atomic uint64_t s4_fast_seen;
static _Atomic uint64_t s4_total; /* 0 until the publisher is done */
static pthread_t s4_th, s4_fast_th;
static uint64_t s4_flooded, s4_slow_got;

typedef struct s4_state {
    bool closed_seen; /* the probe got the 503 */
    int64_t last;     /* for the fast and slow readers */
    uint64_t count;
} s4_state_t;

static void
s4_check_flood(cli_t *c, const ev_t *ev, s4_state_t *st)
{
    if (!str_eq(ev->subj, ev->subj_len, "s4.slow") || ev->data_len != S4_SIZE)
        stress_fail("%s: unexpected '%.*s'", c->name, (int)ev->line_len, ev->line);
    uint64_t f[1];
    payload_fields(ev->data, ev->data_len, f, 1, c->name);
    if ((int64_t)f[0] != st->last + 1)
        stress_fail("%s: flood message %llu after %lld", c->name, (ull)f[0], (long long)st->last);
    st->last = (int64_t)f[0];
    st->count++;
}

static void
s4_fast_on_msg(cli_t *c, const ev_t *ev)
{
    s4_state_t *st = c->arg;
    s4_check_flood(c, ev, st);
    atomic_store_explicit(&s4_fast_seen, st->count, memory_order_relaxed);
}

static void
s4_slow_on_msg(cli_t *c, const ev_t *ev)
{
    s4_state_t *st = c->arg;
    if (ev->sid == 2)
        return; /* a probe */
    s4_check_flood(c, ev, st);
}

static void
s4_pub_on_msg(cli_t *c, const ev_t *ev)
{
    s4_state_t *st = c->arg;
    if (ev->sid != 1 || !ev->hmsg || ev->hdr_len < 12 || memcmp(ev->hdr, "NATS/1.0 503", 12) != 0)
        stress_fail("%s: unexpected '%.*s'", c->name, (int)ev->line_len, ev->line);
    st->closed_seen = true;
}

static void *
s4_fast_main(void *arg)
{
    (void)arg;
    cli_t c;
    s4_state_t st = {.last = -1};
    if (!cli_open(&c, "s4-fast", g_port, 0))
        stress_fail("s4-fast: connect: %s", strerror(errno));
    c.on_msg = s4_fast_on_msg;
    c.arg = &st;
    cli_handshake(&c, "{\"verbose\":false,\"pedantic\":false}", false);
    CLI_SEND_LIT(&c, "SUB s4.* 1\r\n");
    cli_sync(&c);
    atomic_store_explicit(&s4_fast_ready, 1, memory_order_release);
    for (;;) {
        uint64_t total = atomic_load_explicit(&s4_total, memory_order_acquire);
        if (total != 0 && st.count >= total)
            break;
        if (cli_pump(&c, 20) < 0)
            stress_fail("s4-fast: connection closed");
    }
    cli_sync(&c);
    if (st.count != atomic_load_explicit(&s4_total, memory_order_relaxed))
        stress_fail("s4-fast: %llu flood messages, %llu published", (ull)st.count,
                    (ull)atomic_load_explicit(&s4_total, memory_order_relaxed));
    cli_close(&c);
    return NULL;
}

static void *
s4_main(void *arg)
{
    (void)arg;
    cli_t pub, slow;
    s4_state_t pst = {.last = -1}, sst = {.last = -1};
    if (!cli_open(&pub, "s4-pub", g_port, 0) || !cli_open(&slow, "s4-slow", g_port, 4096))
        stress_fail("s4: connect: %s", strerror(errno));
    pub.on_msg = s4_pub_on_msg;
    pub.arg = &pst;
    slow.on_msg = s4_slow_on_msg;
    slow.arg = &sst;
    slow.allow_err = true;
    cli_handshake(&pub,
                  "{\"verbose\":false,\"pedantic\":false,\"headers\":true,"
                  "\"no_responders\":true}",
                  false);
    cli_handshake(&slow, "{\"verbose\":false,\"pedantic\":false}", false);
    CLI_SEND_LIT(&pub, "SUB s4reply 1\r\n");
    CLI_SEND_LIT(&slow, "SUB s4.slow 1\r\nSUB s4probe 2\r\n");
    cli_sync(&pub);
    cli_sync(&slow); /* from here on the slow one reads nothing */
    while (!atomic_load_explicit(&s4_fast_ready, memory_order_acquire))
        stress_sleep_us(1000);
    char *out = malloc(S4_BURST * (S4_SIZE + 32));
    uint64_t seq = 0;
    while (!pst.closed_seen) {
        size_t olen = 0;
        for (int i = 0; i < S4_BURST; i++, seq++) {
            olen += (size_t)sprintf(out + olen, "PUB s4.slow %d\r\n", S4_SIZE);
            int n = sprintf(out + olen, "%llu.", (ull)seq);
            memset(out + olen + n, 'f', S4_SIZE - (size_t)n);
            olen += S4_SIZE;
            memcpy(out + olen, "\r\n", 2);
            olen += 2;
        }
        cli_send(&pub, out, olen);
        /* Keep the fast subscriber within the window: it must never become slow itself. */
        uint64_t last = UINT64_MAX;
        double since = stress_now_s();
        for (;;) {
            uint64_t got = atomic_load_explicit(&s4_fast_seen, memory_order_relaxed);
            if (seq <= got + S4_WINDOW)
                break;
            if (got != last) {
                last = got;
                since = stress_now_s();
            } else if (stress_now_s() - since > g_stall_s) {
                stress_fail("s4: fast subscriber stuck at %llu of %llu", (ull)got, (ull)seq);
            }
            if (cli_pump(&pub, 1) < 0)
                stress_fail("s4-pub: connection closed");
        }
        /* The probe: only the slow subscriber has s4probe; once it is gone, a 503 comes. */
        CLI_SEND_LIT(&pub, "PUB s4probe s4reply 0\r\n\r\n");
        cli_sync(&pub);
        /* A volume bound, not a clock: the socket buffers and max_pending hold a few MiB. */
        if (seq > S4_MAX_FLOOD)
            stress_fail("s4: the slow consumer was never closed (%llu messages)", (ull)seq);
    }
    free(out);
    /* The publisher is still connected and the fast subscriber still served. */
    for (int i = 0; i < 4; i++) {
        char line[64];
        for (int j = 0; j < 8; j++, seq++) {
            int n = snprintf(line, sizeof line, "%llu.", (ull)seq);
            char payload[S4_SIZE];
            memcpy(payload, line, (size_t)n);
            memset(payload + n, 'f', S4_SIZE - (size_t)n);
            cli_sendf(&pub, "PUB s4.slow %d\r\n", S4_SIZE);
            cli_send(&pub, payload, S4_SIZE);
            cli_send(&pub, "\r\n", 2);
        }
        cli_sync(&pub);
    }
    s4_flooded = seq;
    /* release: the fast reader may now check its total. */
    atomic_store_explicit(&s4_total, seq, memory_order_release);
    /* The slow one: what it got before being cut off must be an in-order prefix, then EOF. */
    double since = stress_now_s();
    while (cli_step(&slow, &since, "draining the slow consumer", true))
        ;
    /* Possibly none: its actor may not have run before its mailbox passed max_pending. */
    if (sst.count >= seq)
        stress_fail("s4-slow: got %llu of %llu flood messages; expected a strict prefix",
                    (ull)sst.count, (ull)seq);
    s4_slow_got = sst.count;
    cli_close(&slow);
    cli_sync(&pub);
    cli_close(&pub);
    return NULL;
}

static void
s4_start(void)
{
    spawn(&s4_fast_th, s4_fast_main, NULL);
    spawn(&s4_th, s4_main, NULL);
}

static void
s4_finish(void)
{
    join(s4_th);
    join(s4_fast_th);
}

/* ==== scenario 5: natsd_stop() under load ==== */

#define S5_THREADS 3

static _Atomic int s5_stopping, s5_active;
static _Atomic uint64_t s5_sent, s5_reconnects;
static pthread_t s5_th[S5_THREADS];

static void
s5_on_msg(cli_t *c, const ev_t *ev)
{
    (void)c;
    (void)ev;
}

static void *
s5_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[16], line[128];
    snprintf(name, sizeof name, "s5-noise%d", t);
    bool counted = false;
    while (!atomic_load_explicit(&s5_stopping, memory_order_acquire)) {
        cli_t c;
        bool ok = cli_open(&c, name, g_port, 0);
        c.on_msg = s5_on_msg;
        c.allow_err = true;
        if (ok)
            ok = cli_handshake(&c, "{\"verbose\":false,\"pedantic\":false}", true) &&
                 CLI_TRY_LIT(&c, "SUB s5.> 1\r\n");
        if (ok && !counted) {
            counted = true;
            atomic_fetch_add_explicit(&s5_active, 1, memory_order_release);
        }
        /* Noise: it may be closed as a slow consumer when starved; it then reconnects. */
        while (ok) {
            for (int i = 0; i < 4 && ok; i++) {
                int n = snprintf(line, sizeof line, "PUB s5.%d 16\r\n0123456789abcdef\r\n", t);
                ok = cli_send_try(&c, line, (size_t)n);
                atomic_fetch_add_explicit(&s5_sent, ok, memory_order_relaxed);
            }
            if (ok)
                ok = cli_pump(&c, 0) >= 0;
            stress_sleep_us(2000); /* noise, not load: leave the CPU to the checked scenarios */
        }
        cli_close(&c);
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

/* Connections held open across natsd_stop(), each in an awkward state. */
typedef struct s5_held {
    cli_t c;
    const char *name;
} s5_held_t;

static s5_held_t s5_held[4] = {{.name = "held-partial"},
                               {.name = "held-unread"},
                               {.name = "held-silent"},
                               {.name = "held-bigpartial"}};

static void
s5_hold(void)
{
    for (int i = 0; i < 4; i++) {
        cli_t *c = &s5_held[i].c;
        if (!cli_open(c, s5_held[i].name, g_port, i == 1 ? 4096 : 0))
            stress_fail("%s: connect: %s", s5_held[i].name, strerror(errno));
        c->on_msg = s5_on_msg;
        c->allow_err = true;
        if (i == 2)
            continue; /* never sends anything */
        cli_handshake(c, "{\"verbose\":false,\"pedantic\":false}", false);
        if (i == 1)
            CLI_SEND_LIT(c, "SUB s5.> 1\r\n");
        cli_sync(c);
        if (i == 0)
            CLI_SEND_LIT(c, "PUB s5.held 100\r\n0123456789");
        if (i == 3) {
            char *big = calloc(1, 50000);
            memset(big, 'y', 50000);
            CLI_SEND_LIT(c, "PUB s5.held 100000\r\n");
            cli_send(c, big, 50000);
            free(big);
        }
    }
}

/* After natsd_stop(): every held socket must be closed by the server. */
static void
s5_finish(void)
{
    for (int t = 0; t < S5_THREADS; t++)
        join(s5_th[t]);
    for (int i = 0; i < 4; i++) {
        cli_t *c = &s5_held[i].c;
        double since = stress_now_s();
        while (cli_step(c, &since, "waiting for natsd_stop to close it", true))
            ;
        cli_close(c);
    }
}

/* ==== main ==== */

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    double scale = stress_scale(argc, argv);
    g_stall_s = stress_stall_limit_s();
    const char *strict = getenv("ND_STRESS_STRICT_PONG");
    g_strict_pong = strict != NULL && atoi(strict) != 0;
    double t0 = stress_now_s();

    nd_opts_t o;
    nd_opts_defaults(&o);
    nd_free(o.host);
    o.host = nd_xstrdup("127.0.0.1");
    o.port = -1;
    o.workers = WORKERS;
    o.max_pending = MAX_PENDING;
    o.ping_interval_ms = 300;             /* the timer thread fires often; clients answer */
    o.ping_max = 100000;                  /* but the unread ones are never stale */
    o.write_deadline_ms = 10 * 60 * 1000; /* slow consumers are caught by max_pending */
    o.logtime = false;
    natsd_t *srv = natsd_start(&o);
    nd_opts_free(&o);
    if (srv == NULL)
        stress_fail("natsd_start failed");
    g_port = natsd_port(srv);
    printf("stress_server: port %d, %u workers, scale %.2f\n", g_port, natsd_workers(srv), scale);

    s1_setup(scale);
    s5_start();
    s1_start_subs();
    s3_start(scale);
    s2_start(scale);
    s4_start();
    s1_start_pubs();

    wait_count("s1 publishers", &s1_pubs_done, S1_PUBS);
    uint64_t s1_msgs = s1_finish();
    printf("  [%5.1f s] s1 fan-out: %llu messages from %d publishers, %llu deliveries checked\n",
           stress_now_s() - t0, (ull)s1_n, S1_PUBS, (ull)s1_msgs);
    wait_count("s2 churn threads", &s2_done, S2_THREADS);
    uint64_t s2_checks = s2_finish();
    printf(
        "  [%5.1f s] s2 subscription churn: %llu checked subscriptions, %llu monitor deliveries\n",
        stress_now_s() - t0, (ull)s2_checks, (ull)atomic_load(&s2_mon_seen));
    s3_finish();
    printf(
        "  [%5.1f s] s3 connection churn: %llu connections, %llu replies, %llu no-responders, %llu "
        "sink messages (%llu reconnects)\n",
        stress_now_s() - t0, (ull)(s3_iters * S3_THREADS), (ull)atomic_load(&s3_requests),
        (ull)atomic_load(&s3_noresp), (ull)atomic_load(&s3_sink_msgs),
        (ull)atomic_load(&s3_sink_reconnects));
    s4_finish();
    printf("  [%5.1f s] s4 slow consumer: closed after %llu of %llu flood messages reached it\n",
           stress_now_s() - t0, (ull)s4_slow_got, (ull)s4_flooded);

    /* Scenario 5: stop while the noise clients are sending and the held ones are stuck. */
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
    natsd_stop(srv);
    s5_finish();
    printf("  [%5.1f s] s5 stop under load: %llu noise messages sent, %llu reconnects\n",
           stress_now_s() - t0, (ull)atomic_load(&s5_sent), (ull)atomic_load(&s5_reconnects));
    printf("stress_server: OK in %.1f s (%llu late deliveries after a PONG)\n", stress_now_s() - t0,
           (ull)atomic_load(&g_late));
    return 0;
}
