/* Integration tests of JetStream consumers over the raw protocol: the consumer API
 * ($JS.API.CONSUMER.*), pull requests (MSG.NEXT) and every status message they can end with, the
 * ack protocol on $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>, push
 * delivery (queue groups, idle heartbeats, flow control) and interest/workqueue retention.
 *
 * Every expectation was first checked against the reference nats-server 2.9.10
 * (`integ.jscons.reference` runs this binary with NATSD_TEST_SERVER=/usr/sbin/nats-server). natsd
 * answers as nats-server 2.10/2.11 where those differ from 2.9.10; the places that differ ask
 * nd_integ_is_reference() and say why:
 * - "invalid JSON" (10025): 2.9.10 says exactly that, 2.10+ append ": <decoder error>".
 * - The create request's "action" (2.10+): 10148 for a create that would change an existing
 *   consumer, 10149 for an update of a missing one. 2.9.10 ignores the field.
 * - An ack with a reply for a sequence the consumer never delivered: 2.9.10 answers it, 2.11 does
 *   not (processAckMsg returns false before the reply).
 * Consumer info is checked key by key (2.11 adds config keys such as "metadata" and
 * "priority_policy"), errors as whole JSON values.
 *
 * Synchronisation: an ack carrying a reply subject is answered (an empty message) only after the
 * ack took effect, so tests ack with a reply before reading state. Timing only enters where the
 * feature is time (ack_wait, delays, heartbeats, expiries), with short values and wide margins.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jscons_util.h"
#include "jsproto.h"

TestSuite(integ_jscons, .fini = nd_integ_cleanup, .timeout = 120);

typedef struct env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;
} env_t;

static void
up(env_t *e)
{
    memset(e, 0, sizeof *e);
    e->srv = js_server_start(&e->conf, NULL, NULL);
    e->c = js_conn_open(e->srv, API);
    ND_SEND(e->c, "SUB _P.> 2\r\nPING\r\n");
    ND_EXPECT(e->c, "PONG\r\n");
}

static void
down(env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- requests ----------------------------------------------------------------------------------
 */

/* The stream's state.messages. */
static long long
stream_msgs_at(const char *file, int line, nd_integ_conn_t *c, const char *name)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
    json_t *j = api_at(file, line, c, subj, "");
    long long n = jint_at(file, line, j, "state.messages");
    json_decref(j);
    return n;
}
#define stream_msgs(c, name) stream_msgs_at(__FILE__, __LINE__, (c), (name))

/* Creates a consumer: name NULL sends the legacy ephemeral CONSUMER.CREATE.<s>; legacy true sends
 * CONSUMER.DURABLE.CREATE.<s>.<name>. Fails on an error reply. Returns: the reply (owned). */
static json_t *
cons_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *name,
        bool legacy, const char *cfg)
{
    char subj[256], *body = NULL;
    if (name == NULL)
        snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.%s", s);
    else
        snprintf(subj, sizeof subj, "$JS.API.CONSUMER.%sCREATE.%s.%s", legacy ? "DURABLE." : "", s,
                 name);
    cr_assert(asprintf(&body, "{\"stream_name\":\"%s\",\"config\":%s}", s, cfg) > 0);
    json_t *j = api_at(file, line, c, subj, body);
    free(body);
    if (json_object_get(j, "error") != NULL) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "consumer %s: %s", name ? name : "(ephemeral)", d);
    }
    return j;
}
#define cons(c, s, name, cfg)                                                                      \
    json_decref(cons_at(__FILE__, __LINE__, (c), (s), (name), false, (cfg)))

/* Checks the consumer info's counters. */
static void
state_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *name,
         long long dcs, long long dss, long long acs, long long ass, long long pending,
         long long ack_pending, long long redelivered, long long waiting)
{
    json_t *j = info_at(file, line, c, s, name);
    char kv[8][64];
    snprintf(kv[0], 64, "delivered.consumer_seq=%lld", dcs);
    snprintf(kv[1], 64, "delivered.stream_seq=%lld", dss);
    snprintf(kv[2], 64, "ack_floor.consumer_seq=%lld", acs);
    snprintf(kv[3], 64, "ack_floor.stream_seq=%lld", ass);
    snprintf(kv[4], 64, "num_pending=%lld", pending);
    snprintf(kv[5], 64, "num_ack_pending=%lld", ack_pending);
    snprintf(kv[6], 64, "num_redelivered=%lld", redelivered);
    snprintf(kv[7], 64, "num_waiting=%lld", waiting);
    ints_at(file, line, j,
            (const char *const[]){kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], kv[6], kv[7], NULL});
    json_decref(j);
}
/* STATE(c, s, name, delivered cseq, sseq, ack floor cseq, sseq, num_pending, num_ack_pending,
 * num_redelivered, num_waiting) */
#define STATE(c, s, n, dcs, dss, acs, ass, p, ap, rd, w)                                           \
    state_at(__FILE__, __LINE__, (c), (s), (n), (dcs), (dss), (acs), (ass), (p), (ap), (rd), (w))

/* ---- pull requests and deliveries --------------------------------------------------------------
 */

/* Expects a delivery of data on its original subject subj through consumer s/n: the reply must be
 * $JS.ACK.<s>.<n>.<dc>.<sseq>.<dseq>.<ts>.<pending> with ts > 0 and the other tokens exact, and
 * there must be no headers. Returns: the ack subject (owned). */
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
    const char *ts = m.reply + pre, *dot = strchr(ts, '.');
    char *end = NULL;
    long long tsv = strtoll(ts, &end, 10);
    char tail[32];
    snprintf(tail, sizeof tail, ".%lld", pending);
    if (strncmp(m.reply, want, (size_t)pre) != 0 || dot == NULL || end != dot || tsv <= 0 ||
        strcmp(dot, tail) != 0)
        jfail(file, line, "ack subject %s, expected %s<ts>%s", m.reply, want, tail);
    char *r = strdup(m.reply);
    js_msg_free(&m);
    return r;
}
#define DELIVERY(c, subj, data, s, n, dc, sseq, dseq, pending)                                     \
    delivery_at(__FILE__, __LINE__, (c), (subj), (data), (s), (n), (dc), (sseq), (dseq), (pending))

/* Acks with body on the ack subject, with a reply (an empty message must come back on it, which
 * orders the ack before what follows) or without (reply NULL). Frees nothing. */
static void
ack_at(const char *file, int line, nd_integ_conn_t *c, const char *ack, const char *body,
       const char *reply)
{
    js_publish_at(file, line, c, ack, reply, NULL, body);
    if (reply != NULL)
        js_msg_free_ret(js_expect_msg_at(file, line, c, reply, NULL, ""));
}
#define ACK(c, ack, body, reply) ack_at(__FILE__, __LINE__, (c), (ack), (body), (reply))

