/* Integration tests of JetStream consumers and the key-value store through the NATS C client
 * (libnats, nats.c 3.4): push subscriptions (js_SubscribeSync, js_Subscribe with manual acks, queue
 * groups through jsSubOptions.Queue, ordered consumers), the acknowledgement verbs (natsMsg_Ack,
 * AckSync, Nak, Term, InProgress) with the metadata of redeliveries, pull subscriptions
 * (natsSubscription_Fetch and FetchRequest with MaxBytes, NoWait and Expires), consumer management
 * (js_AddConsumer, js_GetConsumerInfo and its counters, js_UpdateConsumer, js_DeleteConsumer,
 * js_Consumers, js_ConsumerNames) and the KV API (buckets, put/get/create/update/delete/purge,
 * history, keys, watchers, status), as applications use them.
 *
 * nats.c 3.4.1 has no object store API (no objStore_* in its headers), so there is no object
 * store case here.
 *
 * The server under test is harness.h's (NATSD_TEST_SERVER, default this build's natsd); every
 * expectation also runs against the reference nats-server 2.9.10 (integ.cjscons.reference). Each
 * server gets `jetstream { store_dir: ... }` in a temporary config directory.
 *
 * Synchronisation: JetStream API calls, AckSync and Fetch are request/replies that wait for the
 * server's answer (hang guard ND_INTEG_TIMEOUT_MS). Plain acks (Ack, Nak, Term, InProgress) are
 * fire-and-forget publishes that the server handles in its own time, so a test reads a
 * consumer's counters after them either after an AckSync on the same consumer (acks of one
 * connection to one consumer are handled in order, so its reply means the earlier ones were
 * handled too) or by polling the consumer info until the expected values show (hang guard). The
 * only waits that are expected to run out are the short ones proving that nothing more arrives
 * (QUIET_MS); none asserts on how long something took.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    /* Releases the library's threads and memory, so a sanitizer build sees no leak. */
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_cjscons, .fini = suite_fini, .timeout = 180);

#define OK(call) ND_NATS_OK(call)

/* How long a test listens to show that nothing (more) arrives. */
#define QUIET_MS 250

/* One second in the nanoseconds of the JetStream API's durations. */
#define SEC_NS (1000LL * 1000 * 1000)

/* Asserts that call fails with status st and JetStream error code code (0: no code); jerr must
 * be the jsErrCode variable the call writes. */
#define JS_FAILS(call, st, code)                                                                   \
    do {                                                                                           \
        jerr = 0;                                                                                  \
        natsStatus s_ = (call);                                                                    \
        cr_assert(s_ == (st) && jerr == (jsErrCode)(code),                                         \
                  "%s: got status %d (%s) code %d, want status %d code %d (%s)", #call, (int)s_,   \
                  natsStatus_GetText(s_), (int)jerr, (int)(st), (int)(code),                       \
                  nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");                         \
    } while (0)

/* Asserts that call returns status st (a call without a JetStream error code). */
#define FAILS(call, st)                                                                            \
    do {                                                                                           \
        natsStatus s_ = (call);                                                                    \
        cr_assert(s_ == (st), "%s: got status %d (%s), want %d (%s) (%s)", #call, (int)s_,         \
                  natsStatus_GetText(s_), (int)(st), natsStatus_GetText(st),                       \
                  nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");                         \
    } while (0)

/* ---- a server with JetStream and a client -------------------------------------------------- */

typedef struct cjs_env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    natsConnection *nc;
    jsCtx *js;
} cjs_env_t;

static void
cjs_up(cjs_env_t *e)
{
    memset(e, 0, sizeof *e);
    char store[256];
    nd_integ_conf_file(&e->conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\" }\n", store) > 0);
    e->srv = nd_integ_conf_start(&e->conf, text);
    free(text);
    char url[64];
    nd_integ_nats_url(e->srv, url, sizeof url);
    OK(natsConnection_ConnectTo(&e->nc, url));
    jsOptions o;
    OK(jsOptions_Init(&o));
    o.Wait = ND_INTEG_TIMEOUT_MS;
    OK(natsConnection_JetStream(&e->js, e->nc, &o));
}

static void
cjs_down(cjs_env_t *e)
{
    jsCtx_Destroy(e->js);
    natsConnection_Destroy(e->nc);
    nd_integ_conf_stop(e->srv, &e->conf);
}

/* Creates stream name on one subject filter with the default config otherwise (file storage). */
static void
add_stream(cjs_env_t *e, const char *name, const char *subject)
{
    const char *subjects[] = {subject};
    jsStreamConfig cfg;
    OK(jsStreamConfig_Init(&cfg));
    cfg.Name = name;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    OK(js_AddStream(&si, e->js, &cfg, NULL, &jerr));
    cr_assert_str_eq(si->Config->Name, name);
    jsStreamInfo_Destroy(si);
}

/* Publishes data on subj and checks that the stream stored it at sequence seq. */
static void
pub(cjs_env_t *e, const char *subj, const char *data, uint64_t seq)
{
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    OK(js_Publish(&pa, e->js, subj, data, (int)strlen(data), NULL, &jerr));
    cr_assert(pa->Sequence == seq, "publish on %s: sequence %llu, want %llu", subj,
              (unsigned long long)pa->Sequence, (unsigned long long)seq);
    jsPubAck_Destroy(pa);
}

/* Publishes n messages "<prefix>.<i>" with data "<i>", i = 1..n, at sequences first..first+n-1. */
static void
pub_n(cjs_env_t *e, const char *prefix, int n, uint64_t first)
{
    for (int i = 1; i <= n; i++) {
        char subj[64], data[16];
        snprintf(subj, sizeof subj, "%s.%d", prefix, i);
        snprintf(data, sizeof data, "%d", i);
        pub(e, subj, data, first + (uint64_t)i - 1);
    }
}

/* Checks a message's data. */
static void
expect_data(natsMsg *m, const char *data)
{
    cr_assert(m != NULL);
    cr_assert(natsMsg_GetDataLength(m) == (int)strlen(data) &&
                  memcmp(natsMsg_GetData(m), data, strlen(data)) == 0,
              "got \"%.*s\" on %s, want \"%s\"", natsMsg_GetDataLength(m), natsMsg_GetData(m),
              natsMsg_GetSubject(m), data);
}

/* Checks a delivered message's metadata (from its ack subject): stream and consumer sequences,
 * delivery count, pending count, stream and consumer names. */
static void
expect_meta(natsMsg *m, const char *stream, const char *consumer, uint64_t sseq, uint64_t cseq,
            uint64_t delivered, uint64_t pending)
{
    jsMsgMetaData *md = NULL;
    OK(natsMsg_GetMetaData(&md, m));
    cr_assert_str_eq(md->Stream, stream);
    if (consumer != NULL)
        cr_assert_str_eq(md->Consumer, consumer);
    cr_assert(md->Sequence.Stream == sseq && md->Sequence.Consumer == cseq &&
                  md->NumDelivered == delivered && md->NumPending == pending,
              "%s: stream seq %llu consumer seq %llu delivered %llu pending %llu, want %llu %llu "
              "%llu %llu",
              natsMsg_GetSubject(m), (unsigned long long)md->Sequence.Stream,
              (unsigned long long)md->Sequence.Consumer, (unsigned long long)md->NumDelivered,
              (unsigned long long)md->NumPending, (unsigned long long)sseq,
              (unsigned long long)cseq, (unsigned long long)delivered, (unsigned long long)pending);
    cr_assert(md->Timestamp > 0);
    jsMsgMetaData_Destroy(md);
}

/* Takes the next message of a synchronous subscription (hang guard) and checks its data. */
static natsMsg *
next_msg(natsSubscription *sub, const char *data)
{
    natsMsg *m = NULL;
    OK(natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS));
    expect_data(m, data);
    return m;
}

/* Fails unless nothing arrives on sub for QUIET_MS. */
static void
expect_no_msg(natsSubscription *sub)
{
    natsMsg *m = NULL;
    natsStatus s = natsSubscription_NextMsg(&m, sub, QUIET_MS);
    cr_assert(s == NATS_TIMEOUT, "expected nothing, got %s%s%.*s", natsStatus_GetText(s),
              m != NULL ? ": " : "", m != NULL ? natsMsg_GetDataLength(m) : 0,
              m != NULL ? natsMsg_GetData(m) : "");
}

/* A consumer's counters, as the tests compare them. */
typedef struct ci_want {
    uint64_t num_pending;
    int64_t num_ack_pending, num_redelivered;
    uint64_t dlv_cons, dlv_stream, ack_cons, ack_stream;
} ci_want_t;

static bool
ci_matches(const jsConsumerInfo *ci, const ci_want_t *w)
{
    return ci->NumPending == w->num_pending && ci->NumAckPending == w->num_ack_pending &&
           ci->NumRedelivered == w->num_redelivered && ci->Delivered.Consumer == w->dlv_cons &&
           ci->Delivered.Stream == w->dlv_stream && ci->AckFloor.Consumer == w->ack_cons &&
           ci->AckFloor.Stream == w->ack_stream;
}

/* Reads the consumer's info until its counters are w's (acks the server handles in its own
 * time), failing with the last values seen after the hang guard. eventually = false: the first
 * answer must match (the caller has a barrier). */
static void
expect_ci_at(const char *file, int line, cjs_env_t *e, const char *stream, const char *consumer,
             ci_want_t w, bool eventually)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        jsConsumerInfo *ci = NULL;
        jsErrCode jerr = 0;
        OK(js_GetConsumerInfo(&ci, e->js, stream, consumer, NULL, &jerr));
        cr_assert_str_eq(ci->Stream, stream);
        cr_assert_str_eq(ci->Name, consumer);
        bool ok = ci_matches(ci, &w);
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (!ok && (!eventually || ms > ND_INTEG_TIMEOUT_MS)) {
            cr_assert_fail(
                "%s:%d: consumer %s: pending %llu ack pending %lld redelivered %lld "
                "delivered {%llu,%llu} ack floor {%llu,%llu}; want %llu %lld %lld "
                "{%llu,%llu} {%llu,%llu}",
                file, line, consumer, (unsigned long long)ci->NumPending,
                (long long)ci->NumAckPending, (long long)ci->NumRedelivered,
                (unsigned long long)ci->Delivered.Consumer,
                (unsigned long long)ci->Delivered.Stream, (unsigned long long)ci->AckFloor.Consumer,
                (unsigned long long)ci->AckFloor.Stream, (unsigned long long)w.num_pending,
                (long long)w.num_ack_pending, (long long)w.num_redelivered,
                (unsigned long long)w.dlv_cons, (unsigned long long)w.dlv_stream,
                (unsigned long long)w.ack_cons, (unsigned long long)w.ack_stream);
        }
        jsConsumerInfo_Destroy(ci);
        if (ok)
            return;
        usleep(20 * 1000);
    }
}
#define expect_ci(e, stream, consumer, ...)                                                        \
    expect_ci_at(__FILE__, __LINE__, (e), (stream), (consumer), (ci_want_t){__VA_ARGS__}, false)
