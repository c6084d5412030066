/* Integration tests of JetStream consumers with hostile input: acks for consumers that do not
 * exist (or no longer do), forged sequences and malformed $JS.ACK subjects; pull requests with
 * negative, absurd or mistyped fields and huge bodies; deliver subjects with wildcards or inside
 * the stream; 100,000 pipelined pull requests against max_waiting; a stream deleted under waiting
 * pulls and under concurrent consumer creates; a push consumer whose client never answers flow
 * control; creates with a 1 MiB body, deep nesting and unknown fields (strict mode).
 *
 * Each case asserts nats-server's answer and then that the server is still healthy (a normal
 * request works afterwards; memory is checked where it can be: the server's VmRSS).
 *
 * `integ.jsconsbad.reference` runs this binary against nats-server 2.9.10. natsd follows 2.11
 * where the two differ (server/consumer.go at v2.11.9); those places ask nd_integ_is_reference():
 * - A forged ack (a sequence never delivered, or one that is not a number) with a reply: 2.9.10
 *   answers every kind; 2.11 does not answer +ACK/+TERM (processAckMsg returns false), but does
 *   answer -NAK and +WPI (processAck only skips the reply for stream sequence 0).
 * - strict mode (unknown fields) does not exist in 2.9.10.
 * Cases where natsd is known to differ from 2.11 use soft checks (cr_expect_fail with the
 * caller's line), so one run lists every difference.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <dirent.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jscons_util.h"
#include "jsproto.h"

TestSuite(integ_jsconsbad, .fini = nd_integ_cleanup, .timeout = 180);

#define T_SDEL   "io.nats.jetstream.api.v1.stream_delete_response"

typedef struct env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;
} env_t;

static void
up_with(env_t *e, const char *js_extra, const char *more)
{
    memset(e, 0, sizeof *e);
    e->srv = js_server_start(&e->conf, js_extra, more);
    e->c = js_conn_open(e->srv, API);
    ND_SEND(e->c, "SUB _P.> 2\r\nPING\r\n");
    ND_EXPECT(e->c, "PONG\r\n");
}

static void
up(env_t *e)
{
    up_with(e, NULL, NULL);
}

static void
down(env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
}

/* A failure that lets the test go on (a known difference from 2.11 is recorded, the next case
 * still runs). */
static void soft(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
soft(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    cr_expect_fail("%s:%d: %s", file, line, msg ? msg : fmt);
    free(msg);
}

/* ---- requests (as in test_jscons.c) -------------------------------------------------------- */

/* Creates consumer s/name from its config; fails on an error reply. */
static void
cons_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *name,
        const char *cfg)
{
    char subj[256], *body = NULL;
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.%s.%s", s, name);
    cr_assert(asprintf(&body, "{\"stream_name\":\"%s\",\"config\":%s}", s, cfg) > 0);
    json_t *j = api_at(file, line, c, subj, body);
    free(body);
    if (json_object_get(j, "error") != NULL) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "consumer %s: %s", name, d);
    }
    json_decref(j);
}
#define cons(c, s, name, cfg) cons_at(__FILE__, __LINE__, (c), (s), (name), (cfg))

static void
cons_delete_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *name)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DELETE.%s.%s", s, name);
    js_publish_at(file, line, c, subj, API, NULL, "");
    js_msg_free_ret(js_expect_msg_at(file, line, c, API, NULL,
                                     "{\"type\":\"" T_DELETE "\",\"success\":true}"));
}
#define cons_delete(c, s, name) cons_delete_at(__FILE__, __LINE__, (c), (s), (name))

static void
state_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *name,
         long long dcs, long long dss, long long acs, long long ass, long long pending,
         long long ack_pending, long long waiting)
{
    json_t *j = info_at(file, line, c, s, name);
    char kv[7][64];
    snprintf(kv[0], 64, "delivered.consumer_seq=%lld", dcs);
    snprintf(kv[1], 64, "delivered.stream_seq=%lld", dss);
    snprintf(kv[2], 64, "ack_floor.consumer_seq=%lld", acs);
    snprintf(kv[3], 64, "ack_floor.stream_seq=%lld", ass);
    snprintf(kv[4], 64, "num_pending=%lld", pending);
    snprintf(kv[5], 64, "num_ack_pending=%lld", ack_pending);
    snprintf(kv[6], 64, "num_waiting=%lld", waiting);
    ints_at(file, line, j,
            (const char *const[]){kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], kv[6], NULL});
    json_decref(j);
}
/* STATE(c, s, name, delivered cseq, sseq, ack floor cseq, sseq, num_pending, num_ack_pending,
 * num_waiting) */
#define STATE(c, s, n, dcs, dss, acs, ass, p, ap, w)                                               \
    state_at(__FILE__, __LINE__, (c), (s), (n), (dcs), (dss), (acs), (ass), (p), (ap), (w))

/* Expects a delivery of data on subj through s/n with the given dc/sseq/dseq/pending in its ack
 * subject. Returns: the ack subject (owned). */
static char *
delivery_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *data,
            const char *s, const char *n, long long dc, long long sseq, long long dseq,
            long long pending)
{
    js_msg_t m = js_expect_msg_at(file, line, c, subj, NULL, data);
    if (m.reply == NULL)
        jfail(file, line, "delivery without an ack subject: %s", m.line);
    char want[256];
    int pre = snprintf(want, sizeof want, "$JS.ACK.%s.%s.%lld.%lld.%lld.", s, n, dc, sseq, dseq);
    const char *dot = strrchr(m.reply, '.');
    char tail[32];
    snprintf(tail, sizeof tail, ".%lld", pending);
    if (strncmp(m.reply, want, (size_t)pre) != 0 || dot == NULL || strcmp(dot, tail) != 0)
        jfail(file, line, "ack subject %s, expected %s<ts>%s", m.reply, want, tail);
    char *r = strdup(m.reply);
    js_msg_free(&m);
    return r;
}
#define DELIVERY(c, subj, data, s, n, dc, sseq, dseq, pending)                                     \
    delivery_at(__FILE__, __LINE__, (c), (subj), (data), (s), (n), (dc), (sseq), (dseq), (pending))