/* ---- the consumer API --------------------------------------------------------------------------
 */

/* The fields every fresh pull consumer with ack_policy explicit reports. */
static void
check_fresh_pull(json_t *j, const char *type, const char *name, long long pending)
{
    cr_assert_str_eq(jstr(j, "type"), type);
    cr_assert_str_eq(jstr(j, "stream_name"), "S");
    cr_assert_str_eq(jstr(j, "name"), name);
    cr_assert(json_is_string(jget(j, "created")));
    cr_assert_str_eq(jstr(j, "config.deliver_policy"), "all");
    cr_assert_str_eq(jstr(j, "config.ack_policy"), "explicit");
    cr_assert_str_eq(jstr(j, "config.replay_policy"), "instant");
    INTS(j, "config.ack_wait=30000000000", "config.max_deliver=-1", "config.max_waiting=512",
         "config.max_ack_pending=1000", "delivered.consumer_seq=0", "delivered.stream_seq=0",
         "ack_floor.consumer_seq=0", "ack_floor.stream_seq=0", "num_ack_pending=0",
         "num_redelivered=0", "num_waiting=0");
    char p[64];
    snprintf(p, sizeof p, "num_pending=%lld", pending);
    INTS(j, p);
    cr_assert_null(jget(j, "config.deliver_subject"));
    cr_assert_null(jget(j, "config.filter_subject"));
    cr_assert_null(jget(j, "error"));
}

Test(integ_jscons, create_durable_legacy_and_ephemeral)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2);

    json_t *j = cons_at(__FILE__, __LINE__, e.c, "S", "D", false,
                        "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    check_fresh_pull(j, T_CREATE, "D", 2);
    cr_assert_str_eq(jstr(j, "config.durable_name"), "D");
    cr_assert_str_eq(jstr(j, "config.name"), "D");
    cr_assert_null(jget(j, "config.inactive_threshold"));
    char *created = strdup(jstr(j, "created"));
    json_decref(j);

    /* The same config again is not a change: the same consumer (same created time) comes back. */
    j = cons_at(__FILE__, __LINE__, e.c, "S", "D", false,
                "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    cr_assert_str_eq(jstr(j, "created"), created);
    json_decref(j);
    free(created);

    /* Legacy durable subject. */
    j = cons_at(__FILE__, __LINE__, e.c, "S", "D2", true,
                "{\"durable_name\":\"D2\",\"ack_policy\":\"explicit\"}");
    check_fresh_pull(j, T_CREATE, "D2", 2);
    cr_assert_str_eq(jstr(j, "config.durable_name"), "D2");
    json_decref(j);

    /* Legacy ephemeral: a generated name, inactive_threshold 5s by default, no durable name. */
    j = cons_at(__FILE__, __LINE__, e.c, "S", NULL, false, "{\"ack_policy\":\"explicit\"}");
    const char *eph = jstr(j, "name");
    check_fresh_pull(j, T_CREATE, eph, 2);
    cr_assert(strlen(eph) > 0 && strpbrk(eph, ".*> ") == NULL, "name %s", eph);
    cr_assert_null(jget(j, "config.durable_name"));
    INTS(j, "config.inactive_threshold=5000000000");
    char *ephn = strdup(eph);
    json_decref(j);

    /* Info says the same as the create reply. */
    j = info(e.c, "S", "D");
    check_fresh_pull(j, T_INFO, "D", 2);
    json_decref(j);
    j = info(e.c, "S", ephn);
    check_fresh_pull(j, T_INFO, ephn, 2);
    json_decref(j);
    free(ephn);

    /* The stream counts them. */
    j = api(e.c, "$JS.API.STREAM.INFO.S", "");
    INTS(j, "state.consumer_count=3");
    json_decref(j);
    down(&e);
}

Test(integ_jscons, names_list_paging_delete)
{
    env_t e;
    up(&e);
    stream_s(e.c, 1);
    cons(e.c, "S", "C1", "{\"durable_name\":\"C1\",\"ack_policy\":\"explicit\"}");
    cons(e.c, "S", "C3", "{\"durable_name\":\"C3\",\"ack_policy\":\"explicit\"}");
    cons(e.c, "S", "C2", "{\"durable_name\":\"C2\",\"ack_policy\":\"explicit\"}");

    json_t *j = api(e.c, "$JS.API.CONSUMER.NAMES.S", "");
    cr_assert_str_eq(jstr(j, "type"), T_NAMES);
    INTS(j, "total=3", "offset=0", "limit=1024");
    json_t *want = json_pack("[sss]", "C1", "C2", "C3");
    cr_assert(json_equal(jget(j, "consumers"), want), "names %s",
              json_dumps(jget(j, "consumers"), JSON_COMPACT));
    json_decref(want);
    json_decref(j);

    j = api(e.c, "$JS.API.CONSUMER.NAMES.S", "{\"offset\":1}");
    INTS(j, "total=3", "offset=1", "limit=1024");
    want = json_pack("[ss]", "C2", "C3");
    cr_assert(json_equal(jget(j, "consumers"), want), "names %s",
              json_dumps(jget(j, "consumers"), JSON_COMPACT));
    json_decref(want);
    json_decref(j);

    j = api(e.c, "$JS.API.CONSUMER.LIST.S", "");
    cr_assert_str_eq(jstr(j, "type"), T_LIST);
    INTS(j, "total=3", "offset=0", "limit=256");
    json_t *l = jget(j, "consumers");
    cr_assert(json_is_array(l) && json_array_size(l) == 3);
    for (size_t i = 0; i < 3; i++) {
        char n[4] = {'C', (char)('1' + i), 0};
        json_t *ci = json_array_get(l, i);
        cr_assert_str_eq(jstr(ci, "name"), n);
        cr_assert_str_eq(jstr(ci, "stream_name"), "S");
        INTS(ci, "num_pending=1", "config.max_waiting=512");
        cr_assert_null(jget(ci, "type"));
    }
    json_decref(j);

    j = api(e.c, "$JS.API.CONSUMER.LIST.S", "{\"offset\":2}");
    INTS(j, "total=3", "offset=2", "limit=256");
    l = jget(j, "consumers");
    cr_assert(json_is_array(l) && json_array_size(l) == 1);
    cr_assert_str_eq(jstr(json_array_get(l, 0), "name"), "C3");
    json_decref(j);

    js_publish(e.c, "$JS.API.CONSUMER.DELETE.S.C2", API, NULL, "");
    js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_DELETE "\",\"success\":true}");
    js_publish(e.c, "$JS.API.CONSUMER.DELETE.S.C1", API, NULL, "");
    js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_DELETE "\",\"success\":true}");
    API_ERR(e.c, "$JS.API.CONSUMER.DELETE.S.C1", "", T_DELETE, 404, 10014, "consumer not found");
    API_ERR(e.c, "$JS.API.CONSUMER.INFO.S.C2", "", T_INFO, 404, 10014, "consumer not found");
    API_ERR(e.c, "$JS.API.CONSUMER.INFO.NOPE.C3", "", T_INFO, 404, 10059, "stream not found");
    API_ERR(e.c, "$JS.API.CONSUMER.DELETE.NOPE.C3", "", T_DELETE, 404, 10059, "stream not found");

    j = api(e.c, "$JS.API.CONSUMER.NAMES.S", "");
    INTS(j, "total=1");
    want = json_pack("[s]", "C3");
    cr_assert(json_equal(jget(j, "consumers"), want));
    json_decref(want);
    json_decref(j);
    j = api(e.c, "$JS.API.STREAM.INFO.S", "");
    INTS(j, "state.consumer_count=1");
    json_decref(j);
    down(&e);
}