#define expect_ci_eventually(e, stream, consumer, ...)                                             \
    expect_ci_at(__FILE__, __LINE__, (e), (stream), (consumer), (ci_want_t){__VA_ARGS__}, true)

/* Fails unless the library's last error text is exactly want after its "(file.c:line): "
 * prefix (the text is the server's error description). */
static void
expect_last_error(const char *want)
{
    const char *got = nats_GetLastError(NULL);
    const char *text = got != NULL ? strstr(got, "): ") : NULL;
    cr_assert(got != NULL && got[0] == '(' && text != NULL && strcmp(text + 3, want) == 0,
              "last error \"%s\", want \"(...): %s\"", got != NULL ? got : "(none)", want);
}

/* ---- push consumers ------------------------------------------------------------------------ */

Test(integ_cjscons, push_sync_ack_nak_term_in_progress)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "PS", "ps.>");
    pub_n(&e, "ps", 4, 1);

    /* A durable push consumer created by the subscription; the ack wait is long enough that
     * nothing is redelivered by timeout while the test runs. */
    jsSubOptions so;
    OK(jsSubOptions_Init(&so));
    so.Config.Durable = "D";
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.AckWait = 60 * SEC_NS;
    natsSubscription *sub = NULL;
    OK(js_SubscribeSync(&sub, e.js, "ps.>", NULL, &so, &jerr));
    cr_assert(jerr == 0);

    /* 1: a plain ack. */
    natsMsg *m1 = next_msg(sub, "1");
    cr_assert_str_eq(natsMsg_GetSubject(m1), "ps.1");
    expect_meta(m1, "PS", "D", 1, 1, 1, 3);
    OK(natsMsg_Ack(m1, NULL));

    /* 2: a double ack (the server confirms); acking it again is the library's no-op. */
    natsMsg *m2 = next_msg(sub, "2");
    expect_meta(m2, "PS", "D", 2, 2, 1, 2);
    OK(natsMsg_AckSync(m2, NULL, &jerr));
    cr_assert(jerr == 0);
    OK(natsMsg_AckSync(m2, NULL, &jerr));

    /* 3 is refused once 4 is here too, so its redelivery comes after 4 whatever the server's
     * pace: with the next consumer sequence and a delivery count of 2. 4 is still being worked
     * on, which is not an ack. */
    natsMsg *m3 = next_msg(sub, "3");
    expect_meta(m3, "PS", "D", 3, 3, 1, 1);
    natsMsg *m4 = next_msg(sub, "4");
    expect_meta(m4, "PS", "D", 4, 4, 1, 0);
    OK(natsMsg_Nak(m3, NULL));
    OK(natsMsg_InProgress(m4, NULL));
    natsMsg *r3 = next_msg(sub, "3");
    cr_assert_str_eq(natsMsg_GetSubject(r3), "ps.3");
    expect_meta(r3, "PS", "D", 3, 5, 2, 0);

    /* 3 (redelivered) and 4 await their acks; 1 and 2 are done. */
    expect_ci_eventually(&e, "PS", "D", .num_pending = 0, .num_ack_pending = 2,
                         .num_redelivered = 1, .dlv_cons = 5, .dlv_stream = 4, .ack_cons = 2,
                         .ack_stream = 2);

    /* Terminate 3: never redelivered, no longer pending. The AckSync of 4 behind it is the
     * barrier after which the counters must be final. */
    OK(natsMsg_Term(r3, NULL));
    OK(natsMsg_AckSync(m4, NULL, &jerr));
    expect_ci(&e, "PS", "D", .num_pending = 0, .num_ack_pending = 0, .num_redelivered = 0,
              .dlv_cons = 5, .dlv_stream = 4, .ack_cons = 5, .ack_stream = 4);
    expect_no_msg(sub);

    /* A new message comes with the next sequences. */
    pub(&e, "ps.5", "5", 5);
    natsMsg *m5 = next_msg(sub, "5");
    expect_meta(m5, "PS", "D", 5, 6, 1, 0);
    OK(natsMsg_AckSync(m5, NULL, &jerr));

    natsMsg_Destroy(m1);
    natsMsg_Destroy(m2);
    natsMsg_Destroy(m3);
    natsMsg_Destroy(m4);
    natsMsg_Destroy(r3);
    natsMsg_Destroy(m5);
    /* Unsubscribing deletes the consumer the subscription created. */
    OK(natsSubscription_Unsubscribe(sub));
    natsSubscription_Destroy(sub);
    jsConsumerInfo *ci = NULL;
    JS_FAILS(js_GetConsumerInfo(&ci, e.js, "PS", "D", NULL, &jerr), NATS_NOT_FOUND,
             JSConsumerNotFoundErr);
    cjs_down(&e);
}