/* The server still works: an API request, a publish into a fresh stream and a pull from a fresh
 * consumer. Uses stream HEALTH (made here, deleted after). */
static void
healthy_at(const char *file, int line, nd_integ_conn_t *c)
{
    json_t *j = api_at(file, line, c, "$JS.API.STREAM.CREATE.HEALTH",
                       "{\"name\":\"HEALTH\",\"subjects\":[\"health.>\"]}");
    if (json_object_get(j, "error") != NULL)
        jfail(file, line, "health stream: %s", json_dumps(j, JSON_COMPACT));
    json_decref(j);
    pub_at(file, line, c, "health.x", "ok", "HEALTH", 1);
    cons_at(file, line, c, "HEALTH", "H", "{\"durable_name\":\"H\",\"ack_policy\":\"none\"}");
    next_at(file, line, c, "HEALTH", "H", "_P.health", "{\"batch\":1,\"expires\":5000000000}");
    js_msg_free_ret(js_expect_msg_at(file, line, c, "health.x", NULL, "ok"));
    js_publish_at(file, line, c, "$JS.API.STREAM.DELETE.HEALTH", API, NULL, "");
    js_msg_free_ret(js_expect_msg_at(file, line, c, API, NULL,
                                     "{\"type\":\"" T_SDEL "\",\"success\":true}"));
}
#define HEALTHY(c) healthy_at(__FILE__, __LINE__, (c))

/* ---- memory ---------------------------------------------------------------------------------- */

/* The pid of the server whose config file is conf (its command line names it), or -1. */
static int
server_pid(const nd_integ_conf_t *conf)
{
    DIR *d = opendir("/proc");
    if (d == NULL)
        return -1;
    struct dirent *de;
    int found = -1;
    while (found < 0 && (de = readdir(d)) != NULL) {
        int pid = atoi(de->d_name);
        if (pid <= 0)
            continue;
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[n] = '\0';
        if (strstr(buf, conf->path) != NULL)
            found = pid;
    }
    closedir(d);
    return found;
}

/* The process's resident set in KiB, or -1. */
static long
rss_kib(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* ---- acks -------------------------------------------------------------------------------------
 */

typedef enum { A_NONE, A_REPLY, A_503 } ack_answer_t;

/* Whether frame f is a message on subject subj (any sid, any reply; nats-server frames its
 * internal replies with an empty reply field, natsd without one). */
static bool
frame_on(const char *f, const char *subj)
{
    size_t n = strlen(subj);
    return (strncmp(f, "MSG ", 4) == 0 && strncmp(f + 4, subj, n) == 0 && f[4 + n] == ' ') ||
           (strncmp(f, "HMSG ", 5) == 0 && strncmp(f + 5, subj, n) == 0 && f[5 + n] == ' ');
}

/* Reads frames until one on subject `until`; returns the others, PINGs left out, with each first
 * line's runs of spaces made one (nats-server writes an empty reply field). Returns: a
 * NULL-terminated owned array of owned strings. */
static char **
frames_until_at(const char *file, int line, nd_integ_conn_t *c, const char *until)
{
    size_t n = 0, cap = 8;
    char **out = malloc(cap * sizeof *out);
    for (;;) {
        char *f = nd_integ_read_frame_at(file, line, c);
        if (f == NULL)
            jfail(file, line, "connection closed while waiting for %s", until);
        if (frame_on(f, until)) {
            free(f);
            break;
        }
        if (strcmp(f, "PING\r\n") == 0) {
            free(f);
            continue;
        }
        char *eol = strstr(f, "\r\n"), *w = f;
        for (char *r = f; r < eol; r++)
            if (!(*r == ' ' && r > f && r[-1] == ' '))
                *w++ = *r;
        memmove(w, eol, strlen(eol) + 1);
        if (n + 2 > cap)
            out = realloc(out, (cap *= 2) * sizeof *out);
        out[n++] = f;
    }
    out[n] = NULL;
    return out;
}

static void
frames_free(char **fs)
{
    for (size_t i = 0; fs[i] != NULL; i++)
        free(fs[i]);
    free(fs);
}

/* Sends body on ack subject subj with reply _P.a, then a +WPI with reply _P.z on sync (the ack
 * subject of a message the same consumer delivered and nobody acked: always answered). Acks are
 * handled in order by the consumer, asynchronously to the connection (in nats-server and natsd),
 * so the answer to sync orders the case's answer; a PING does not. Checks (soft) that exactly
 * `want` came before it. */
static void
ack_case_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
            ack_answer_t want, const char *sync)
{
    js_publish_at(file, line, c, subj, "_P.a", NULL, body);
    js_publish_at(file, line, c, sync, "_P.z", NULL, "+WPI");
    ack_answer_t got = A_NONE;
    int answers = 0;
    for (;;) {
        char *f = nd_integ_read_frame_at(file, line, c);
        if (f == NULL)
            jfail(file, line, "connection closed after %s %s", body, subj);
        if (frame_on(f, "_P.z")) {
            free(f);
            break;
        }
        size_t fl = strlen(f);
        if (frame_on(f, "_P.a") && f[0] == 'M' && fl > 6 && strcmp(f + fl - 6, " 0\r\n\r\n") == 0)
            got = A_REPLY, answers++;
        else if (frame_on(f, "_P.a") && strstr(f, "\r\nNATS/1.0 503\r\n") != NULL)
            got = A_503, answers++;
        else if (strncmp(f, "-ERR ", 5) != 0 && strcmp(f, "PING\r\n") != 0) {
            char *esc = nd_integ_escape(f, fl, 300);
            soft(file, line, "%s %s: unexpected frame %s", body, subj, esc);
            free(esc);
        }
        free(f);
    }
    static const char *const names[] = {"no answer", "an empty reply", "503 no responders"};
    if (got != want || answers > 1)
        soft(file, line, "%s on %s: expected %s, got %s (%d answers)", body, subj, names[want],
             names[got], answers);
}
#define ACK_CASE_ON(c, subj, body, want, sync)                                                     \
    ack_case_at(__FILE__, __LINE__, (c), (subj), (body), (want), (sync))
#define ACK_CASE(c, subj, body, want) ack_case_at(__FILE__, __LINE__, (c), (subj), (body), (want), a1)