/* One create request that must fail. */
typedef struct bad_create {
    const char *subj, *body;
    int code, err;
    const char *desc;
} bad_create_t;

Test(integ_jscons, create_errors)
{
    env_t e;
    up(&e);
    stream_s(e.c, 0);
    static const bad_create_t cases[] = {
        {"$JS.API.CONSUMER.CREATE.NOPE.D",
         "{\"stream_name\":\"NOPE\",\"config\":{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}"
         "}",
         404, 10059, "stream not found"},
        {"$JS.API.CONSUMER.CREATE.S.P",
         "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"deliver_subject\":\"a.*\","
         "\"ack_policy\":\"explicit\"}}",
         400, 10079, "consumer deliver subject has wildcards"},
        {"$JS.API.CONSUMER.CREATE.S.P",
         "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"deliver_subject\":\"a.b\","
         "\"max_waiting\":10,\"ack_policy\":\"explicit\"}}",
         400, 10080, "consumer in push mode can not set max waiting"},
        {"$JS.API.CONSUMER.CREATE.S.P",
         "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"deliver_subject\":\"a.b\","
         "\"flow_control\":true,\"ack_policy\":\"explicit\"}}",
         400, 10108, "consumer with flow control also needs heartbeats"},
        {"$JS.API.CONSUMER.CREATE.S.P",
         "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"P\",\"deliver_subject\":\"a.b\","
         "\"idle_heartbeat\":1000,\"ack_policy\":\"explicit\"}}",
         400, 10083, "consumer idle heartbeat needs to be >= 100ms"},
        {"$JS.API.CONSUMER.CREATE.S",
         "{\"stream_name\":\"S\",\"config\":{\"name\":\"a.b\",\"ack_policy\":\"explicit\"}}", 400,
         10103, "durable name can not contain '.', '*', '>'"},
        {"$JS.API.CONSUMER.DURABLE.CREATE.S.a*",
         "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"a*\",\"ack_policy\":\"explicit\"}}",
         400, 10103, "durable name can not contain '.', '*', '>'"},
        {"$JS.API.CONSUMER.DURABLE.CREATE.S.ab",
         "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"a.b\",\"ack_policy\":\"explicit\"}"
         "}",
         400, 10017, "consumer name in subject does not match durable name in request"},
        {"$JS.API.CONSUMER.CREATE.S",
         "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}}",
         400, 10020, "consumer expected to be ephemeral but a durable name was set in request"},
        {"$JS.API.CONSUMER.CREATE.S.D",
         "{\"stream_name\":\"T\",\"config\":{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}}",
         400, 10056, "stream name in subject does not match request"},
        {"$JS.API.CONSUMER.CREATE.S.D", "{\"stream_name\":\"S\",\"config\":{\"durable_name\":", 400,
         10025, NULL},
        {"$JS.API.CONSUMER.CREATE.S.D", "", 400, 10025, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nd_integ_context("case %zu: %s %s", i, cases[i].subj, cases[i].body);
        API_ERR(e.c, cases[i].subj, cases[i].body, T_CREATE, cases[i].code, cases[i].err,
                cases[i].desc);
    }
    nd_integ_context(NULL);

    /* None of them created anything. */
    json_t *j = api(e.c, "$JS.API.CONSUMER.NAMES.S", "");
    INTS(j, "total=0");
    json_decref(j);

    /* A filter outside the stream's subjects: 2.9.10 refuses it (10093); 2.11 dropped that
     * check (a stream's subjects may change), and natsd follows 2.11. */
    static const char fbody[] = "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"F\","
                                "\"filter_subject\":\"x.y\",\"ack_policy\":\"explicit\"}}";
    if (nd_integ_is_reference()) {
        API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.F", fbody, T_CREATE, 400, 10093,
                "consumer filter subject is not a valid subset of the interest subjects");
    } else {
        json_t *f = api(e.c, "$JS.API.CONSUMER.CREATE.S.F", fbody);
        INTS(f, "num_pending=0");
        json_decref(f);
        js_publish(e.c, "$JS.API.CONSUMER.DELETE.S.F", API, NULL, "");
        js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_DELETE "\",\"success\":true}");
    }

    /* A change of a durable that cannot be changed. */
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.D",
            "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"D\",\"ack_policy\":\"none\"}}",
            T_CREATE, 500, 10012, "ack policy can not be updated");
    down(&e);
}

Test(integ_jscons, create_workqueue_rules)
{
    env_t e;
    up(&e);
    stream(e.c, "W", "{\"name\":\"W\",\"subjects\":[\"w.>\"],\"retention\":\"workqueue\"}");
#define WQ(name, extra)                                                                            \
    "{\"stream_name\":\"W\",\"config\":{\"durable_name\":\"" name "\",\"ack_policy\":" extra "}}"
    /* Only explicit acks. */
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.W.A", WQ("A", "\"all\""), T_CREATE, 400, 10098,
            "workqueue stream requires explicit ack");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.W.A", WQ("A", "\"none\",\"deliver_subject\":\"dw\""),
            T_CREATE, 400, 10098, "workqueue stream requires explicit ack");
    /* The first consumer may be anything explicit; then every one needs its own filter. */
    cons(e.c, "W", "A",
         "{\"durable_name\":\"A\",\"ack_policy\":\"explicit\",\"filter_subject\":\"w.a\"}");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.W.B", WQ("B", "\"explicit\""), T_CREATE, 400, 10099,
            "multiple non-filtered consumers not allowed on workqueue stream");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.W.B", WQ("B", "\"explicit\",\"filter_subject\":\"w.>\""),
            T_CREATE, 400, 10100, "filtered consumer not unique on workqueue stream");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.W.B", WQ("B", "\"explicit\",\"filter_subject\":\"w.a\""),
            T_CREATE, 400, 10100, "filtered consumer not unique on workqueue stream");
    API_ERR(e.c, "$JS.API.CONSUMER.CREATE.W.B",
            WQ("B", "\"explicit\",\"filter_subject\":\"w.b\",\"deliver_policy\":\"new\""), T_CREATE,
            400, 10101, "consumer must be deliver all on workqueue stream");
    cons(e.c, "W", "B",
         "{\"durable_name\":\"B\",\"ack_policy\":\"explicit\",\"filter_subject\":\"w.b\"}");