Test(integ_cjscons, push_redelivery_after_ack_wait)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "RW", "rw.>");
    pub_n(&e, "rw", 1, 1);

    /* An unacknowledged message comes again once the ack wait has passed, at most MaxDeliver
     * times in all. */
    jsSubOptions so;
    OK(jsSubOptions_Init(&so));
    so.Config.Durable = "W";
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.AckWait = SEC_NS / 2;
    so.Config.MaxDeliver = 2;
    natsSubscription *sub = NULL;
    OK(js_SubscribeSync(&sub, e.js, "rw.>", NULL, &so, &jerr));
    natsMsg *m = next_msg(sub, "1");
    expect_meta(m, "RW", "W", 1, 1, 1, 0);
    natsMsg_Destroy(m);
    m = next_msg(sub, "1");
    expect_meta(m, "RW", "W", 1, 2, 2, 0);
    natsMsg_Destroy(m);
    /* MaxDeliver reached: no third delivery within another ack wait. */
    natsStatus s = natsSubscription_NextMsg(&m, sub, 800);
    cr_assert(s == NATS_TIMEOUT, "a third delivery: %s", natsStatus_GetText(s));
    OK(natsSubscription_Unsubscribe(sub));
    natsSubscription_Destroy(sub);
    cjs_down(&e);
}

/* What the asynchronous handler saw. */
typedef struct async_rx {
    nd_integ_waiter_t w;
    pthread_mutex_t mu;
    char seen[16][8]; /* data of each delivery, in order */
    int n;
    natsMsg *kept; /* the message the handler did not ack */
    bool meta_ok;
} async_rx_t;

static void
on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    async_rx_t *rx = closure;
    jsMsgMetaData *md = NULL;
    bool meta_ok = natsMsg_GetMetaData(&md, msg) == NATS_OK && md->NumDelivered == 1 &&
                   strcmp(md->Stream, "AS") == 0;
    jsMsgMetaData_Destroy(md);
    bool keep = natsMsg_GetDataLength(msg) == 1 && natsMsg_GetData(msg)[0] == '3';
    pthread_mutex_lock(&rx->mu);
    if (rx->n < 16)
        snprintf(rx->seen[rx->n], sizeof rx->seen[0], "%.*s", natsMsg_GetDataLength(msg),
                 natsMsg_GetData(msg));
    rx->n++;
    if (!meta_ok)
        rx->meta_ok = false;
    if (keep)
        rx->kept = msg;
    pthread_mutex_unlock(&rx->mu);
    if (!keep) {
        natsMsg_Ack(msg, NULL);
        natsMsg_Destroy(msg);
    }
    nd_integ_waiter_bump(&rx->w);
}

Test(integ_cjscons, push_async_manual_ack)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "AS", "as.>");
    pub_n(&e, "as", 5, 1);

    async_rx_t rx;
    memset(&rx, 0, sizeof rx);
    nd_integ_waiter_init(&rx.w);
    pthread_mutex_init(&rx.mu, NULL);
    rx.meta_ok = true;

    /* Manual acks: the handler acks all but "3", so the library must not ack on return. */
    jsSubOptions so;
    OK(jsSubOptions_Init(&so));
    so.Config.Durable = "A";
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.AckWait = 60 * SEC_NS;
    so.ManualAck = true;
    natsSubscription *sub = NULL;
    OK(js_Subscribe(&sub, e.js, "as.>", on_msg, &rx, NULL, &so, &jerr));
    cr_assert(nd_integ_waiter_wait(&rx.w, 5, ND_INTEG_TIMEOUT_MS) == 5, "%d messages",
              nd_integ_waiter_get(&rx.w));
    pthread_mutex_lock(&rx.mu);
    for (int i = 0; i < 5; i++) {
        char want[8];
        snprintf(want, sizeof want, "%d", i + 1);
        cr_assert_str_eq(rx.seen[i], want);
    }
    cr_assert(rx.meta_ok);
    natsMsg *kept = rx.kept;
    pthread_mutex_unlock(&rx.mu);
    cr_assert(kept != NULL);

    /* Only 3 awaits its ack; the floor stays below it. */
    expect_ci_eventually(&e, "AS", "A", .num_pending = 0, .num_ack_pending = 1,
                         .num_redelivered = 0, .dlv_cons = 5, .dlv_stream = 5, .ack_cons = 2,
                         .ack_stream = 2);
    OK(natsMsg_AckSync(kept, NULL, &jerr));
    natsMsg_Destroy(kept);
    expect_ci(&e, "AS", "A", .num_pending = 0, .num_ack_pending = 0, .num_redelivered = 0,
              .dlv_cons = 5, .dlv_stream = 5, .ack_cons = 5, .ack_stream = 5);

    /* A live message reaches the handler too. */
    pub(&e, "as.6", "6", 6);
    cr_assert(nd_integ_waiter_wait(&rx.w, 6, ND_INTEG_TIMEOUT_MS) == 6);
    pthread_mutex_lock(&rx.mu);
    cr_assert_str_eq(rx.seen[5], "6");
    pthread_mutex_unlock(&rx.mu);
    expect_ci_eventually(&e, "AS", "A", .num_pending = 0, .num_ack_pending = 0,
                         .num_redelivered = 0, .dlv_cons = 6, .dlv_stream = 6, .ack_cons = 6,
                         .ack_stream = 6);

    OK(natsSubscription_Unsubscribe(sub));
    natsSubscription_Destroy(sub);
    pthread_mutex_destroy(&rx.mu);
    nd_integ_waiter_destroy(&rx.w);
    cjs_down(&e);
}

/* What one queue member saw. */
typedef struct queue_rx {
    nd_integ_waiter_t *w; /* shared by the members */
    pthread_mutex_t *mu;
    int *hits; /* per message, 1..N: how many times it was delivered */
    int n;     /* this member's count */
} queue_rx_t;