/* Acks (with a reply) for consumers and streams that do not exist or were deleted, malformed ack
 * subjects, forged and overflowing sequences: none of them changes the consumer's state, and the
 * answer is nats-server's. */
Test(integ_jsconsbad, acks_unknown_malformed_forged)
{
    env_t e;
    up(&e);
    stream_s(e.c, 3);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    next(e.c, "S", "D", "_P.n", "");
    char *a1 = DELIVERY(e.c, "s.1", "m1", "S", "D", 1, 1, 1, 2);
    bool ref = nd_integ_is_reference();
    /* 2.9.10 answers every ack on a subject it parses; 2.11 not a +ACK it ignores. */
    ack_answer_t forged_ack = ref ? A_REPLY : A_NONE;

    /* Nobody subscribes to these: the no-responders status. nats-server subscribes
     * $JS.ACK.<s>.<c>.*.*.*.*.* (5 tokens exactly), so a wrong token count has no responder. */
    ACK_CASE(e.c, "$JS.ACK.S.NOPE.1.1.1.1.0", "+ACK", A_503);
    ACK_CASE(e.c, "$JS.ACK.NOPE.D.1.1.1.1.0", "+ACK", A_503);
    ACK_CASE(e.c, "$JS.ACK.S.D", "+ACK", A_503);
    ACK_CASE(e.c, "$JS.ACK.S.D.1", "+ACK", A_503);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.1", "+ACK", A_503);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.1.1.1", "+ACK", A_503);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.1.1.1.0.9", "+ACK", A_503);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.1.1.1.0.9", "-NAK", A_503);
    /* Not numbers (nats-server reads them as the largest sequence): never delivered. */
    ACK_CASE(e.c, "$JS.ACK.S.D.x.y.z.t.p", "+ACK", forged_ack);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.x.1.1.0", "+ACK", forged_ack);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.-1.1.1.0", "+ACK", forged_ack);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.99999999999999999999999.1.1.0", "+ACK", forged_ack);
    /* Never delivered. */
    ACK_CASE(e.c, "$JS.ACK.S.D.1.2.2.1.0", "+ACK", forged_ack);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.3.3.1.0", "+TERM", forged_ack);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.99.99.1.0", "+TERM", forged_ack);
    /* -NAK and +WPI are answered whatever the sequence (2.9.10 and 2.11). */
    ACK_CASE(e.c, "$JS.ACK.S.D.1.2.2.1.0", "-NAK", A_REPLY);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.2.2.1.0", "+WPI", A_REPLY);
    ACK_CASE(e.c, "$JS.ACK.S.D.x.y.z.t.p", "-NAK", A_REPLY);
    /* Stream sequence 0: never answered. */
    ACK_CASE(e.c, "$JS.ACK.S.D.1.0.0.1.0", "+ACK", A_NONE);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.0.0.1.0", "-NAK", A_NONE);
    ACK_CASE(e.c, "$JS.ACK.S.D.1.0.0.1.0", "+WPI", A_NONE);
    /* An empty token is not a valid publish subject: -ERR (the connection stays), and nobody
     * gets it. */
    ACK_CASE(e.c, "$JS.ACK.S.D.1..1.1.0", "+ACK", A_503);
    /* Bodies that are no ack kind: answered as an ack of nothing (2.11: for a delivered
     * sequence nothing changes and the reply comes). */
    ACK_CASE(e.c, a1, "+BOGUS", A_REPLY);
    ND_PING(e.c);
    /* Nothing changed: m1 delivered and pending, m2 and m3 not delivered. (2.9.10 moves the ack
     * floor on a forged +TERM; 2.11 does not.) */
    if (ref) {
        HEALTHY(e.c);
        free(a1);
        down(&e);
        return;
    }
    STATE(e.c, "S", "D", 1, 1, 0, 0, 2, 1, 0);

    /* The consumer still works. */
    next(e.c, "S", "D", "_P.n", "");
    char *a2 = DELIVERY(e.c, "s.2", "m2", "S", "D", 1, 2, 2, 1);
    js_publish(e.c, a1, "_P.a", NULL, "+ACK");
    js_expect_msg(e.c, "_P.a", NULL, "");
    js_publish(e.c, a2, "_P.a", NULL, "+ACK");
    js_expect_msg(e.c, "_P.a", NULL, "");
    STATE(e.c, "S", "D", 2, 2, 2, 2, 1, 0, 0);
    free(a1), free(a2);
    HEALTHY(e.c);
    down(&e);
}

/* +NXT on a forged ack subject: nats-server ignores the ack but still takes the pull request
 * (processAck calls processNextMsgRequest whatever processAckMsg said). */
Test(integ_jsconsbad, ack_next_on_forged_subject)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    js_publish(e.c, "$JS.ACK.S.D.1.2.2.1.0", "_P.x", NULL, "+NXT");
    /* The delivery comes from the consumer's loop, after any PONG: wait for it. */
    js_msg_t m = js_read_msg(e.c);
    cr_assert(strncmp(m.line, "MSG s.1 2 $JS.ACK.S.D.1.1.1.", 28) == 0,
              "+NXT on a forged ack subject: expected the delivery of s.1, got %s", m.line);
    js_msg_free(&m);
    ND_PING(e.c);
    HEALTHY(e.c);
    down(&e);
}

/* Acks of a deleted consumer: nobody listens any more (no-responders), and a new consumer of the
 * same name does not take the old acks (it delivered nothing yet). */