#undef WQ
    json_t *j = api(e.c, "$JS.API.CONSUMER.NAMES.W", "");
    INTS(j, "total=2");
    json_decref(j);
    down(&e);
}

/* The create request's "action" (nats-server 2.10+; 2.9.10 ignores it). */
Test(integ_jscons, create_action)
{
    env_t e;
    up(&e);
    stream_s(e.c, 0);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    const char *changed = "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"D\","
                          "\"ack_policy\":\"explicit\",\"max_deliver\":5},\"action\":\"create\"}";
    const char *missing = "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"N\","
                          "\"ack_policy\":\"explicit\"},\"action\":\"update\"}";
    const char *same = "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"D\","
                       "\"ack_policy\":\"explicit\"},\"action\":\"create\"}";
    json_t *j;
    if (nd_integ_is_reference()) {
        /* 2.9.10 ignores the action: the create updates D, the update creates N. */
        j = api(e.c, "$JS.API.CONSUMER.CREATE.S.D", changed);
        INTS(j, "config.max_deliver=5");
        json_decref(j);
        j = api(e.c, "$JS.API.CONSUMER.CREATE.S.N", missing);
        cr_assert_str_eq(jstr(j, "name"), "N");
        json_decref(j);
    } else {
        /* An identical create is fine. */
        j = api(e.c, "$JS.API.CONSUMER.CREATE.S.D", same);
        cr_assert_str_eq(jstr(j, "name"), "D");
        json_decref(j);
        API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.D", changed, T_CREATE, 400, 10148,
                "consumer already exists");
        API_ERR(e.c, "$JS.API.CONSUMER.CREATE.S.N", missing, T_CREATE, 400, 10149,
                "consumer does not exist");
        j = info(e.c, "S", "D");
        INTS(j, "config.max_deliver=-1");
        json_decref(j);
        API_ERR(e.c, "$JS.API.CONSUMER.INFO.S.N", "", T_INFO, 404, 10014, "consumer not found");
    }
    down(&e);
}

/* ---- pull
 * ---------------------------------------------------------------------------------------- */

Test(integ_jscons, pull_request_forms)
{
    env_t e;
    up(&e);
    stream_s(e.c, 5);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");

    /* An empty body asks for one message. */
    next(e.c, "S", "D", "_P.1", "");
    free(DELIVERY(e.c, "s.1", "m1", "S", "D", 1, 1, 1, 4));
    /* An integer body is the batch size. */
    next(e.c, "S", "D", "_P.2", "2");
    free(DELIVERY(e.c, "s.2", "m2", "S", "D", 1, 2, 2, 3));
    free(DELIVERY(e.c, "s.3", "m3", "S", "D", 1, 3, 3, 2));
    /* JSON: a batch larger than what there is, no_wait: what there is, then 408 with what is
     * left of the batch. */
    next(e.c, "S", "D", "_P.3", "{\"batch\":5,\"no_wait\":true}");
    free(DELIVERY(e.c, "s.4", "m4", "S", "D", 1, 4, 4, 1));
    free(DELIVERY(e.c, "s.5", "m5", "S", "D", 1, 5, 5, 0));
    STATUS(e.c, "_P.3", "408 Request Timeout", PENDING(3, 0));
    STATE(e.c, "S", "D", 5, 5, 0, 0, 0, 5, 0, 0);

    /* Nothing left: no_wait says so at once. */
    next(e.c, "S", "D", "_P.4", "{\"batch\":1,\"no_wait\":true}");
    STATUS(e.c, "_P.4", "404 No Messages", "");
    /* expires: the request waits, then times out with its whole batch pending. */
    next(e.c, "S", "D", "_P.5", "{\"batch\":2,\"expires\":200000000}");
    STATUS(e.c, "_P.5", "408 Request Timeout", PENDING(2, 0));
    /* A waiting request gets a message published after it. */
    next(e.c, "S", "D", "_P.6", "{\"batch\":1,\"expires\":5000000000}");
    ND_PING(e.c);
    pub(e.c, "s.6", "m6", "S", 6);
    free(DELIVERY(e.c, "s.6", "m6", "S", "D", 1, 6, 6, 0));
    STATE(e.c, "S", "D", 6, 6, 0, 0, 0, 6, 0, 0);
    /* A request without a reply does nothing. */
    pub(e.c, "s.7", "m7", "S", 7);
    next(e.c, "S", "D", NULL, "");
    ND_PING(e.c);
    STATE(e.c, "S", "D", 6, 6, 0, 0, 1, 6, 0, 0);
    down(&e);
}

Test(integ_jscons, pull_request_limits)
{
    env_t e;
    up(&e);
    stream_s(e.c, 1);
    cons(e.c, "S", "L",
         "{\"durable_name\":\"L\",\"ack_policy\":\"explicit\",\"max_batch\":2,"
         "\"max_expires\":1000000000,\"max_bytes\":100,\"max_waiting\":1}");
    json_t *j = info(e.c, "S", "L");
    INTS(j, "config.max_batch=2", "config.max_expires=1000000000", "config.max_bytes=100",
         "config.max_waiting=1");
    json_decref(j);

    next(e.c, "S", "L", "_P.1", "3");
    STATUS(e.c, "_P.1", "409 Exceeded MaxRequestBatch of 2", "");
    next(e.c, "S", "L", "_P.2", "{\"batch\":1,\"expires\":2000000000}");
    STATUS(e.c, "_P.2", "409 Exceeded MaxRequestExpires of 1s", "");
    next(e.c, "S", "L", "_P.3", "{\"batch\":1,\"max_bytes\":200}");
    STATUS(e.c, "_P.3", "409 Exceeded MaxRequestMaxBytes of 100", "");
    /* A message larger than the request's max_bytes ends the request. */
    next(e.c, "S", "L", "_P.4", "{\"batch\":1,\"max_bytes\":5}");
    STATUS(e.c, "_P.4", "409 Message Size Exceeds MaxBytes", PENDING(1, 5));
    /* Nothing was delivered by these. */
    STATE(e.c, "S", "L", 0, 0, 0, 0, 1, 0, 0, 0);
    /* Within the limits: delivered. */
    next(e.c, "S", "L", "_P.5", "{\"batch\":2,\"expires\":500000000,\"max_bytes\":100}");
    char *a = DELIVERY(e.c, "s.1", "m1", "S", "L", 1, 1, 1, 0);
    /* What is left of max_bytes: a message counts its subject, ack subject, headers and data. */
    char left[128];
    snprintf(left, sizeof left, "Nats-Pending-Messages: 1\r\nNats-Pending-Bytes: %zu\r\n",
             100 - strlen("s.1") - strlen(a) - strlen("m1"));
    STATUS(e.c, "_P.5", "408 Request Timeout", left);
    free(a);
    if (!nd_integ_is_reference()) {
        /* 2.11: a batch filled with max_bytes left ends with 409 Batch Completed */
        pub(e.c, "s.2", "m2", "S", 2);
        next(e.c, "S", "L", "_P.6", "{\"batch\":1,\"max_bytes\":100}");
        char *a2 = DELIVERY(e.c, "s.2", "m2", "S", "L", 1, 2, 2, 0);
        snprintf(left, sizeof left, "Nats-Pending-Messages: 0\r\nNats-Pending-Bytes: %zu\r\n",
                 100 - strlen("s.2") - strlen(a2) - strlen("m2"));
        STATUS(e.c, "_P.6", "409 Batch Completed", left);
        free(a2);
    }
    down(&e);
}