static void
on_queue_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    queue_rx_t *q = closure;
    int i = atoi(natsMsg_GetData(msg)); /* the payload is NUL-terminated by the library */
    pthread_mutex_lock(q->mu);
    if (i >= 1 && i <= 40)
        q->hits[i]++;
    q->n++;
    pthread_mutex_unlock(q->mu);
    /* Auto ack: the library acks when the handler returns. */
    natsMsg_Destroy(msg);
    nd_integ_waiter_bump(q->w);
}

Test(integ_cjscons, queue_subscribe_spreads)
{
    enum { N = 40 };
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "QS", "qs.>");

    nd_integ_waiter_t w;
    nd_integ_waiter_init(&w);
    pthread_mutex_t mu;
    pthread_mutex_init(&mu, NULL);
    int hits[N + 1] = {0};
    queue_rx_t qa = {&w, &mu, hits, 0}, qb = {&w, &mu, hits, 0};

    /* Two members of queue "workers" share one durable consumer named after the queue (nats.c
     * 3.4 has no js_QueueSubscribe: the queue is a subscribe option). */
    jsSubOptions so;
    OK(jsSubOptions_Init(&so));
    so.Queue = "workers";
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.AckWait = 60 * SEC_NS;
    natsSubscription *sa = NULL, *sb = NULL;
    OK(js_Subscribe(&sa, e.js, "qs.>", on_queue_msg, &qa, NULL, &so, &jerr));
    OK(js_Subscribe(&sb, e.js, "qs.>", on_queue_msg, &qb, NULL, &so, &jerr));
    jsConsumerInfo *ci = NULL;
    OK(js_GetConsumerInfo(&ci, e.js, "QS", "workers", NULL, &jerr));
    cr_assert(ci->Config->DeliverGroup != NULL);
    cr_assert_str_eq(ci->Config->DeliverGroup, "workers");
    jsConsumerInfo_Destroy(ci);

    pub_n(&e, "qs", N, 1);
    cr_assert(nd_integ_waiter_wait(&w, N, ND_INTEG_TIMEOUT_MS) == N, "%d messages",
              nd_integ_waiter_get(&w));
    /* Each message exactly once in all, and both members had a share (the server picks a
     * member at random per message: both missing out is a 2^-39 chance). */
    pthread_mutex_lock(&mu);
    for (int i = 1; i <= N; i++)
        cr_assert(hits[i] == 1, "message %d delivered %d times", i, hits[i]);
    cr_assert(qa.n + qb.n == N && qa.n > 0 && qb.n > 0, "members got %d and %d", qa.n, qb.n);
    pthread_mutex_unlock(&mu);
    /* The library acked each after its handler. */
    expect_ci_eventually(&e, "QS", "workers", .num_pending = 0, .num_ack_pending = 0,
                         .num_redelivered = 0, .dlv_cons = N, .dlv_stream = N, .ack_cons = N,
                         .ack_stream = N);

    natsSubscription_Destroy(sa);
    natsSubscription_Destroy(sb);
    pthread_mutex_destroy(&mu);
    nd_integ_waiter_destroy(&w);
    cjs_down(&e);
}

Test(integ_cjscons, ordered_consumer)
{
    enum { N = 30 };
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "OC", "oc.>");
    pub_n(&e, "oc", N / 2, 1);

    /* An ordered consumer: ephemeral, no acks, every message once and in stream order. */
    jsSubOptions so;
    OK(jsSubOptions_Init(&so));
    so.Ordered = true;
    natsSubscription *sub = NULL;
    OK(js_SubscribeSync(&sub, e.js, "oc.>", NULL, &so, &jerr));
    for (int i = 1; i <= N; i++) {
        if (i == N / 2 + 1) /* the rest is published live */
            for (int j = i; j <= N; j++) {
                char subj[32], data[16];
                snprintf(subj, sizeof subj, "oc.%d", j);
                snprintf(data, sizeof data, "%d", j);
                pub(&e, subj, data, (uint64_t)j);
            }
        char want[16];
        snprintf(want, sizeof want, "%d", i);
        natsMsg *m = next_msg(sub, want);
        jsMsgMetaData *md = NULL;
        OK(natsMsg_GetMetaData(&md, m));
        cr_assert(md->Sequence.Stream == (uint64_t)i && md->Sequence.Consumer == (uint64_t)i &&
                      md->NumDelivered == 1,
                  "message %d: stream seq %llu consumer seq %llu delivered %llu", i,
                  (unsigned long long)md->Sequence.Stream,
                  (unsigned long long)md->Sequence.Consumer, (unsigned long long)md->NumDelivered);
        cr_assert_str_eq(md->Stream, "OC");
        jsMsgMetaData_Destroy(md);
        /* No ack policy: acking is not needed (and the server ignores it). */
        natsMsg_Destroy(m);
    }
    expect_no_msg(sub);

    /* The consumer the library made has no acks and delivers everything. */
    jsConsumerInfo *ci = NULL;
    OK(natsSubscription_GetConsumerInfo(&ci, sub, NULL, &jerr));
    cr_assert(ci->Config->AckPolicy == js_AckNone);
    cr_assert(ci->Config->FlowControl);
    cr_assert(ci->Config->Heartbeat > 0);
    cr_assert(ci->Config->Durable == NULL || ci->Config->Durable[0] == '\0');
    cr_assert(ci->Delivered.Stream == N && ci->NumPending == 0 && ci->NumAckPending == 0,
              "delivered %llu pending %llu ack pending %lld",
              (unsigned long long)ci->Delivered.Stream, (unsigned long long)ci->NumPending,
              (long long)ci->NumAckPending);
    jsConsumerInfo_Destroy(ci);
    OK(natsSubscription_Unsubscribe(sub));
    natsSubscription_Destroy(sub);
    cjs_down(&e);
}

/* ---- pull consumers ------------------------------------------------------------------------ */

/* Checks that a fetched list holds the messages with data first..first+n-1, in order. */
static void
expect_list(natsMsgList *l, int first, int n)
{
    cr_assert(l->Count == n, "fetched %d messages, want %d", l->Count, n);
    for (int i = 0; i < n; i++) {
        char want[16];
        snprintf(want, sizeof want, "%d", first + i);
        expect_data(l->Msgs[i], want);
    }
}