Test(integ_jsconsbad, acks_for_deleted_consumer)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    next(e.c, "S", "D", "_P.n", "2");
    char *a1 = DELIVERY(e.c, "s.1", "m1", "S", "D", 1, 1, 1, 1);
    char *a2 = DELIVERY(e.c, "s.2", "m2", "S", "D", 1, 2, 2, 0);
    /* Z: a consumer whose pending message orders the answers (see ack_case_at). */
    cons(e.c, "S", "Z", "{\"durable_name\":\"Z\",\"ack_policy\":\"explicit\"}");
    next(e.c, "S", "Z", "_P.n", "");
    char *z = DELIVERY(e.c, "s.1", "m1", "S", "Z", 1, 1, 1, 1);
    cons_delete(e.c, "S", "D");
    ACK_CASE_ON(e.c, a1, "+ACK", A_503, z);
    ACK_CASE_ON(e.c, a2, "-NAK", A_503, z);
    ACK_CASE_ON(e.c, a2, "+TERM", A_503, z);

    /* D again: it delivers m1 anew; the old ack of m2 is forged for it. */
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    STATE(e.c, "S", "D", 0, 0, 0, 0, 2, 0, 0);
    next(e.c, "S", "D", "_P.n", "");
    char *b1 = DELIVERY(e.c, "s.1", "m1", "S", "D", 1, 1, 1, 1);
    ACK_CASE_ON(e.c, a2, "+ACK", nd_integ_is_reference() ? A_REPLY : A_NONE, b1);
    ACK_CASE_ON(e.c, a2, "+TERM", nd_integ_is_reference() ? A_REPLY : A_NONE, b1);
    STATE(e.c, "S", "D", 1, 1, 0, 0, 1, 1, 0);
    free(a1), free(a2), free(b1), free(z);

    /* The whole stream gone: its acks have no responder either. */
    js_publish(e.c, "$JS.API.STREAM.DELETE.S", API, NULL, "");
    js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_SDEL "\",\"success\":true}");
    ND_SEND(e.c, "PUB $JS.ACK.S.D.1.1.1.1.0 _P.a 4\r\n+ACK\r\n");
    ND_EXPECT(e.c, "HMSG _P.a 2 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    HEALTHY(e.c);
    down(&e);
}

/* ---- pull requests ----------------------------------------------------------------------------
 */

/* One pull request body and its outcome: status NULL means one delivery (the next message). */
typedef struct pull_case {
    const char *body;
    const char *status; /* whole status line and extra headers, without "NATS/1.0 " */
} pull_case_t;

#define BAD(why) "400 Bad Request - " why "\r\n"
#define NEXT_T   "JSApiConsumerGetNextRequest"

/* Bodies nats-server accepts as a batch of one (negative and zero batches included): each, on a
 * consumer of its own, delivers exactly the first message and leaves nothing waiting. */
Test(integ_jsconsbad, pull_odd_bodies_deliver_one)
{
    env_t e;
    up(&e);
    stream_s(e.c, 3);
    static const char *const bodies[] = {
        "{\"batch\":-5}", "{\"batch\":0}", "{\"batch\":-5,\"no_wait\":true}", "-3", "0", "abc",
        "[1,2]", "null", "\"5\"", "{\"batch\":null}", "{\"max_bytes\":-1}",
        "{\"idle_heartbeat\":-1}", "{\"batch\":1,\"unknown\":{\"deep\":[1,2,{}]}}",
        "  7x  ", "{\"batch\":1,\"max_bytes\":-5}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        nd_integ_context("body %zu: %s", i, bodies[i]);
        char name[16], cfg[128];
        snprintf(name, sizeof name, "D%zu", i);
        snprintf(cfg, sizeof cfg, "{\"durable_name\":\"%s\",\"ack_policy\":\"none\"}", name);
        cons(e.c, "S", name, cfg);
        next(e.c, "S", name, "_P.n", bodies[i]);
        js_msg_t m = js_read_msg(e.c);
        cr_assert(strcmp(m.subject, "s.1") == 0 && m.hdr == NULL && strcmp(m.data, "m1") == 0,
                  "%s: %s", bodies[i], m.line);
        js_msg_free(&m);
        STATE(e.c, "S", name, 1, 1, 1, 1, 2, 0, 0);
    }
    nd_integ_context(NULL);
    HEALTHY(e.c);
    down(&e);
}

/* Mistyped, out-of-range and broken fields: the 400 status nats-server sends (at once, before
 * the request is queued), and nothing delivered. */
Test(integ_jsconsbad, pull_bad_fields)
{
    env_t e;
    up(&e);
    stream_s(e.c, 3);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"none\"}");
    static const pull_case_t cases[] = {
        {"{\"batch\":\"x\"}", BAD("json: cannot unmarshal string into Go struct field " NEXT_T
                                  ".batch of type int")},
        {"{\"batch\":1.5}", BAD("json: cannot unmarshal number 1.5 into Go struct field " NEXT_T
                                ".batch of type int")},
        {"{\"batch\":99999999999999999999}",
         BAD("json: cannot unmarshal number 99999999999999999999 into Go struct field " NEXT_T
             ".batch of type int")},
        {"{\"batch\":true}", BAD("json: cannot unmarshal bool into Go struct field " NEXT_T
                                 ".batch of type int")},
        {"{\"batch\":[1]}", BAD("json: cannot unmarshal array into Go struct field " NEXT_T
                                ".batch of type int")},
        {"{\"expires\":\"1s\"}", BAD("json: cannot unmarshal string into Go struct field " NEXT_T
                                     ".expires of type time.Duration")},
        {"{\"expires\":1e400}", BAD("json: cannot unmarshal number 1e400 into Go struct field " NEXT_T
                                    ".expires of type time.Duration")},
        {"{\"max_bytes\":\"x\"}", BAD("json: cannot unmarshal string into Go struct field " NEXT_T
                                      ".max_bytes of type int")},
        {"{\"idle_heartbeat\":\"x\"}", BAD("json: cannot unmarshal string into Go struct field " NEXT_T
                                           ".idle_heartbeat of type time.Duration")},
        {"{\"no_wait\":\"yes\"}", BAD("json: cannot unmarshal string into Go struct field " NEXT_T
                                      ".no_wait of type bool")},
        /* Heartbeats that do not fit twice in expires (also without expires). */
        {"{\"idle_heartbeat\":1000000000}", BAD("heartbeat value too large")},
        {"{\"batch\":1,\"expires\":1,\"idle_heartbeat\":1}", BAD("heartbeat value too large")},
        /* Broken JSON. */
        {"{", BAD("unexpected end of JSON input")},
        {"{\"batch\":1}x", BAD("invalid character 'x' after top-level value")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        next(e.c, "S", "D", "_P.n", cases[i].body);
        js_msg_t m = js_read_msg(e.c);
        char want[512];
        snprintf(want, sizeof want, "NATS/1.0 %s\r\n", cases[i].status);
        if (strcmp(m.subject, "_P.n") != 0 || m.hdr == NULL || strcmp(m.hdr, want) != 0) {
            const char *g = m.hdr ? m.hdr : m.line;
            char *esc = nd_integ_escape(g, strlen(g), 400);
            soft(__FILE__, __LINE__, "case %zu %s: expected %s, got %s", i, cases[i].body,
                 cases[i].status, esc);
            free(esc);
        }
        js_msg_free(&m);
    }
    ND_PING(e.c);
    STATE(e.c, "S", "D", 0, 0, 0, 0, 3, 0, 0);
    HEALTHY(e.c);
    down(&e);
}