Test(integ_jscons, pull_max_waiting_heartbeat_and_delete)
{
    env_t e;
    up(&e);
    stream_s(e.c, 1);
    cons(e.c, "S", "W", "{\"durable_name\":\"W\",\"ack_policy\":\"explicit\",\"max_waiting\":1}");
    next(e.c, "S", "W", "_P.0", "");
    free(DELIVERY(e.c, "s.1", "m1", "S", "W", 1, 1, 1, 0));

    /* Idle heartbeats on a waiting request carry the last delivered sequences; it ends with 408. */
    next(e.c, "S", "W", "_P.1", "{\"batch\":1,\"expires\":700000000,\"idle_heartbeat\":200000000}");
    int beats = 0;
    for (;;) {
        js_msg_t m = js_read_msg(e.c);
        cr_assert_str_eq(m.subject, "_P.1");
        cr_assert_null(m.reply);
        cr_assert_str_eq(m.data, "");
        if (strcmp(m.hdr, "NATS/1.0 408 Request Timeout\r\n" PENDING(1, 0) "\r\n") == 0) {
            js_msg_free(&m);
            break;
        }
        cr_assert_str_eq(m.hdr, "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 1\r\n"
                                "Nats-Last-Stream: 1\r\n\r\n");
        beats++;
        js_msg_free(&m);
    }
    cr_assert(beats >= 1 && beats <= 3, "%d heartbeats", beats);

    /* max_waiting 1: a second waiting request is refused. The requests come from another
     * connection, so that its 409 Consumer Deleted cannot be confused with API replies. */
    nd_integ_conn_t *p = js_conn_open(e.srv, "_Q.>");
    next(p, "S", "W", "_Q.1", "{\"batch\":1,\"expires\":30000000000}");
    next(p, "S", "W", "_Q.2", "{\"batch\":1,\"expires\":30000000000}");
    STATUS(p, "_Q.2", "409 Exceeded MaxWaiting", "");
    STATE(e.c, "S", "W", 1, 1, 0, 0, 0, 1, 0, 1);

    /* Deleting the consumer ends the waiting request. */
    js_publish(e.c, "$JS.API.CONSUMER.DELETE.S.W", API, NULL, "");
    js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_DELETE "\",\"success\":true}");
    STATUS(p, "_Q.1", "409 Consumer Deleted", "");
    ND_PING(p);
    nd_integ_conn_close(p);
    down(&e);
}

/* ---- acks
 * ------------------------------------------------------------------------------------------ */

Test(integ_jscons, ack_forms)
{
    env_t e;
    up(&e);
    stream_s(e.c, 6);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");

    next(e.c, "S", "D", "_P.n", "3");
    char *a1 = DELIVERY(e.c, "s.1", "m1", "S", "D", 1, 1, 1, 5);
    char *a2 = DELIVERY(e.c, "s.2", "m2", "S", "D", 1, 2, 2, 4);
    char *a3 = DELIVERY(e.c, "s.3", "m3", "S", "D", 1, 3, 3, 3);
    STATE(e.c, "S", "D", 3, 3, 0, 0, 3, 3, 0, 0);

    /* +ACK without a reply, then an empty body with one (which orders both). */
    ACK(e.c, a1, "+ACK", NULL);
    ACK(e.c, a2, "", "_P.a");
    STATE(e.c, "S", "D", 3, 3, 2, 2, 3, 1, 0, 0);
    /* Acking again is harmless and still answered. */
    ACK(e.c, a1, "+ACK", "_P.a");
    STATE(e.c, "S", "D", 3, 3, 2, 2, 3, 1, 0, 0);

    /* -NAK: redelivered at once, delivered count 2, a new delivery sequence. */
    ACK(e.c, a3, "-NAK", "_P.a");
    next(e.c, "S", "D", "_P.n", "");
    char *a3b = DELIVERY(e.c, "s.3", "m3", "S", "D", 2, 3, 4, 3);
    STATE(e.c, "S", "D", 4, 3, 2, 2, 3, 1, 1, 0);

    /* +TERM: never redelivered, not pending any more. */
    ACK(e.c, a3b, "+TERM", "_P.a");
    STATE(e.c, "S", "D", 4, 3, 4, 3, 3, 0, 0, 0);

    /* +NXT acks and asks for the next message on the ack's reply. */
    next(e.c, "S", "D", "_P.n", "");
    char *a4 = DELIVERY(e.c, "s.4", "m4", "S", "D", 1, 4, 5, 2);
    js_publish(e.c, a4, "_P.x", NULL, "+NXT");
    char *a5 = DELIVERY(e.c, "s.5", "m5", "S", "D", 1, 5, 6, 1);
    ACK(e.c, a5, "+ACK", "_P.a");
    STATE(e.c, "S", "D", 6, 5, 6, 5, 1, 0, 0, 0);

    /* No message is left to redeliver: the next one is new. */
    next(e.c, "S", "D", "_P.n", "");
    char *a6 = DELIVERY(e.c, "s.6", "m6", "S", "D", 1, 6, 7, 0);
    ACK(e.c, a6, "+ACK", "_P.a");
    next(e.c, "S", "D", "_P.n", "{\"no_wait\":true}");
    STATUS(e.c, "_P.n", "404 No Messages", "");
    free(a1), free(a2), free(a3), free(a3b), free(a4), free(a5), free(a6);
    down(&e);
}