Test(integ_cjscons, pull_fetch)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "PL", "pl.>");
    pub_n(&e, "pl", 5, 1);

    natsSubscription *sub = NULL;
    jsSubOptions so;
    OK(jsSubOptions_Init(&so));
    so.Config.AckWait = 60 * SEC_NS;
    OK(js_PullSubscribe(&sub, e.js, "pl.>", "P", NULL, &so, &jerr));

    /* A batch smaller than what is there: exactly the batch. */
    natsMsgList l = {0};
    OK(natsSubscription_Fetch(&l, sub, 3, ND_INTEG_TIMEOUT_MS, &jerr));
    expect_list(&l, 1, 3);
    expect_meta(l.Msgs[0], "PL", "P", 1, 1, 1, 4);
    expect_meta(l.Msgs[2], "PL", "P", 3, 3, 1, 2);
    expect_ci(&e, "PL", "P", .num_pending = 2, .num_ack_pending = 3, .num_redelivered = 0,
              .dlv_cons = 3, .dlv_stream = 3, .ack_cons = 0, .ack_stream = 0);
    OK(natsMsg_Ack(l.Msgs[0], NULL));
    /* 2 is refused: it comes first in the next fetch. */
    OK(natsMsg_Nak(l.Msgs[1], NULL));
    OK(natsMsg_AckSync(l.Msgs[2], NULL, &jerr));
    natsMsgList_Destroy(&l);

    /* A batch larger than what is there: what there is, without waiting out the timeout. */
    OK(natsSubscription_Fetch(&l, sub, 10, ND_INTEG_TIMEOUT_MS, &jerr));
    cr_assert(l.Count == 3, "fetched %d", l.Count);
    expect_data(l.Msgs[0], "2");
    expect_meta(l.Msgs[0], "PL", "P", 2, 4, 2, 2);
    expect_data(l.Msgs[1], "4");
    expect_meta(l.Msgs[1], "PL", "P", 4, 5, 1, 1);
    expect_data(l.Msgs[2], "5");
    expect_meta(l.Msgs[2], "PL", "P", 5, 6, 1, 0);
    expect_ci(&e, "PL", "P", .num_pending = 0, .num_ack_pending = 3, .num_redelivered = 1,
              .dlv_cons = 6, .dlv_stream = 5, .ack_cons = 1, .ack_stream = 1);
    for (int i = 0; i < l.Count; i++)
        OK(natsMsg_AckSync(l.Msgs[i], NULL, &jerr));
    natsMsgList_Destroy(&l);
    expect_ci(&e, "PL", "P", .num_pending = 0, .num_ack_pending = 0, .num_redelivered = 0,
              .dlv_cons = 6, .dlv_stream = 5, .ack_cons = 6, .ack_stream = 5);

    /* Nothing there: a timeout, with one message wanted and with many. */
    FAILS(natsSubscription_Fetch(&l, sub, 1, QUIET_MS, &jerr), NATS_TIMEOUT);
    cr_assert(l.Count == 0);
    FAILS(natsSubscription_Fetch(&l, sub, 5, QUIET_MS, &jerr), NATS_TIMEOUT);
    cr_assert(l.Count == 0);

    /* A message published while a fetch waits completes it. */
    pub(&e, "pl.6", "6", 6);
    OK(natsSubscription_Fetch(&l, sub, 1, ND_INTEG_TIMEOUT_MS, &jerr));
    expect_list(&l, 6, 1);
    OK(natsMsg_AckSync(l.Msgs[0], NULL, &jerr));
    natsMsgList_Destroy(&l);

    /* The durable outlives the subscription when destroyed without unsubscribing. */
    natsSubscription_Destroy(sub);
    jsConsumerInfo *ci = NULL;
    OK(js_GetConsumerInfo(&ci, e.js, "PL", "P", NULL, &jerr));
    cr_assert(ci->Config->DeliverSubject == NULL);
    cr_assert(ci->Config->AckPolicy == js_AckExplicit);
    jsConsumerInfo_Destroy(ci);
    cjs_down(&e);
}

Test(integ_cjscons, pull_fetch_request)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "FR", "fr.>");
    /* Five messages of 1000 bytes each (their data starts with the index). */
    char big[1001];
    for (int i = 1; i <= 5; i++) {
        memset(big, 'x', 1000);
        big[1000] = '\0';
        big[0] = (char)('0' + i);
        char subj[16];
        snprintf(subj, sizeof subj, "fr.%d", i);
        pub(&e, subj, big, (uint64_t)i);
    }

    natsSubscription *sub = NULL;
    OK(js_PullSubscribe(&sub, e.js, "fr.>", "F", NULL, NULL, &jerr));
    natsMsgList l = {0};
    jsFetchRequest fr;

    /* MaxBytes: room for two messages (each is its data plus subject and reply), not three. */
    OK(jsFetchRequest_Init(&fr));
    fr.Batch = 10;
    fr.MaxBytes = 2500;
    fr.Expires = (int64_t)ND_INTEG_TIMEOUT_MS * 1000 * 1000;
    OK(natsSubscription_FetchRequest(&l, sub, &fr));
    cr_assert(l.Count == 2, "fetched %d", l.Count);
    cr_assert(natsMsg_GetData(l.Msgs[0])[0] == '1' && natsMsg_GetData(l.Msgs[1])[0] == '2');
    cr_assert(natsMsg_GetDataLength(l.Msgs[1]) == 1000);
    for (int i = 0; i < l.Count; i++)
        OK(natsMsg_AckSync(l.Msgs[i], NULL, &jerr));
    natsMsgList_Destroy(&l);

    /* NoWait: what is there now (three), then nothing at all. */
    OK(jsFetchRequest_Init(&fr));
    fr.Batch = 10;
    fr.NoWait = true;
    fr.Expires = (int64_t)ND_INTEG_TIMEOUT_MS * 1000 * 1000;
    OK(natsSubscription_FetchRequest(&l, sub, &fr));
    cr_assert(l.Count == 3, "fetched %d", l.Count);
    for (int i = 0; i < l.Count; i++) {
        cr_assert(natsMsg_GetData(l.Msgs[i])[0] == (char)('3' + i));
        OK(natsMsg_AckSync(l.Msgs[i], NULL, &jerr));
    }
    natsMsgList_Destroy(&l);
    /* (With nothing received, nats.c 3.4 waits out Expires even after the server's 404, so
     * the request expires soon.) */
    fr.Expires = (int64_t)QUIET_MS * 1000 * 1000;
    FAILS(natsSubscription_FetchRequest(&l, sub, &fr), NATS_TIMEOUT);
    cr_assert(l.Count == 0);

    /* Expires: the server ends the request when it expires, with nothing there. */
    OK(jsFetchRequest_Init(&fr));
    fr.Batch = 5;
    fr.Expires = (int64_t)QUIET_MS * 1000 * 1000;
    FAILS(natsSubscription_FetchRequest(&l, sub, &fr), NATS_TIMEOUT);
    cr_assert(l.Count == 0);

    /* A batch of one that arrives before the request expires. */
    pub(&e, "fr.6", "6", 6);
    fr.Batch = 1;
    fr.Expires = (int64_t)ND_INTEG_TIMEOUT_MS * 1000 * 1000;
    OK(natsSubscription_FetchRequest(&l, sub, &fr));
    expect_list(&l, 6, 1);
    OK(natsMsg_AckSync(l.Msgs[0], NULL, &jerr));
    natsMsgList_Destroy(&l);
    expect_ci(&e, "FR", "F", .num_pending = 0, .num_ack_pending = 0, .num_redelivered = 0,
              .dlv_cons = 6, .dlv_stream = 6, .ack_cons = 6, .ack_stream = 6);

    OK(natsSubscription_Unsubscribe(sub));
    natsSubscription_Destroy(sub);
    cjs_down(&e);
}

/* ---- consumer management ------------------------------------------------------------------- */