/* A negative expires is a deadline in the past: the request ends at once with 408 and its whole
 * batch pending (nats-server: time.Now().Add(expires), then processWaiting expires it). */
Test(integ_jsconsbad, pull_negative_expires)
{
    env_t e;
    up(&e);
    stream_s(e.c, 0);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"none\"}");
    next(e.c, "S", "D", "_P.1", "{\"expires\":-1}");
    STATUS(e.c, "_P.1", "408 Request Timeout", PENDING(0, 0)); /* JSON without batch: 0 */
    next(e.c, "S", "D", "_P.2", "{\"expires\":-1,\"batch\":2}");
    STATUS(e.c, "_P.2", "408 Request Timeout", PENDING(2, 0));
    next(e.c, "S", "D", "_P.3", "{\"expires\":-9223372036854775808,\"batch\":3}");
    STATUS(e.c, "_P.3", "408 Request Timeout", PENDING(3, 0));
    STATE(e.c, "S", "D", 0, 0, 0, 0, 0, 0, 0);
    /* Nothing is left waiting to take a message published now. */
    pub(e.c, "s.1", "m1", "S", 1);
    ND_PING(e.c);
    STATE(e.c, "S", "D", 0, 0, 0, 0, 1, 0, 0);
    HEALTHY(e.c);
    down(&e);
}

/* An expires so large that now + expires overflows: nats-server saturates the deadline (Go's
 * time.Add), so the request waits; it must not end at once (nor wrap into the past). */
Test(integ_jsconsbad, pull_huge_expires_waits)
{
    env_t e;
    up(&e);
    stream_s(e.c, 0);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"none\"}");
    nd_integ_conn_t *p = js_conn_open(e.srv, "_Q.>");
    next(p, "S", "D", "_Q.1", "{\"batch\":1,\"expires\":9223372036854775807}");
    next(p, "S", "D", "_Q.2",
         "{\"batch\":1,\"expires\":9223372036854775807,\"idle_heartbeat\":4611686018427387903}");
    next(p, "S", "D", "_Q.z", "{\"batch\":\"sync\"}");
    char **fs = frames_until_at(__FILE__, __LINE__, p, "_Q.z");
    for (size_t i = 0; fs[i] != NULL; i++) {
        char *esc = nd_integ_escape(fs[i], strlen(fs[i]), 300);
        soft(__FILE__, __LINE__, "a request with expires 2^63-1 answered at once: %s", esc);
        free(esc);
    }
    frames_free(fs);
    json_t *j = info(e.c, "S", "D");
    if (jint(j, "num_waiting") != 2)
        soft(__FILE__, __LINE__, "num_waiting %lld, expected 2", jint(j, "num_waiting"));
    json_decref(j);
    pub(e.c, "s.1", "m1", "S", 1);
    pub(e.c, "s.2", "m2", "S", 2);
    ND_PING(e.c);
    nd_integ_conn_close(p);
    HEALTHY(e.c);
    down(&e);
}

/* Huge bodies: a 512 KiB batch number, a 512 KiB JSON request with an unknown field, a 512 KiB
 * string for a number field. None may hurt the server. */
Test(integ_jsconsbad, pull_huge_bodies)
{
    env_t e;
    up_with(&e, NULL, "max_payload: 4MB\n");
    stream_s(e.c, 5);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"none\"}");
    enum { BIG = 512 * 1024 };
    char *body = malloc(BIG + 64);
    /* Digits: not a valid int (overflow), so a batch of one. */
    memset(body, '9', BIG);
    body[BIG] = '\0';
    next(e.c, "S", "D", "_P.n", body);
    js_expect_msg(e.c, "s.1", NULL, "m1");
    /* An unknown field with a long string: ignored. */
    strcpy(body, "{\"batch\":1,\"pad\":\"");
    size_t n = strlen(body);
    memset(body + n, 'a', BIG);
    strcpy(body + n + BIG, "\"}");
    next(e.c, "S", "D", "_P.n", body);
    js_expect_msg(e.c, "s.2", NULL, "m2");
    /* A long string where a number belongs. */
    strcpy(body, "{\"batch\":\"");
    n = strlen(body);
    memset(body + n, 'b', BIG);
    strcpy(body + n + BIG, "\"}");
    next(e.c, "S", "D", "_P.n", body);
    STATUS(e.c, "_P.n", "400 Bad Request - json: cannot unmarshal string into Go struct field " NEXT_T
                        ".batch of type int",
           "");
    /* Deeply nested: Go's decoder stops at depth 10000. */
    strcpy(body, "{\"x\":");
    n = strlen(body);
    memset(body + n, '[', 20000);
    memset(body + n + 20000, ']', 20000);
    strcpy(body + n + 40000, "}");
    next(e.c, "S", "D", "_P.n", body);
    js_msg_t m = js_read_msg(e.c);
    cr_assert_str_eq(m.subject, "_P.n", "%s", m.line);
    cr_assert(m.hdr != NULL && strncmp(m.hdr, "NATS/1.0 400 Bad Request - ", 27) == 0, "%s",
              m.hdr ? m.hdr : m.line);
    js_msg_free(&m);
    free(body);
    STATE(e.c, "S", "D", 2, 2, 2, 2, 3, 0, 0);
    HEALTHY(e.c);
    down(&e);
}

/* 100,000 pipelined pull requests from one client: max_waiting (512 by default) are kept, every
 * other one is answered 409 Exceeded MaxWaiting, the server's memory stays bounded, and the
 * waiting ones are served in order afterwards. */