Test(integ_jscons, ack_nak_delay_progress_and_ack_wait)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2);
    cons(e.c, "S", "D",
         "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\",\"ack_wait\":1000000000}");

    /* -NAK with a delay: not redelivered at once, but after the delay. */
    next(e.c, "S", "D", "_P.n", "");
    char *a1 = DELIVERY(e.c, "s.1", "m1", "S", "D", 1, 1, 1, 1);
    ACK(e.c, a1, "-NAK {\"delay\":300000000}", "_P.a");
    next(e.c, "S", "D", "_P.n", "");
    char *a2 = DELIVERY(e.c, "s.2", "m2", "S", "D", 1, 2, 2, 0);
    next(e.c, "S", "D", "_P.n", "{\"no_wait\":true}");
    STATUS(e.c, "_P.n", "404 No Messages", "");
    next(e.c, "S", "D", "_P.n", "{\"batch\":1,\"expires\":5000000000}");
    char *a1b = DELIVERY(e.c, "s.1", "m1", "S", "D", 2, 1, 3, 0);
    ACK(e.c, a1b, "+ACK", "_P.a");

    /* +WPI restarts ack_wait (1s): progress at 600ms, so nothing is redelivered at 1250ms (it
     * would have been at 1000ms without it); the redelivery comes at about 1600ms. */
    ACK(e.c, a2, "+ACK", "_P.a");
    pub(e.c, "s.3", "m3", "S", 3);
    next(e.c, "S", "D", "_P.n", "");
    char *a3 = DELIVERY(e.c, "s.3", "m3", "S", "D", 1, 3, 4, 0);
    sleep_ms(600);
    ACK(e.c, a3, "+WPI", "_P.a");
    sleep_ms(650);
    next(e.c, "S", "D", "_P.n", "{\"no_wait\":true}");
    STATUS(e.c, "_P.n", "404 No Messages", "");
    /* ack_wait expiry redelivers it. */
    next(e.c, "S", "D", "_P.n", "{\"batch\":1,\"expires\":5000000000}");
    char *a3b = DELIVERY(e.c, "s.3", "m3", "S", "D", 2, 3, 5, 0);
    STATE(e.c, "S", "D", 5, 3, 3, 2, 0, 1, 1, 0);
    ACK(e.c, a3b, "+ACK", "_P.a");
    STATE(e.c, "S", "D", 5, 3, 5, 3, 0, 0, 0, 0);
    free(a1), free(a2), free(a1b), free(a3), free(a3b);
    down(&e);
}

Test(integ_jscons, ack_max_deliver_advisory)
{
    env_t e;
    up(&e);
    /* The advisory comes on its own connection: 2.9.10 sends it when a third delivery would
     * happen, 2.11 already when the second one is NAKed. */
    nd_integ_conn_t *adv = js_conn_open(e.srv, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.M");
    stream_s(e.c, 1);
    cons(e.c, "S", "M", "{\"durable_name\":\"M\",\"ack_policy\":\"explicit\",\"max_deliver\":2}");

    next(e.c, "S", "M", "_P.n", "");
    char *a = DELIVERY(e.c, "s.1", "m1", "S", "M", 1, 1, 1, 0);
    ACK(e.c, a, "-NAK", "_P.a");
    free(a);
    next(e.c, "S", "M", "_P.n", "");
    a = DELIVERY(e.c, "s.1", "m1", "S", "M", 2, 1, 2, 0);
    ACK(e.c, a, "-NAK", "_P.a");
    free(a);
    /* No third delivery: the request times out empty. */
    next(e.c, "S", "M", "_P.n", "{\"batch\":1,\"expires\":300000000}");
    STATUS(e.c, "_P.n", "408 Request Timeout", PENDING(1, 0));
    next(e.c, "S", "M", "_P.n", "{\"no_wait\":true}");
    STATUS(e.c, "_P.n", "404 No Messages", "");

    js_msg_t m = js_expect_msg_at(__FILE__, __LINE__, adv,
                                  "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.M", NULL, NULL);
    json_t *j = json_loads(m.data, 0, NULL);
    cr_assert_not_null(j, "%s", m.data);
    cr_assert_str_eq(jstr(j, "type"), "io.nats.jetstream.advisory.v1.max_deliver");
    cr_assert_str_eq(jstr(j, "stream"), "S");
    cr_assert_str_eq(jstr(j, "consumer"), "M");
    INTS(j, "stream_seq=1", "deliveries=2");
    cr_assert(json_is_string(jget(j, "id")) && json_is_string(jget(j, "timestamp")));
    json_decref(j);
    js_msg_free(&m);
    /* Only one. */
    ND_PING(adv);
    nd_integ_conn_close(adv);
    down(&e);
}

Test(integ_jscons, ack_all)
{
    env_t e;
    up(&e);
    stream_s(e.c, 4);
    cons(e.c, "S", "A", "{\"durable_name\":\"A\",\"ack_policy\":\"all\"}");
    json_t *j = info(e.c, "S", "A");
    cr_assert_str_eq(jstr(j, "config.ack_policy"), "all");
    json_decref(j);
    next(e.c, "S", "A", "_P.n", "4");
    char *a[4];
    for (int i = 0; i < 4; i++) {
        char subj[8], body[8];
        snprintf(subj, sizeof subj, "s.%d", i + 1);
        snprintf(body, sizeof body, "m%d", i + 1);
        a[i] = DELIVERY(e.c, subj, body, "S", "A", 1, i + 1, i + 1, 3 - i);
    }
    STATE(e.c, "S", "A", 4, 4, 0, 0, 0, 4, 0, 0);
    /* Acking the third acks the first three. */
    ACK(e.c, a[2], "+ACK", "_P.a");
    STATE(e.c, "S", "A", 4, 4, 3, 3, 0, 1, 0, 0);
    /* An older ack changes nothing. */
    ACK(e.c, a[0], "+ACK", "_P.a");
    STATE(e.c, "S", "A", 4, 4, 3, 3, 0, 1, 0, 0);
    ACK(e.c, a[3], "+ACK", "_P.a");
    STATE(e.c, "S", "A", 4, 4, 4, 4, 0, 0, 0, 0);
    for (int i = 0; i < 4; i++)
        free(a[i]);
    down(&e);
}

Test(integ_jscons, ack_unknown_malformed_forged)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2);
    cons(e.c, "S", "D", "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\"}");
    next(e.c, "S", "D", "_P.n", "");
    char *a1 = DELIVERY(e.c, "s.1", "m1", "S", "D", 1, 1, 1, 1);

    /* Acks for a consumer or stream that does not exist: nobody listens; nothing happens. */
    js_publish(e.c, "$JS.ACK.S.NOPE.1.1.1.1.0", NULL, NULL, "+ACK");
    js_publish(e.c, "$JS.ACK.NOPE.D.1.1.1.1.0", NULL, NULL, "+ACK");
    /* Malformed ack subjects of D: too few or too many tokens, not numbers. */
    js_publish(e.c, "$JS.ACK.S.D", NULL, NULL, "+ACK");
    js_publish(e.c, "$JS.ACK.S.D.1.1", NULL, NULL, "+ACK");
    js_publish(e.c, "$JS.ACK.S.D.x.y.z.t.p", NULL, NULL, "+ACK");
    js_publish(e.c, "$JS.ACK.S.D.1.1.1.1.0.extra.tokens.here.x", NULL, NULL, "+ACK");
    js_publish(e.c, "$JS.ACK.S.D.1.1.1.1.0", NULL, NULL, "+BOGUS");
    /* Forged: sequences never delivered. */
    js_publish(e.c, "$JS.ACK.S.D.1.2.2.1.0", NULL, NULL, "+ACK");
    js_publish(e.c, "$JS.ACK.S.D.1.99.99.1.0", NULL, NULL, "+ACK");
    js_publish(e.c, "$JS.ACK.S.D.1.99.99.1.0", NULL, NULL, "-NAK");
    js_publish(e.c, "$JS.ACK.S.D.1.99.99.1.0", NULL, NULL, "+TERM");
    js_publish(e.c, "$JS.ACK.S.D.1.18446744073709551615.1.1.0", NULL, NULL, "+ACK");
    ND_PING(e.c);
    STATE(e.c, "S", "D", 1, 1, 0, 0, 1, 1, 0, 0);

    /* A forged ack with a reply: 2.9.10 answers it, 2.11 does not (and neither acks). */
    js_publish(e.c, "$JS.ACK.S.D.1.99.99.1.0", "_P.f", NULL, "+ACK");
    if (nd_integ_is_reference())
        js_expect_msg(e.c, "_P.f", NULL, "");
    ND_PING(e.c);

    /* The consumer still works: m2 is next, m1 acks. */
    next(e.c, "S", "D", "_P.n", "");
    char *a2 = DELIVERY(e.c, "s.2", "m2", "S", "D", 1, 2, 2, 0);
    ACK(e.c, a1, "+ACK", "_P.a");
    ACK(e.c, a2, "+ACK", "_P.a");
    STATE(e.c, "S", "D", 2, 2, 2, 2, 0, 0, 0, 0);
    free(a1), free(a2);
    down(&e);
}