Test(integ_cjscons, consumer_add_info_update_delete_list)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    add_stream(&e, "CM", "cm.>");
    pub(&e, "cm.a", "a1", 1);
    pub(&e, "cm.b", "b1", 2);
    pub(&e, "cm.a", "a2", 3);

    /* A durable pull consumer on one subject. */
    jsConsumerConfig cc;
    OK(jsConsumerConfig_Init(&cc));
    cc.Durable = "C1";
    cc.Description = "first";
    cc.AckPolicy = js_AckExplicit;
    cc.FilterSubject = "cm.a";
    cc.AckWait = 60 * SEC_NS;
    cc.MaxAckPending = 100;
    jsConsumerInfo *ci = NULL;
    OK(js_AddConsumer(&ci, e.js, "CM", &cc, NULL, &jerr));
    cr_assert(jerr == 0);
    cr_assert_str_eq(ci->Stream, "CM");
    cr_assert_str_eq(ci->Name, "C1");
    cr_assert_str_eq(ci->Config->Durable, "C1");
    cr_assert_str_eq(ci->Config->Description, "first");
    cr_assert_str_eq(ci->Config->FilterSubject, "cm.a");
    cr_assert(ci->Config->AckPolicy == js_AckExplicit);
    cr_assert(ci->Config->DeliverPolicy == js_DeliverAll);
    cr_assert(ci->Config->AckWait == 60 * SEC_NS);
    cr_assert(ci->Config->MaxAckPending == 100);
    cr_assert(ci->Config->ReplayPolicy == js_ReplayInstant);
    cr_assert(ci->Created > 0);
    /* Only cm.a's two messages count. */
    cr_assert(ci->NumPending == 2, "pending %llu", (unsigned long long)ci->NumPending);
    cr_assert(ci->NumAckPending == 0 && ci->Delivered.Stream == 0 && ci->AckFloor.Stream == 0);
    jsConsumerInfo_Destroy(ci);

    /* The same config again is accepted; one that changes what cannot change is not. */
    ci = NULL;
    OK(js_AddConsumer(&ci, e.js, "CM", &cc, NULL, &jerr));
    cr_assert_str_eq(ci->Name, "C1");
    jsConsumerInfo_Destroy(ci);
    cc.AckPolicy = js_AckAll;
    JS_FAILS(js_AddConsumer(NULL, e.js, "CM", &cc, NULL, &jerr), NATS_ERR, JSConsumerCreateErr);
    expect_last_error("ack policy can not be updated");
    cc.AckPolicy = js_AckExplicit;

    /* Counters through a pull: a1 and a2 delivered; a1 refused, a2 acked (the AckSync is the
     * barrier behind the Nak); then a1 again, acked. */
    natsSubscription *sub = NULL;
    jsSubOptions so;
    OK(jsSubOptions_Init(&so));
    so.Stream = "CM";
    so.Consumer = "C1";
    OK(js_PullSubscribe(&sub, e.js, "cm.a", "C1", NULL, &so, &jerr));
    natsMsgList l = {0};
    OK(natsSubscription_Fetch(&l, sub, 2, ND_INTEG_TIMEOUT_MS, &jerr));
    cr_assert(l.Count == 2, "fetched %d", l.Count);
    expect_data(l.Msgs[0], "a1");
    expect_meta(l.Msgs[0], "CM", "C1", 1, 1, 1, 1);
    expect_data(l.Msgs[1], "a2");
    expect_meta(l.Msgs[1], "CM", "C1", 3, 2, 1, 0);
    expect_ci(&e, "CM", "C1", .num_pending = 0, .num_ack_pending = 2, .num_redelivered = 0,
              .dlv_cons = 2, .dlv_stream = 3, .ack_cons = 0, .ack_stream = 0);
    OK(natsMsg_Nak(l.Msgs[0], NULL));
    /* Acking the newer one first leaves the floor below the older one. */
    OK(natsMsg_AckSync(l.Msgs[1], NULL, &jerr));
    expect_ci(&e, "CM", "C1", .num_pending = 0, .num_ack_pending = 1, .num_redelivered = 0,
              .dlv_cons = 2, .dlv_stream = 3, .ack_cons = 0, .ack_stream = 0);
    natsMsgList_Destroy(&l);
    OK(natsSubscription_Fetch(&l, sub, 1, ND_INTEG_TIMEOUT_MS, &jerr));
    cr_assert(l.Count == 1, "fetched %d", l.Count);
    expect_data(l.Msgs[0], "a1");
    expect_meta(l.Msgs[0], "CM", "C1", 1, 3, 2, 0);
    expect_ci(&e, "CM", "C1", .num_pending = 0, .num_ack_pending = 1, .num_redelivered = 1,
              .dlv_cons = 3, .dlv_stream = 3, .ack_cons = 0, .ack_stream = 0);
    OK(natsMsg_AckSync(l.Msgs[0], NULL, &jerr));
    expect_ci(&e, "CM", "C1", .num_pending = 0, .num_ack_pending = 0, .num_redelivered = 0,
              .dlv_cons = 3, .dlv_stream = 3, .ack_cons = 3, .ack_stream = 3);
    natsMsgList_Destroy(&l);
    /* A new message on the filter counts as pending; one off the filter does not. */
    pub(&e, "cm.a", "a3", 4);
    pub(&e, "cm.b", "b2", 5);
    expect_ci(&e, "CM", "C1", .num_pending = 1, .num_ack_pending = 0, .num_redelivered = 0,
              .dlv_cons = 3, .dlv_stream = 3, .ack_cons = 3, .ack_stream = 3);
    natsSubscription_Destroy(sub);

    /* Update what may change: the description and the ack limits. */
    cc.Description = "updated";
    cc.MaxAckPending = 5;
    cc.AckWait = 30 * SEC_NS;
    ci = NULL;
    OK(js_UpdateConsumer(&ci, e.js, "CM", &cc, NULL, &jerr));
    cr_assert_str_eq(ci->Config->Description, "updated");
    cr_assert(ci->Config->MaxAckPending == 5);
    cr_assert(ci->Config->AckWait == 30 * SEC_NS);
    cr_assert_str_eq(ci->Config->FilterSubject, "cm.a");
    /* The state is kept. */
    cr_assert(ci->Delivered.Stream == 3 && ci->AckFloor.Stream == 3 && ci->NumPending == 1);
    jsConsumerInfo_Destroy(ci);
    ci = NULL;
    OK(js_GetConsumerInfo(&ci, e.js, "CM", "C1", NULL, &jerr));
    cr_assert_str_eq(ci->Config->Description, "updated");
    cr_assert(ci->Config->MaxAckPending == 5);
    jsConsumerInfo_Destroy(ci);
    /* What may not change: the ack policy. */
    cc.AckPolicy = js_AckAll;
    JS_FAILS(js_UpdateConsumer(NULL, e.js, "CM", &cc, NULL, &jerr), NATS_ERR, JSConsumerCreateErr);
    cc.AckPolicy = js_AckExplicit;

    /* A second consumer: a durable push consumer from the first message of cm.b. */
    jsConsumerConfig pc;
    OK(jsConsumerConfig_Init(&pc));
    pc.Durable = "C2";
    pc.DeliverSubject = "deliver.c2";
    pc.AckPolicy = js_AckExplicit;
    pc.FilterSubject = "cm.b";
    ci = NULL;
    OK(js_AddConsumer(&ci, e.js, "CM", &pc, NULL, &jerr));
    cr_assert_str_eq(ci->Config->DeliverSubject, "deliver.c2");
    cr_assert(ci->NumPending == 2 && !ci->PushBound);
    jsConsumerInfo_Destroy(ci);

    /* Listing: both, by name and with infos. */
    jsConsumerNamesList *names = NULL;
    OK(js_ConsumerNames(&names, e.js, "CM", NULL, &jerr));
    cr_assert(names->Count == 2, "%d names", names->Count);
    bool c1 = false, c2 = false;
    for (int i = 0; i < names->Count; i++) {
        if (strcmp(names->List[i], "C1") == 0)
            c1 = true;
        else if (strcmp(names->List[i], "C2") == 0)
            c2 = true;
        else
            cr_assert_fail("name %s", names->List[i]);
    }
    cr_assert(c1 && c2);
    jsConsumerNamesList_Destroy(names);
    jsConsumerInfoList *infos = NULL;
    OK(js_Consumers(&infos, e.js, "CM", NULL, &jerr));
    cr_assert(infos->Count == 2, "%d infos", infos->Count);
    for (int i = 0; i < infos->Count; i++) {
        jsConsumerInfo *x = infos->List[i];
        cr_assert_str_eq(x->Stream, "CM");
        if (strcmp(x->Name, "C1") == 0)
            cr_assert(x->Delivered.Stream == 3 && x->NumPending == 1 &&
                      x->Config->MaxAckPending == 5);
        else
            cr_assert(strcmp(x->Name, "C2") == 0 && x->NumPending == 2 && x->Delivered.Stream == 0);
    }
    jsConsumerInfoList_Destroy(infos);

    /* Unknown consumers and streams. */
    JS_FAILS(js_GetConsumerInfo(&ci, e.js, "CM", "NOPE", NULL, &jerr), NATS_NOT_FOUND,
             JSConsumerNotFoundErr);
    JS_FAILS(js_DeleteConsumer(e.js, "CM", "NOPE", NULL, &jerr), NATS_NOT_FOUND,
             JSConsumerNotFoundErr);
    JS_FAILS(js_GetConsumerInfo(&ci, e.js, "NOPE", "C1", NULL, &jerr), NATS_ERR,
             JSStreamNotFoundErr);
    JS_FAILS(js_AddConsumer(NULL, e.js, "NOPE", &cc, NULL, &jerr), NATS_ERR, JSStreamNotFoundErr);

    /* Delete: gone from info and the listing. */
    OK(js_DeleteConsumer(e.js, "CM", "C1", NULL, &jerr));
    JS_FAILS(js_GetConsumerInfo(&ci, e.js, "CM", "C1", NULL, &jerr), NATS_NOT_FOUND,
             JSConsumerNotFoundErr);
    OK(js_ConsumerNames(&names, e.js, "CM", NULL, &jerr));
    cr_assert(names->Count == 1);
    cr_assert_str_eq(names->List[0], "C2");
    jsConsumerNamesList_Destroy(names);
    OK(js_DeleteConsumer(e.js, "CM", "C2", NULL, &jerr));
    /* No consumers: the library reports not found. */
    JS_FAILS(js_ConsumerNames(&names, e.js, "CM", NULL, &jerr), NATS_NOT_FOUND, 0);
    cjs_down(&e);
}