Test(integ_jsconsbad, pull_flood_max_waiting, .timeout = 300)
{
    env_t e;
    up(&e);
    stream_s(e.c, 0);
    cons(e.c, "S", "W", "{\"durable_name\":\"W\",\"ack_policy\":\"none\"}");
    nd_integ_conn_t *p = js_conn_open(e.srv, "_Q.>");
    int pid = server_pid(&e.conf);
    long rss0 = pid > 0 ? rss_kib(pid) : -1;

    enum { N = 100000, MAXW = 512 };
    static const char body[] = "{\"batch\":1,\"expires\":60000000000}";
    size_t cap = (size_t)N * 96, len = 0;
    char *buf = malloc(cap);
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(buf + len, cap - len,
                                "PUB $JS.API.CONSUMER.MSG.NEXT.S.W _Q.%d %zu\r\n%s\r\n", i,
                                sizeof body - 1, body);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    nd_integ_send(p, buf, len);
    free(buf);
    /* Every request past the first MAXW is refused (each once; natsd's consumer answers
     * asynchronously, so the order is not checked). */
    char *seen = calloc(N, 1);
    int others = 0;
    for (int i = MAXW; i < N; i++) {
        js_msg_t m = js_read_msg(p);
        int q = -1;
        if (sscanf(m.subject, "_Q.%d", &q) != 1 || q < 0 || q >= N || seen[q])
            jfail(__FILE__, __LINE__, "answer %d: unexpected %s", i, m.line);
        seen[q] = 1;
        if (m.hdr == NULL || strcmp(m.hdr, "NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n") != 0) {
            if (others++ < 5)
                soft(__FILE__, __LINE__, "request %d: expected 409 Exceeded MaxWaiting, got %s %s",
                     q, m.line, m.hdr ? m.hdr : "");
        }
        js_msg_free(&m);
    }
    if (others > 0)
        soft(__FILE__, __LINE__, "%d of %d requests got something else than 409", others, N - MAXW);
    free(seen);
    ND_PING(p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "pull_flood_max_waiting: %d requests answered in %.2f s\n", N, secs);
    long rss1 = pid > 0 ? rss_kib(pid) : -1;
    if (rss0 > 0 && rss1 > 0) {
        fprintf(stderr, "pull_flood_max_waiting: server VmRSS %ld -> %ld KiB\n", rss0, rss1);
        /* 512 waiting requests and the 409s in flight; far below what keeping 100,000 would.
         * (Under ASan freed memory sits in its quarantine, so RSS says nothing there.) */
#if !defined(__SANITIZE_ADDRESS__)
        cr_assert(rss1 - rss0 < 64 * 1024, "server grew by %ld KiB", rss1 - rss0);
#endif
    }
    STATE(e.c, "S", "W", 0, 0, 0, 0, 0, 0, MAXW);

    /* The waiting ones are served first come, first served. */
    pub(e.c, "s.1", "m1", "S", 1);
    pub(e.c, "s.2", "m2", "S", 2);
    for (int k = 1; k <= 2; k++) {
        js_msg_t m = js_read_msg(p);
        char want[64];
        snprintf(want, sizeof want, "MSG s.%d 1 $JS.ACK.S.W.1.%d.%d.", k, k, k);
        cr_assert(strncmp(m.line, want, strlen(want)) == 0, "%s", m.line);
        js_msg_free(&m);
    }
    ND_PING(p);
    STATE(e.c, "S", "W", 2, 2, 2, 2, 0, 0, MAXW - 2);
    HEALTHY(e.c);
    nd_integ_conn_close(p);
    down(&e);
}

/* ---- streams deleted under consumers ----------------------------------------------------------
 */

/* Pull requests waiting when their stream is deleted: each ends with 409 Consumer Deleted (as
 * when the consumer itself is deleted), and the stream can be made again without its old
 * consumer. */
Test(integ_jsconsbad, stream_deleted_under_waiting_pulls)
{
    env_t e;
    up(&e);
    stream_s(e.c, 0);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    nd_integ_conn_t *p = js_conn_open(e.srv, "_Q.>");
    next(p, "S", "D", "_Q.1", "{\"batch\":5,\"expires\":30000000000}");
    next(p, "S", "D", "_Q.2", "{\"batch\":1,\"expires\":30000000000,\"idle_heartbeat\":10000000000}");
    next(p, "S", "D", "_Q.3", "{\"batch\":1}");
    ND_PING(p);
    STATE(e.c, "S", "D", 0, 0, 0, 0, 0, 0, 3);
    js_publish(e.c, "$JS.API.STREAM.DELETE.S", API, NULL, "");
    js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_SDEL "\",\"success\":true}");
    /* nats-server writes its internal messages with an empty reply field (two spaces). */
    const char *sp = nd_integ_is_reference() ? "  " : " ";
    char f[3][128];
    for (int i = 0; i < 3; i++)
        snprintf(f[i], sizeof f[i],
                 "HMSG _Q.%d 1%s33 33\r\nNATS/1.0 409 Consumer Deleted\r\n\r\n\r\n", i + 1, sp);
    const char *const frames[] = {f[0], f[1], f[2]};
    nd_integ_expect_unordered(p, frames, 3);
    ND_PING(p);
    API_ERR(e.c, "$JS.API.CONSUMER.INFO.S.D", "", T_INFO, 404, 10059, "stream not found");
    /* S again: empty, without D. */
    stream_s(e.c, 1);
    API_ERR(e.c, "$JS.API.CONSUMER.INFO.S.D", "", T_INFO, 404, 10014, "consumer not found");
    json_t *j = api(e.c, "$JS.API.CONSUMER.NAMES.S", "");
    INTS(j, "total=0");
    json_decref(j);
    nd_integ_conn_close(p);
    HEALTHY(e.c);
    down(&e);
}

/* Consumer creates racing a stream delete: 64 creates pipelined on one connection while another
 * deletes the stream. Every create is answered (created, or an error), the delete succeeds, and
 * no consumer survives into a new stream of the same name. */