/* ---- push
 * ------------------------------------------------------------------------------------------ */

/* Push deliveries go to their own connection d (which also listens on _D.> for ack replies):
 * on the API connection they could come before the create reply. */
static nd_integ_conn_t *
deliver_conn_at(const char *file, int line, env_t *e, const char *subs)
{
    nd_integ_conn_t *d = js_conn_open_at(file, line, e->srv, "_D.>");
    nd_integ_send_at(file, line, d, subs, strlen(subs));
    nd_integ_send_at(file, line, d, "PING\r\n", 6);
    nd_integ_expect_at(file, line, d, "PONG\r\n", 6);
    return d;
}
#define deliver_conn(e, subs) deliver_conn_at(__FILE__, __LINE__, (e), (subs))

Test(integ_jscons, push_delivery)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2);
    nd_integ_conn_t *d = deliver_conn(&e, "SUB dlv.1 5\r\n");
    json_t *j = cons_at(__FILE__, __LINE__, e.c, "S", "P", false,
                        "{\"durable_name\":\"P\",\"deliver_subject\":\"dlv.1\","
                        "\"ack_policy\":\"explicit\"}");
    cr_assert_str_eq(jstr(j, "config.deliver_subject"), "dlv.1");
    cr_assert_null(jget(j, "config.max_waiting"));
    json_decref(j);
    char *a1 = DELIVERY(d, "s.1", "m1", "S", "P", 1, 1, 1, 1);
    char *a2 = DELIVERY(d, "s.2", "m2", "S", "P", 1, 2, 2, 0);
    pub(e.c, "s.3", "m3", "S", 3);
    char *a3 = DELIVERY(d, "s.3", "m3", "S", "P", 1, 3, 3, 0);
    ACK(d, a1, "+ACK", "_D.a");
    ACK(d, a2, "+ACK", "_D.a");
    ACK(d, a3, "+ACK", "_D.a");
    STATE(e.c, "S", "P", 3, 3, 3, 3, 0, 0, 0, 0);
    /* A pull request to a push consumer. */
    next(e.c, "S", "P", "_P.n", "");
    STATUS(e.c, "_P.n", "409 Consumer is push based", "");
    free(a1), free(a2), free(a3);
    nd_integ_conn_close(d);
    down(&e);
}

Test(integ_jscons, push_queue_group)
{
    env_t e;
    up(&e);
    stream_s(e.c, 3);
    /* Two members of queue group G (sids 7 and 8) on one connection: each message goes to one. */
    nd_integ_conn_t *d = deliver_conn(&e, "SUB dlv.q G 7\r\nSUB dlv.q G 8\r\n");
    json_t *j = cons_at(__FILE__, __LINE__, e.c, "S", "Q", false,
                        "{\"durable_name\":\"Q\",\"deliver_subject\":\"dlv.q\","
                        "\"deliver_group\":\"G\",\"ack_policy\":\"explicit\"}");
    cr_assert_str_eq(jstr(j, "config.deliver_group"), "G");
    json_decref(j);
    int got[4] = {0};
    js_msg_t m[3];
    for (int k = 0; k < 3; k++) {
        m[k] = js_read_msg(d);
        int seq = 0, sid = 0;
        cr_assert(sscanf(m[k].line, "MSG s.%d %d", &seq, &sid) == 2 && seq >= 1 && seq <= 3 &&
                      (sid == 7 || sid == 8),
                  "%s", m[k].line);
        got[seq]++;
    }
    cr_assert(got[1] == 1 && got[2] == 1 && got[3] == 1);
    /* Not once per member: nothing more comes. */
    ND_PING(d);
    for (int k = 0; k < 3; k++) {
        ACK(d, m[k].reply, "+ACK", "_D.a");
        js_msg_free(&m[k]);
    }
    STATE(e.c, "S", "Q", 3, 3, 3, 3, 0, 0, 0, 0);
    nd_integ_conn_close(d);
    down(&e);
}