/* ---- the key-value store ------------------------------------------------------------------- */

/* Checks an entry: key, value, revision and operation. Destroys it. */
static void
expect_entry(kvEntry *en, const char *key, const char *value, uint64_t rev, kvOperation op)
{
    cr_assert(en != NULL, "no entry, want %s@%llu", key, (unsigned long long)rev);
    cr_assert_str_eq(kvEntry_Key(en), key);
    cr_assert(kvEntry_Revision(en) == rev && kvEntry_Operation(en) == op,
              "%s: revision %llu op %d, want %llu %d", key,
              (unsigned long long)kvEntry_Revision(en), (int)kvEntry_Operation(en),
              (unsigned long long)rev, (int)op);
    if (value != NULL)
        cr_assert(kvEntry_ValueLen(en) == (int)strlen(value) &&
                      memcmp(kvEntry_Value(en), value, strlen(value)) == 0,
                  "%s: value \"%.*s\", want \"%s\"", key, kvEntry_ValueLen(en),
                  (const char *)kvEntry_Value(en), value);
    else
        cr_assert(kvEntry_ValueLen(en) == 0);
    cr_assert(kvEntry_Created(en) > 0);
    kvEntry_Destroy(en);
}

/* Gets key and checks it as expect_entry does. */
static void
expect_get(kvStore *kv, const char *key, const char *value, uint64_t rev)
{
    kvEntry *en = NULL;
    OK(kvStore_Get(&en, kv, key));
    cr_assert_str_eq(kvEntry_Bucket(en), kvStore_Bucket(kv));
    expect_entry(en, key, value, rev, kvOp_Put);
}