Test(integ_jsconsbad, consumer_creates_racing_stream_delete)
{
    env_t e;
    up(&e);
    for (int round = 0; round < 5; round++) {
        stream_s(e.c, 3);
        nd_integ_conn_t *a = js_conn_open(e.srv, "_C.>");
        enum { N = 64 };
        size_t cap = N * 512, len = 0;
        char *buf = malloc(cap);
        for (int i = 0; i < N; i++) {
            char body[256];
            int bl = snprintf(body, sizeof body,
                              "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"C%d\","
                              "\"ack_policy\":\"explicit\"%s}}",
                              i, i % 2 ? ",\"deliver_subject\":\"dlv.x\"" : "");
            len += (size_t)snprintf(buf + len, cap - len,
                                    "PUB $JS.API.CONSUMER.CREATE.S.C%d _C.%d %d\r\n%s\r\n", i, i,
                                    bl, body);
        }
        /* The delete goes out between the creates' halves. */
        size_t half = 0;
        for (int i = 0, n = 0; i < (int)len; i++)
            if (buf[i] == '\n' && ++n == N) {
                half = (size_t)i + 1;
                break;
            }
        nd_integ_send(a, buf, half);
        js_publish(e.c, "$JS.API.STREAM.DELETE.S", API, NULL, "");
        nd_integ_send(a, buf + half, len - half);
        free(buf);
        js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_SDEL "\",\"success\":true}");
        int created = 0, failed = 0;
        for (int i = 0; i < N; i++) {
            js_msg_t m = js_read_msg(a);
            json_t *j = json_loads(m.data, 0, NULL);
            cr_assert(j != NULL && strncmp(m.subject, "_C.", 3) == 0, "%s %s", m.line, m.data);
            cr_assert_str_eq(jstr(j, "type"), T_CREATE);
            if (jget(j, "error") != NULL)
                failed++;
            else
                created++;
            json_decref(j);
            js_msg_free(&m);
        }
        ND_PING(a);
        fprintf(stderr, "round %d: %d created, %d refused\n", round, created, failed);
        nd_integ_conn_close(a);
        json_t *si = api(e.c, "$JS.API.STREAM.INFO.S", "");
        INTS(si, "error.code=404", "error.err_code=10059");
        json_decref(si);
        stream_s(e.c, 0);
        json_t *j = api(e.c, "$JS.API.CONSUMER.NAMES.S", "");
        INTS(j, "total=0");
        json_decref(j);
        js_publish(e.c, "$JS.API.STREAM.DELETE.S", API, NULL, "");
        js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_SDEL "\",\"success\":true}");
    }
    HEALTHY(e.c);
    down(&e);
}

/* ---- push ------------------------------------------------------------------------------------ */

/* Deliver subjects with wildcards (10079) or that the stream itself would store (10081: every
 * delivery would be stored and delivered again). */
Test(integ_jsconsbad, deliver_subject_wildcards_and_cycles)
{
    env_t e;
    up(&e);
    stream(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\",\"t.one\"]}");
#define PUSH(name, dsubj)                                                                          \
    "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"" name "\",\"deliver_subject\":\"" dsubj \
    "\",\"ack_policy\":\"explicit\"}}"
    static const char wild[] = "consumer deliver subject has wildcards";
    static const char cycle[] = "consumer deliver subject forms a cycle";
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.P", PUSH("P", "a.*"), T_CREATE, 400, 10079, wild);
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.P", PUSH("P", ">"), T_CREATE, 400, 10079, wild);
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.P", PUSH("P", "a.>"), T_CREATE, 400, 10079, wild);
    API_ERR(e.c, "$JS.API.CONSUMER.DURABLE.CREATE.S.P", PUSH("P", "*"), T_CREATE, 400, 10079, wild);
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.P", PUSH("P", "s.x"), T_CREATE, 400, 10081, cycle);
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.P", PUSH("P", "s.a.b.c"), T_CREATE, 400, 10081, cycle);
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.P", PUSH("P", "t.one"), T_CREATE, 400, 10081, cycle);
    /* The ephemeral form too. */
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S",
            "{\"stream_name\":\"S\",\"config\":{\"deliver_subject\":\"s.q\",\"ack_policy\":"
            "\"explicit\"}}",
            T_CREATE, 400, 10081, cycle);
    /* Close to the stream's subjects but outside them: fine. */
    cons(e.c, "S", "P", "{\"durable_name\":\"P\",\"deliver_subject\":\"t.two\",\"ack_policy\":"
                        "\"explicit\"}");
    cons(e.c, "S", "Q", "{\"durable_name\":\"Q\",\"deliver_subject\":\"s\",\"ack_policy\":"
                        "\"explicit\"}");
#undef PUSH
    json_t *j = api(e.c, "$JS.API.CONSUMER.NAMES.S", "");
    INTS(j, "total=2");
    json_decref(j);
    HEALTHY(e.c);
    down(&e);
}

/* A push consumer with flow control whose client never answers a flow control request: delivery
 * stops within the window (bounded), the idle heartbeats then carry Nats-Consumer-Stalled with
 * the outstanding request's reply subject, and answering it lets delivery go on to the end. */