Test(integ_jscons, push_idle_heartbeat)
{
    env_t e;
    up(&e);
    stream_s(e.c, 1);
    nd_integ_conn_t *d = deliver_conn(&e, "SUB dlv.h 5\r\n");
    cons(e.c, "S", "H",
         "{\"durable_name\":\"H\",\"deliver_subject\":\"dlv.h\",\"ack_policy\":\"none\","
         "\"idle_heartbeat\":200000000}");
    js_expect_msg(d, "s.1", NULL, "m1");
    /* Idle: heartbeats with the last delivered sequences and no reply. */
    for (int i = 0; i < 2; i++) {
        js_msg_t h = js_expect_msg_at(__FILE__, __LINE__, d, "dlv.h",
                                      "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 1\r\n"
                                      "Nats-Last-Stream: 1\r\n\r\n",
                                      "");
        cr_assert_null(h.reply);
        js_msg_free(&h);
    }
    pub(e.c, "s.2", "m2", "S", 2);
    js_expect_msg(d, "s.2", NULL, "m2");
    js_expect_msg(d, "dlv.h",
                  "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 2\r\n"
                  "Nats-Last-Stream: 2\r\n\r\n",
                  "");
    nd_integ_conn_close(d);
    down(&e);
}

Test(integ_jscons, push_flow_control)
{
    env_t e;
    up(&e);
    stream(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    /* 48 messages of 64 KiB: 3 MiB, more than the window nats-server lets out unanswered
     * (2 MiB), so the test only gets them all by answering. */
    enum { N = 48, SZ = 65536 };
    char *body = malloc(SZ + 1);
    memset(body, 'x', SZ);
    body[SZ] = '\0';
    for (int i = 1; i <= N; i++)
        pub(e.c, "s.big", body, "S", i);
    free(body);
    nd_integ_conn_t *d = deliver_conn(&e, "SUB dlv.f 5\r\n");
    cons(e.c, "S", "F",
         "{\"durable_name\":\"F\",\"deliver_subject\":\"dlv.f\",\"ack_policy\":\"none\","
         "\"flow_control\":true,\"idle_heartbeat\":5000000000}");
    int msgs = 0, fcs = 0;
    while (msgs < N) {
        js_msg_t m = js_read_msg(d);
        if (strcmp(m.subject, "s.big") == 0) {
            cr_assert_eq(m.data_len, (size_t)SZ);
            cr_assert_null(m.hdr);
            msgs++;
        } else {
            /* "HMSG dlv.f 5 $JS.FC.S.F.<id> <hl> <hl>": answered with an empty message. */
            cr_assert_str_eq(m.subject, "dlv.f");
            cr_assert_str_eq(m.hdr, "NATS/1.0 100 FlowControl Request\r\n\r\n");
            cr_assert_str_eq(m.data, "");
            cr_assert(m.reply != NULL && strncmp(m.reply, "$JS.FC.S.F.", 11) == 0, "%s", m.line);
            js_publish(d, m.reply, NULL, NULL, "");
            fcs++;
        }
        js_msg_free(&m);
    }
    cr_assert(fcs >= 1, "no flow control request in %d messages", N);
    STATE(e.c, "S", "F", N, N, N, N, 0, 0, 0, 0);
    nd_integ_conn_close(d);
    down(&e);
}

/* ---- retention ---------------------------------------------------------------------------------
 */

Test(integ_jscons, retention_interest_and_workqueue)
{
    env_t e;
    up(&e);
    stream(e.c, "I", "{\"name\":\"I\",\"subjects\":[\"i.>\"],\"retention\":\"interest\"}");
    cons(e.c, "I", "A", "{\"durable_name\":\"A\",\"ack_policy\":\"explicit\"}");
    cons(e.c, "I", "B", "{\"durable_name\":\"B\",\"ack_policy\":\"explicit\"}");
    pub(e.c, "i.1", "x", "I", 1);
    pub(e.c, "i.2", "y", "I", 2);
    cr_assert_eq(stream_msgs(e.c, "I"), 2);
    next(e.c, "I", "A", "_P.n", "2");
    char *a1 = DELIVERY(e.c, "i.1", "x", "I", "A", 1, 1, 1, 1);
    char *a2 = DELIVERY(e.c, "i.2", "y", "I", "A", 1, 2, 2, 0);
    ACK(e.c, a1, "+ACK", "_P.a");
    /* B has not acked: kept. */
    cr_assert_eq(stream_msgs(e.c, "I"), 2);
    next(e.c, "I", "B", "_P.n", "");
    char *b1 = DELIVERY(e.c, "i.1", "x", "I", "B", 1, 1, 1, 1);
    ACK(e.c, b1, "+ACK", "_P.a");
    /* Both acked message 1: gone. */
    cr_assert_eq(stream_msgs(e.c, "I"), 1);
    json_t *j = api(e.c, "$JS.API.STREAM.INFO.I", "");
    INTS(j, "state.first_seq=2", "state.last_seq=2");
    json_decref(j);
    /* A term counts as done too. */
    next(e.c, "I", "B", "_P.n", "");
    char *b2 = DELIVERY(e.c, "i.2", "y", "I", "B", 1, 2, 2, 0);
    ACK(e.c, b2, "+TERM", "_P.a");
    cr_assert_eq(stream_msgs(e.c, "I"), 1);
    ACK(e.c, a2, "+ACK", "_P.a");
    cr_assert_eq(stream_msgs(e.c, "I"), 0);
    free(a1), free(a2), free(b1), free(b2);
    if (!nd_integ_is_reference()) {
        /* A deleted consumer no longer holds messages: what only it needed goes with it. */
        pub(e.c, "i.3", "z", "I", 3);
        next(e.c, "I", "A", "_P.n", "");
        char *a3 = DELIVERY(e.c, "i.3", "z", "I", "A", 1, 3, 3, 0);
        ACK(e.c, a3, "+ACK", "_P.a");
        cr_assert_eq(stream_msgs(e.c, "I"), 1); /* B still needs it */
        js_publish(e.c, "$JS.API.CONSUMER.DELETE.I.B", API, NULL, "");
        js_expect_msg(e.c, API, NULL, "{\"type\":\"" T_DELETE "\",\"success\":true}");
        cr_assert_eq(stream_msgs(e.c, "I"), 0);
        free(a3);
    }

    stream(e.c, "W", "{\"name\":\"W\",\"subjects\":[\"w.>\"],\"retention\":\"workqueue\"}");
    pub(e.c, "w.1", "p", "W", 1);
    pub(e.c, "w.2", "q", "W", 2);
    cons(e.c, "W", "C", "{\"durable_name\":\"C\",\"ack_policy\":\"explicit\"}");
    next(e.c, "W", "C", "_P.n", "");
    char *c1 = DELIVERY(e.c, "w.1", "p", "W", "C", 1, 1, 1, 1);
    /* Delivered but not acked: still there. */
    cr_assert_eq(stream_msgs(e.c, "W"), 2);
    ACK(e.c, c1, "+ACK", "_P.a");
    cr_assert_eq(stream_msgs(e.c, "W"), 1);
    j = api(e.c, "$JS.API.STREAM.INFO.W", "");
    INTS(j, "state.first_seq=2");
    json_decref(j);
    free(c1);
    down(&e);
}