Test(integ_cjscons, kv_crud_history_keys_status)
{
    cjs_env_t e;
    cjs_up(&e);
    kvConfig kc;
    OK(kvConfig_Init(&kc));
    kc.Bucket = "B";
    kc.History = 5;
    kvStore *kv = NULL;
    OK(js_CreateKeyValue(&kv, e.js, &kc));
    cr_assert_str_eq(kvStore_Bucket(kv), "B");
    /* The bucket is a stream named KV_<bucket>. */
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    OK(js_GetStreamInfo(&si, e.js, "KV_B", NULL, &jerr));
    cr_assert(si->Config->SubjectsLen == 1);
    cr_assert_str_eq(si->Config->Subjects[0], "$KV.B.>");
    cr_assert(si->Config->MaxMsgsPerSubject == 5);
    cr_assert(si->Config->AllowRollup && si->Config->DenyDelete);
    jsStreamInfo_Destroy(si);

    kvEntry *en = NULL;
    FAILS(kvStore_Get(&en, kv, "k1"), NATS_NOT_FOUND);

    uint64_t rev = 0;
    OK(kvStore_PutString(&rev, kv, "k1", "v1"));
    cr_assert(rev == 1);
    expect_get(kv, "k1", "v1", 1);

    /* Create only where there is no value. */
    rev = 0;
    FAILS(kvStore_CreateString(&rev, kv, "k1", "again"), NATS_ERR);
    expect_last_error("wrong last sequence: 1");
    cr_assert(rev == 0);
    OK(kvStore_CreateString(&rev, kv, "k2", "v2"));
    cr_assert(rev == 2);

    /* Update only from the latest revision. */
    OK(kvStore_UpdateString(&rev, kv, "k1", "v1b", 1));
    cr_assert(rev == 3);
    FAILS(kvStore_UpdateString(&rev, kv, "k1", "stale", 1), NATS_ERR);
    expect_last_error("wrong last sequence: 3");
    expect_get(kv, "k1", "v1b", 3);
    OK(kvStore_GetRevision(&en, kv, "k1", 1));
    expect_entry(en, "k1", "v1", 1, kvOp_Put);

    /* Delete leaves a marker: the key reads as absent, and Create works on it again. */
    OK(kvStore_Delete(kv, "k2"));
    FAILS(kvStore_Get(&en, kv, "k2"), NATS_NOT_FOUND);
    OK(kvStore_CreateString(&rev, kv, "k2", "v2b"));
    cr_assert(rev == 5, "revision %llu", (unsigned long long)rev);
    expect_get(kv, "k2", "v2b", 5);

    /* History: every revision of a key, oldest first, markers included. */
    kvEntryList hl = {0};
    OK(kvStore_History(&hl, kv, "k2", NULL));
    cr_assert(hl.Count == 3, "%d entries", hl.Count);
    cr_assert(kvEntry_Revision(hl.Entries[0]) == 2 && kvEntry_Operation(hl.Entries[0]) == kvOp_Put);
    cr_assert(kvEntry_Revision(hl.Entries[1]) == 4 &&
              kvEntry_Operation(hl.Entries[1]) == kvOp_Delete);
    cr_assert(kvEntry_Revision(hl.Entries[2]) == 5 && kvEntry_Operation(hl.Entries[2]) == kvOp_Put);
    kvEntryList_Destroy(&hl);

    /* Purge removes the key's earlier revisions and leaves one purge marker. */
    OK(kvStore_PutString(&rev, kv, "k1", "v1c"));
    cr_assert(rev == 6);
    OK(kvStore_Purge(kv, "k1", NULL));
    FAILS(kvStore_Get(&en, kv, "k1"), NATS_NOT_FOUND);
    OK(kvStore_History(&hl, kv, "k1", NULL));
    cr_assert(hl.Count == 1, "%d entries", hl.Count);
    expect_entry(hl.Entries[0], "k1", NULL, 7, kvOp_Purge);
    hl.Entries[0] = NULL;
    kvEntryList_Destroy(&hl);
    FAILS(kvStore_History(&hl, kv, "none", NULL), NATS_NOT_FOUND);

    /* Keys: those with a value now. */
    OK(kvStore_PutString(&rev, kv, "k3", "v3"));
    cr_assert(rev == 8);
    kvKeysList keys = {0};
    OK(kvStore_Keys(&keys, kv, NULL));
    cr_assert(keys.Count == 2, "%d keys", keys.Count);
    bool k2 = false, k3 = false;
    for (int i = 0; i < keys.Count; i++) {
        if (strcmp(keys.Keys[i], "k2") == 0)
            k2 = true;
        else if (strcmp(keys.Keys[i], "k3") == 0)
            k3 = true;
        else
            cr_assert_fail("key %s", keys.Keys[i]);
    }
    cr_assert(k2 && k3);
    kvKeysList_Destroy(&keys);

    /* Status: k2's three revisions, k1's purge marker, k3. */
    kvStatus *st = NULL;
    OK(kvStore_Status(&st, kv));
    cr_assert_str_eq(kvStatus_Bucket(st), "B");
    cr_assert(kvStatus_Values(st) == 5, "values %llu", (unsigned long long)kvStatus_Values(st));
    cr_assert(kvStatus_History(st) == 5);
    cr_assert(kvStatus_TTL(st) == 0);
    cr_assert(kvStatus_Replicas(st) == 1);
    kvStatus_Destroy(st);

    /* Binding to the bucket by name; gone once deleted. */
    kvStore *kv2 = NULL;
    OK(js_KeyValue(&kv2, e.js, "B"));
    expect_get(kv2, "k3", "v3", 8);
    kvStore_Destroy(kv2);
    kvStore_Destroy(kv);
    OK(js_DeleteKeyValue(e.js, "B"));
    kv2 = NULL;
    FAILS(js_KeyValue(&kv2, e.js, "B"), NATS_NOT_FOUND);
    FAILS(js_DeleteKeyValue(e.js, "B"), NATS_NOT_FOUND);
    cjs_down(&e);
}

Test(integ_cjscons, kv_watch)
{
    cjs_env_t e;
    cjs_up(&e);
    kvConfig kc;
    OK(kvConfig_Init(&kc));
    kc.Bucket = "W";
    kc.History = 3;
    kvStore *kv = NULL;
    OK(js_CreateKeyValue(&kv, e.js, &kc));
    uint64_t rev = 0;
    OK(kvStore_PutString(&rev, kv, "a", "1"));
    OK(kvStore_PutString(&rev, kv, "b", "2"));
    OK(kvStore_PutString(&rev, kv, "a", "3"));
    cr_assert(rev == 3);

    /* All keys: the latest value of each, then the end-of-initial-values marker (NULL). */
    kvWatcher *w = NULL, *wa = NULL;
    OK(kvStore_WatchAll(&w, kv, NULL));
    kvEntry *en = NULL;
    OK(kvWatcher_Next(&en, w, ND_INTEG_TIMEOUT_MS));
    expect_entry(en, "b", "2", 2, kvOp_Put);
    OK(kvWatcher_Next(&en, w, ND_INTEG_TIMEOUT_MS));
    expect_entry(en, "a", "3", 3, kvOp_Put);
    en = (kvEntry *)1;
    OK(kvWatcher_Next(&en, w, ND_INTEG_TIMEOUT_MS));
    cr_assert(en == NULL, "no end-of-initial-values marker");

    /* One key, with its history. */
    kvWatchOptions wo;
    OK(kvWatchOptions_Init(&wo));
    wo.IncludeHistory = true;
    OK(kvStore_Watch(&wa, kv, "a", &wo));
    OK(kvWatcher_Next(&en, wa, ND_INTEG_TIMEOUT_MS));
    expect_entry(en, "a", "1", 1, kvOp_Put);
    OK(kvWatcher_Next(&en, wa, ND_INTEG_TIMEOUT_MS));
    expect_entry(en, "a", "3", 3, kvOp_Put);
    en = (kvEntry *)1;
    OK(kvWatcher_Next(&en, wa, ND_INTEG_TIMEOUT_MS));
    cr_assert(en == NULL);

    /* Live: an update, then a delete marker, in order; the key watcher sees only its key. */
    OK(kvStore_PutString(&rev, kv, "b", "4"));
    OK(kvStore_Delete(kv, "a"));
    OK(kvWatcher_Next(&en, w, ND_INTEG_TIMEOUT_MS));
    expect_entry(en, "b", "4", 4, kvOp_Put);
    OK(kvWatcher_Next(&en, w, ND_INTEG_TIMEOUT_MS));
    expect_entry(en, "a", NULL, 5, kvOp_Delete);
    OK(kvWatcher_Next(&en, wa, ND_INTEG_TIMEOUT_MS));
    expect_entry(en, "a", NULL, 5, kvOp_Delete);
    /* Nothing more. */
    en = NULL;
    FAILS(kvWatcher_Next(&en, w, QUIET_MS), NATS_TIMEOUT);
    FAILS(kvWatcher_Next(&en, wa, QUIET_MS), NATS_TIMEOUT);

    /* A watcher on an empty range: only the marker. */
    kvWatcher *wn = NULL;
    OK(kvStore_Watch(&wn, kv, "none.*", NULL));
    en = (kvEntry *)1;
    OK(kvWatcher_Next(&en, wn, ND_INTEG_TIMEOUT_MS));
    cr_assert(en == NULL);

    OK(kvWatcher_Stop(w));
    FAILS(kvWatcher_Next(&en, w, QUIET_MS), NATS_ILLEGAL_STATE);
    kvWatcher_Destroy(w);
    kvWatcher_Destroy(wa);
    kvWatcher_Destroy(wn);
    kvStore_Destroy(kv);
    cjs_down(&e);
}