Test(integ_jsconsbad, push_flow_control_unanswered_stalls)
{
    env_t e;
    up(&e);
    stream(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    enum { N = 96, SZ = 65536 };
    char *body = malloc(SZ + 1);
    memset(body, 'x', SZ);
    body[SZ] = '\0';
    for (int i = 1; i <= N; i++)
        pub(e.c, "s.big", body, "S", i);
    free(body);
    nd_integ_conn_t *d = js_conn_open(e.srv, "_D.>");
    ND_SEND(d, "SUB dlv.f 5\r\nPING\r\n");
    ND_EXPECT(d, "PONG\r\n");
    cons(e.c, "S", "F",
         "{\"durable_name\":\"F\",\"deliver_subject\":\"dlv.f\",\"ack_policy\":\"none\","
         "\"flow_control\":true,\"idle_heartbeat\":250000000}");
    int msgs = 0, beats = 0;
    char *fc = NULL;
    /* Read until two heartbeats came after the stall, answering nothing. */
    while (beats < 2) {
        js_msg_t m = js_read_msg(d);
        if (strcmp(m.subject, "s.big") == 0) {
            cr_assert_eq(m.data_len, (size_t)SZ);
            cr_assert(beats == 0, "a message after a stalled heartbeat");
            msgs++;
        } else if (m.reply != NULL) {
            cr_assert_str_eq(m.hdr, "NATS/1.0 100 FlowControl Request\r\n\r\n");
            cr_assert(strncmp(m.reply, "$JS.FC.S.F.", 11) == 0, "%s", m.line);
            free(fc);
            fc = strdup(m.reply);
        } else {
            cr_assert_str_eq(m.subject, "dlv.f");
            char want[512];
            snprintf(want, sizeof want,
                     "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: %d\r\n"
                     "Nats-Last-Stream: %d\r\nNats-Consumer-Stalled: %s\r\n\r\n",
                     msgs, msgs, fc ? fc : "(no flow control request seen)");
            if (fc != NULL)
                beats++;
            cr_assert_str_eq(m.hdr, want);
        }
        js_msg_free(&m);
    }
    cr_assert(fc != NULL);
    cr_assert(msgs > 0 && msgs < N, "%d of %d messages delivered without an answer", msgs, N);
    fprintf(stderr, "stalled after %d of %d messages of %d bytes\n", msgs, N, SZ);
    json_t *j = info(e.c, "S", "F");
    char left[64];
    snprintf(left, sizeof left, "num_pending=%d", N - msgs);
    INTS(j, left, "num_ack_pending=0");
    json_decref(j);
    HEALTHY(e.c);

    /* Answering resumes it; the heartbeats stop saying stalled once nothing is outstanding. */
    js_publish(d, fc, NULL, NULL, "");
    while (msgs < N) {
        js_msg_t m = js_read_msg(d);
        if (strcmp(m.subject, "s.big") == 0) {
            msgs++;
        } else if (m.reply != NULL) {
            cr_assert_str_eq(m.hdr, "NATS/1.0 100 FlowControl Request\r\n\r\n");
            js_publish(d, m.reply, NULL, NULL, "");
        }
        js_msg_free(&m);
    }
    free(fc);
    nd_integ_conn_close(d);
    HEALTHY(e.c);
    down(&e);
}

/* ---- create bodies ---------------------------------------------------------------------------
 */

/* A create with a 1 MiB body: as a description (too long: 10107) and as an unknown field (ignored
 * outside strict mode); a config nested 100,000 arrays deep (invalid JSON, 10025). */
Test(integ_jsconsbad, create_huge_and_deep_bodies)
{
    env_t e;
    up_with(&e, NULL, "max_payload: 8MB\n");
    stream_s(e.c, 1);
    enum { MIB = 1024 * 1024 };
    char *pad = malloc(MIB + 1);
    memset(pad, 'd', MIB);
    pad[MIB] = '\0';
    char *body = NULL;
    cr_assert(asprintf(&body,
                       "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"B\",\"ack_policy\":"
                       "\"explicit\",\"description\":\"%s\"}}",
                       pad) > 0);
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.B", body, T_CREATE, 400, 10107,
            "consumer description is too long, maximum allowed is 4096");
    free(body);
    cr_assert(asprintf(&body,
                       "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"B\",\"ack_policy\":"
                       "\"explicit\",\"unknown_pad\":\"%s\"},\"pad2\":\"%s\"}",
                       pad, pad) > 0);
    json_t *j = api(e.c, "$JS.API.CONSUMER.CREATE.S.B", body);
    free(body);
    cr_assert_null(jget(j, "error"), "%.300s", json_dumps(j, JSON_COMPACT));
    cr_assert_str_eq(jstr(j, "name"), "B");
    cr_assert_null(jget(j, "config.unknown_pad"));
    json_decref(j);
    /* 1 MiB of filter subjects is refused or accepted, but answered. */
    free(pad);

    size_t depth = 100000;
    const char *pre = "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"N\",\"x\":";
    size_t pl = strlen(pre);
    char *deep = malloc(pl + 200 + 2 * depth + 3);
    memcpy(deep, pre, pl);
    memset(deep + pl, '[', depth);
    memset(deep + pl + depth, ']', depth);
    strcpy(deep + pl + 2 * depth, "}}");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.N", deep, T_CREATE, 400, 10025, NULL);
    /* Deep inside a known field. */
    const char *pre2 = "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"N\",\"metadata\":";
    size_t pl2 = strlen(pre2);
    memcpy(deep, pre2, pl2);
    memset(deep + pl2, '[', depth);
    memset(deep + pl2 + depth, ']', depth);
    strcpy(deep + pl2 + 2 * depth, "}}");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.N", deep, T_CREATE, 400, 10025, NULL);
    free(deep);
    API_ERR(e.c, "$JS.API.CONSUMER.INFO.S.N", "", T_INFO, 404, 10014, "consumer not found");

    /* B works. */
    next(e.c, "S", "B", "_P.n", "");
    free(DELIVERY(e.c, "s.1", "m1", "S", "B", 1, 1, 1, 0));
    HEALTHY(e.c);
    down(&e);
}

/* Strict mode (2.11's jetstream { strict: true }): an unknown field anywhere in a consumer create
 * is refused, naming the field. natsd only: 2.9.10 has no strict mode. */
Test(integ_jsconsbad, create_unknown_fields_strict)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server 2.9.10 has no jetstream { strict }");
    env_t e;
    up_with(&e, "strict: true", NULL);
    stream_s(e.c, 1);
#define UNKNOWN(f) "invalid JSON: json: unknown field \"" f "\""
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.U",
            "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"U\",\"ack_policy\":\"explicit\","
            "\"bogus\":1}}",
            T_CREATE, 400, 10025, UNKNOWN("bogus"));
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.U",
            "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"U\",\"ack_policy\":"
            "\"explicit\"},\"x\":true}",
            T_CREATE, 400, 10025, UNKNOWN("x"));
    API_ERR(e.c, "$JS.API.CONSUMER.DURABLE.CREATE.S.U",
            "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"U\",\"ack_policy\":\"explicit\","
            "\"zz\":null}}",
            T_CREATE, 400, 10025, UNKNOWN("zz"));
#undef UNKNOWN
    API_ERR(e.c, "$JS.API.CONSUMER.INFO.S.U", "", T_INFO, 404, 10014, "consumer not found");
    /* Known fields only: created. */
    cons(e.c, "S", "U", "{\"durable_name\":\"U\",\"ack_policy\":\"explicit\"}");
    HEALTHY(e.c);
    down(&e);
}
