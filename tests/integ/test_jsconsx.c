/* Integration tests of the 2.11 consumer features natsd has beyond nats-server 2.9.10 (so natsd
 * only, no reference run): CONSUMER.PAUSE and pause_until, priority groups (overflow with
 * min_pending, pinned_client with Nats-Pin-Id, CONSUMER.UNPIN, their 400/423 statuses and
 * advisories), replay_policy original, rate_limit_bps, sample_freq ack metrics, and the shape of
 * consumer info on a single server (no "cluster"). Expected texts and JSON shapes follow
 * nats-server 2.11 (server/consumer.go, jetstream_api.go, jetstream_events.go).
 *
 * Advisories are read on their own connection (sid 9 on $JS.EVENT.>), so API replies and
 * deliveries on the main one keep their order. "Nothing arrived" is checked with PING/PONG after
 * a short sleep.
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
#include "jsproto.h"

TestSuite(integ_jsconsx, .fini = nd_integ_cleanup, .timeout = 120);

#define API "_R.1"

typedef struct env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;  /* API replies (sid 1), _P.> (sid 2) */
    nd_integ_conn_t *ev; /* $JS.EVENT.> (sid 9) */
} env_t;

static void
up(env_t *e)
{
    memset(e, 0, sizeof *e);
    e->srv = js_server_start(&e->conf, NULL, NULL);
    e->c = js_conn_open(e->srv, API);
    ND_SEND(e->c, "SUB _P.> 2\r\nSUB _X.one 5\r\nSUB _X.two 6\r\nPING\r\n");
    ND_EXPECT(e->c, "PONG\r\n");
    e->ev = js_conn_open(e->srv, NULL);
    ND_SEND(e->ev, "SUB $JS.EVENT.> 9\r\nPING\r\n");
    ND_EXPECT(e->ev, "PONG\r\n");
}

static void
down(env_t *e)
{
    nd_integ_conn_close(e->ev);
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static long long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RFC 3339 UTC, whole seconds, secs from now. */
static void
rfc3339_in(char out[32], int secs)
{
    time_t t = time(NULL) + secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Nothing is waiting on c: after ms, a PING is answered first. */
static void
quiet_at(const char *file, int line, nd_integ_conn_t *c, int ms)
{
    (void)file;
    (void)line;
    sleep_ms(ms);
    ND_SEND(c, "PING\r\n");
    ND_EXPECT(c, "PONG\r\n");
}
#define QUIET(c, ms) quiet_at(__FILE__, __LINE__, (c), (ms))

#define api(c, subj, body) js_request_json_at(__FILE__, __LINE__, (c), (subj), API, (body))

/* The whole reply as compact JSON equals want (keys in order). */
static void
json_eq_at(const char *file, int line, json_t *j, const char *want)
{
    char *d = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (strcmp(d, want) != 0)
        jfail(file, line, "got %s\nwant %s", d, want);
    free(d);
}
#define JSON_EQ(j, want) json_eq_at(__FILE__, __LINE__, (j), (want))

static void
ok_at(const char *file, int line, json_t *j)
{
    if (json_object_get(j, "error") != NULL) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "error reply %s", d);
    }
}
#define OK(j) ok_at(__FILE__, __LINE__, (j))

static void
pub(nd_integ_conn_t *c, const char *subj, const char *body)
{
    js_publish(c, subj, API, NULL, body);
    js_msg_free_ret(js_read_msg(c));
}

/* Stream S on s.> with n messages s.<i> "m<i>". */
static void
stream_s(nd_integ_conn_t *c, int n, const char *extra)
{
    char cfg[256];
    snprintf(cfg, sizeof cfg, "{\"name\":\"S\",\"subjects\":[\"s.>\"]%s}", extra ? extra : "");
    json_t *j = api(c, "$JS.API.STREAM.CREATE.S", cfg);
    OK(j);
    json_decref(j);
    for (int i = 1; i <= n; i++) {
        char subj[32], body[32];
        snprintf(subj, sizeof subj, "s.%d", i);
        snprintf(body, sizeof body, "m%d", i);
        pub(c, subj, body);
    }
}

static json_t *
cons(nd_integ_conn_t *c, const char *name, const char *cfg)
{
    char subj[128], *body = NULL;
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.S.%s", name);
    cr_assert(asprintf(&body, "{\"stream_name\":\"S\",\"config\":%s}", cfg) > 0);
    json_t *j = api(c, subj, body);
    free(body);
    OK(j);
    return j;
}

static void
next(nd_integ_conn_t *c, const char *name, const char *inbox, const char *body)
{
    char subj[128];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.MSG.NEXT.S.%s", name);
    js_publish(c, subj, inbox, NULL, body);
}

/* The next advisory on e->ev on subject (others, such as the create advisories, are skipped),
 * which must be of type; returned parsed (owned). */
static json_t *
event_at(const char *file, int line, env_t *e, const char *subject, const char *type)
{
    js_msg_t m = js_read_msg_at(file, line, e->ev);
    while (strcmp(m.subject, subject) != 0) {
        js_msg_free(&m);
        m = js_read_msg_at(file, line, e->ev);
    }
    json_error_t je;
    json_t *j = json_loads(m.data, JSON_PRESERVE_ORDER, &je);
    if (j == NULL || strcmp(jstr_at(file, line, j, "type"), type) != 0)
        jfail(file, line, "event %s, expected type %s", m.data, type);
    js_msg_free(&m);
    return j;
}
#define EVENT(e, subject, type) event_at(__FILE__, __LINE__, (e), (subject), (type))

/* The keys of j in order, comma separated. */
static void
keys_at(const char *file, int line, json_t *j, const char *want)
{
    char got[512] = "";
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        if (got[0] != '\0')
            strcat(got, ",");
        strcat(got, k);
    }
    if (strcmp(got, want) != 0)
        jfail(file, line, "keys %s, expected %s", got, want);
}
#define KEYS(j, want) keys_at(__FILE__, __LINE__, (j), (want))

static void
status_at(const char *file, int line, nd_integ_conn_t *c, const char *inbox, const char *status)
{
    char hdr[256];
    snprintf(hdr, sizeof hdr, "NATS/1.0 %s\r\n\r\n", status);
    js_msg_free_ret(js_expect_msg_at(file, line, c, inbox, hdr, ""));
}
/* The subscription id a message came on: 2 for _P.>, 5 for _X.one, 6 for _X.two. */
static int
msg_sid(const js_msg_t *m)
{
    int sid = 0;
    sscanf(m->line, "%*s %*s %d", &sid);
    return sid;
}

/* The metadata value k of a consumer reply's config. */
static const char *
meta(json_t *j, const char *k)
{
    return json_string_value(json_object_get(jget(j, "config.metadata"), k));
}

#define STATUS(c, inbox, status) status_at(__FILE__, __LINE__, (c), (inbox), (status))

/* ---- pause ------------------------------------------------------------------------------------ */

Test(integ_jsconsx, pause_request_advisory_and_resume)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2, NULL);
    json_t *j = cons(e.c, "P", "{\"durable_name\":\"P\",\"ack_policy\":\"explicit\"}");
    cr_assert_null(jget(j, "cluster"), "no cluster info on a single server");
    cr_assert_null(jget(j, "paused"));
    cr_assert_str_eq(meta(j, "_nats.req.level"), "0");
    json_decref(j);

    char until[32], body[80], want[256];
    rfc3339_in(until, 30);
    snprintf(body, sizeof body, "{\"pause_until\":\"%s\"}", until);
    j = api(e.c, "$JS.API.CONSUMER.PAUSE.S.P", body);
    KEYS(j, "type,paused,pause_until,pause_remaining");
    cr_assert_str_eq(jstr(j, "type"), "io.nats.jetstream.api.v1.consumer_pause_response");
    cr_assert(json_is_true(jget(j, "paused")));
    cr_assert_str_eq(jstr(j, "pause_until"), until);
    long long rem = jint(j, "pause_remaining");
    cr_assert(rem > 28000000000LL && rem <= 30000000000LL, "pause_remaining %lld", rem);
    json_decref(j);

    j = EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.S.P",
              "io.nats.jetstream.advisory.v1.consumer_pause");
    KEYS(j, "type,id,timestamp,stream,consumer,paused,pause_until");
    cr_assert(json_is_true(jget(j, "paused")));
    cr_assert_str_eq(jstr(j, "pause_until"), until);
    json_decref(j);

    /* Info: paused, the remaining time, and pause_until in the config (API level 1). */
    j = api(e.c, "$JS.API.CONSUMER.INFO.S.P", "");
    cr_assert(json_is_true(jget(j, "paused")));
    cr_assert(jint(j, "pause_remaining") > 0);
    cr_assert_str_eq(jstr(j, "config.pause_until"), until);
    cr_assert_str_eq(meta(j, "_nats.req.level"), "1");
    cr_assert_null(jget(j, "cluster"));
    json_decref(j);

    /* A pull request queues but gets nothing while paused. */
    next(e.c, "P", "_P.a", "{\"batch\":1,\"expires\":20000000000}");
    QUIET(e.c, 200);
    j = api(e.c, "$JS.API.CONSUMER.INFO.S.P", "");
    cr_assert_eq(jint(j, "num_waiting"), 1);
    cr_assert_eq(jint(j, "delivered.consumer_seq"), 0);
    json_decref(j);

    /* A create of the same consumer keeps the pause (the request has none). */
    j = cons(e.c, "P", "{\"durable_name\":\"P\",\"ack_policy\":\"explicit\"}");
    cr_assert_str_eq(jstr(j, "config.pause_until"), until);
    cr_assert(json_is_true(jget(j, "paused")));
    json_decref(j);
    json_decref(EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.S.P",
                      "io.nats.jetstream.advisory.v1.consumer_pause"));

    /* An empty request resumes: the zero time, no remaining; the request gets its message. */
    j = api(e.c, "$JS.API.CONSUMER.PAUSE.S.P", "");
    JSON_EQ(j, "{\"type\":\"io.nats.jetstream.api.v1.consumer_pause_response\",\"paused\":false,"
               "\"pause_until\":\"0001-01-01T00:00:00Z\"}");
    json_decref(j);
    js_msg_t m = js_read_msg(e.c);
    cr_assert_str_eq(m.subject, "s.1");
    cr_assert_str_eq(m.data, "m1");
    js_msg_free(&m);
    j = EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.S.P",
              "io.nats.jetstream.advisory.v1.consumer_pause");
    cr_assert(json_is_false(jget(j, "paused")));
    cr_assert_str_eq(jstr(j, "pause_until"), "0001-01-01T00:00:00Z");
    json_decref(j);
    j = api(e.c, "$JS.API.CONSUMER.INFO.S.P", "");
    cr_assert_null(jget(j, "paused"));
    cr_assert_null(jget(j, "config.pause_until"));
    cr_assert_str_eq(meta(j, "_nats.req.level"), "0");
    json_decref(j);

    /* Errors: a bad time; a missing consumer. */
    j = api(e.c, "$JS.API.CONSUMER.PAUSE.S.P", "{\"pause_until\":\"soon\"}");
    cr_assert_eq(jint(j, "error.err_code"), 10025);
    json_decref(j);
    j = api(e.c, "$JS.API.CONSUMER.PAUSE.S.NOPE", "");
    JSON_EQ(j, "{\"type\":\"io.nats.jetstream.api.v1.consumer_pause_response\",\"error\":{"
               "\"code\":404,\"err_code\":10014,\"description\":\"consumer not found\"}}");
    json_decref(j);
    (void)want;
    down(&e);
}

Test(integ_jsconsx, pause_until_in_config_runs_out)
{
    env_t e;
    up(&e);
    stream_s(e.c, 1, NULL);
    char until[32], cfg[160];
    rfc3339_in(until, 2);
    snprintf(cfg, sizeof cfg,
             "{\"durable_name\":\"Q\",\"ack_policy\":\"explicit\",\"pause_until\":\"%s\"}", until);
    json_t *j = cons(e.c, "Q", cfg);
    cr_assert(json_is_true(jget(j, "paused")));
    cr_assert_str_eq(jstr(j, "config.pause_until"), until);
    json_decref(j);
        j = EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.S.Q",
              "io.nats.jetstream.advisory.v1.consumer_pause");
    cr_assert(json_is_true(jget(j, "paused")));
    json_decref(j);

    next(e.c, "Q", "_P.a", "{\"batch\":1,\"expires\":10000000000}");
    js_msg_t m = js_read_msg(e.c); /* once the pause ran out (within ~2 s) */
    cr_assert_str_eq(m.subject, "s.1");
    js_msg_free(&m);
    j = EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.S.Q",
              "io.nats.jetstream.advisory.v1.consumer_pause");
    cr_assert(json_is_false(jget(j, "paused")));
    cr_assert_str_eq(jstr(j, "pause_until"), until);
    json_decref(j);
    down(&e);
}

/* ---- priority groups ------------------------------------------------------------------------- */

Test(integ_jsconsx, priority_request_checks)
{
    env_t e;
    up(&e);
    stream_s(e.c, 3, NULL);
    json_decref(cons(e.c, "O", "{\"durable_name\":\"O\",\"ack_policy\":\"explicit\","
                               "\"priority_groups\":[\"A\"],\"priority_policy\":\"overflow\"}"));
    next(e.c, "O", "_P.a", "{\"batch\":1}");
    STATUS(e.c, "_P.a", "400 Bad Request - Priority Group missing");
    next(e.c, "O", "_P.a", "{\"batch\":1,\"group\":\"B\"}");
    STATUS(e.c, "_P.a", "400 Bad Request - Invalid Priority Group");
    /* an id on an overflow consumer is only warned about: the request still gets a message */
    next(e.c, "O", "_P.a", "{\"batch\":1,\"group\":\"A\",\"id\":\"x\"}");
    STATUS(e.c, "_P.a", "400 Bad Request - Not a Pinned Client Priority consumer");
    js_msg_t m = js_read_msg(e.c);
    cr_assert_str_eq(m.subject, "s.1");
    cr_assert_null(m.hdr);
    js_msg_free(&m);
    /* a plain (non-JSON) request has no group and is served as before */
    next(e.c, "O", "_P.a", "1");
    m = js_read_msg(e.c);
    cr_assert_str_eq(m.subject, "s.2");
    js_msg_free(&m);

    json_decref(cons(e.c, "N", "{\"durable_name\":\"N\",\"ack_policy\":\"explicit\"}"));
    next(e.c, "N", "_P.b", "{\"batch\":1,\"min_pending\":1}");
    STATUS(e.c, "_P.b", "400 Bad Request - Not a Overflow Priority consumer");
    m = js_read_msg(e.c);
    cr_assert_str_eq(m.subject, "s.1");
    js_msg_free(&m);

    /* info shows the group, never pinned */
    json_t *j = api(e.c, "$JS.API.CONSUMER.INFO.S.O", "");
    JSON_EQ(jget(j, "priority_groups"), "[{\"group\":\"A\",\"pinned_ts\":\"0001-01-01T00:00:00Z\"}]");
    json_decref(j);
    j = api(e.c, "$JS.API.CONSUMER.INFO.S.N", "");
    cr_assert_null(jget(j, "priority_groups"));
    json_decref(j);
    down(&e);
}

Test(integ_jsconsx, overflow_min_pending_and_min_ack_pending)
{
    env_t e;
    up(&e);
    stream_s(e.c, 3, NULL);
    json_decref(cons(e.c, "O", "{\"durable_name\":\"O\",\"ack_policy\":\"explicit\","
                               "\"priority_groups\":[\"A\"],\"priority_policy\":\"overflow\"}"));
    /* 3 pending: a request for at least 5 waits, a plain one of the group is served */
    next(e.c, "O", "_X.two", "{\"batch\":5,\"group\":\"A\",\"min_pending\":5,\"expires\":20000000000}");
    QUIET(e.c, 100);
    next(e.c, "O", "_X.one", "{\"batch\":1,\"group\":\"A\"}");
    js_msg_t m = js_read_msg(e.c);
    cr_assert_eq(msg_sid(&m), 5);
    cr_assert_str_eq(m.data, "m1");
    js_msg_free(&m);
    /* 2 pending; 3 more make 5: the waiting request gets them now */
    pub(e.c, "s.4", "m4");
    pub(e.c, "s.5", "m5");
    QUIET(e.c, 50);
    pub(e.c, "s.6", "m6");
    m = js_read_msg(e.c);
    cr_assert_eq(msg_sid(&m), 6);
    cr_assert_str_eq(m.data, "m2");
    js_msg_free(&m);

    /* min_ack_pending: served only while that many acks are outstanding */
    json_decref(cons(e.c, "M", "{\"durable_name\":\"M\",\"ack_policy\":\"explicit\","
                               "\"priority_groups\":[\"A\"],\"priority_policy\":\"overflow\"}"));
    next(e.c, "M", "_X.two", "{\"batch\":1,\"group\":\"A\",\"min_ack_pending\":1,\"expires\":20000000000}");
    QUIET(e.c, 100);
    next(e.c, "M", "_X.one", "{\"batch\":1,\"group\":\"A\"}");
    m = js_read_msg(e.c);
    cr_assert_eq(msg_sid(&m), 5);
    js_msg_free(&m);
    /* one ack pending now: the waiting request takes the next message at once */
    m = js_read_msg(e.c);
    cr_assert_eq(msg_sid(&m), 6);
    cr_assert_str_eq(m.data, "m2");
    js_msg_free(&m);
    down(&e);
}

Test(integ_jsconsx, pinned_client_and_unpin)
{
    env_t e;
    up(&e);
    stream_s(e.c, 4, NULL);
    json_decref(cons(e.c, "PC", "{\"durable_name\":\"PC\",\"ack_policy\":\"explicit\","
                                "\"priority_groups\":[\"A\"],\"priority_policy\":\"pinned_client\"}"));
    next(e.c, "PC", "_X.one", "{\"batch\":1,\"group\":\"A\"}");
    js_msg_t m = js_read_msg(e.c);
    cr_assert_eq(msg_sid(&m), 5);
    cr_assert_str_eq(m.data, "m1");
    cr_assert_not_null(m.hdr);
    cr_assert(strncmp(m.hdr, "NATS/1.0\r\nNats-Pin-Id: ", 23) == 0, "%s", m.hdr);
    char pin[64];
    snprintf(pin, sizeof pin, "%.*s", (int)strcspn(m.hdr + 23, "\r"), m.hdr + 23);
    cr_assert_eq(strlen(pin), 22);
    char want[128];
    snprintf(want, sizeof want, "NATS/1.0\r\nNats-Pin-Id: %s\r\n\r\n", pin);
    cr_assert_str_eq(m.hdr, want);
    js_msg_free(&m);

    json_t *j = EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PINNED.S.PC",
                      "io.nats.jetstream.advisory.v1.consumer_group_pinned");
    KEYS(j, "type,id,timestamp,account,stream,consumer,group,pinned_id");
    cr_assert_str_eq(jstr(j, "account"), "$G");
    cr_assert_str_eq(jstr(j, "group"), "A");
    cr_assert_str_eq(jstr(j, "pinned_id"), pin);
    json_decref(j);

    j = api(e.c, "$JS.API.CONSUMER.INFO.S.PC", "");
    json_t *pg = json_array_get(jget(j, "priority_groups"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(pg, "group")), "A");
    cr_assert_str_eq(json_string_value(json_object_get(pg, "pinned_client_id")), pin);
    cr_assert_str_neq(json_string_value(json_object_get(pg, "pinned_ts")), "0001-01-01T00:00:00Z");
    json_decref(j);

    /* another client without the id waits; a wrong id is refused at once */
    next(e.c, "PC", "_X.two", "{\"batch\":1,\"group\":\"A\",\"expires\":20000000000}");
    QUIET(e.c, 100);
    next(e.c, "PC", "_P.bad", "{\"batch\":1,\"group\":\"A\",\"id\":\"nope\"}");
    STATUS(e.c, "_P.bad", "423 Nats-Pin-Id mismatch");
    /* the pinned client with its id is served, with the header */
    char body[128];
    snprintf(body, sizeof body, "{\"batch\":1,\"group\":\"A\",\"id\":\"%s\"}", pin);
    next(e.c, "PC", "_X.one", body);
    m = js_expect_msg_at(__FILE__, __LINE__, e.c, "s.2", want, "m2");
    cr_assert_eq(msg_sid(&m), 5);
    js_msg_free(&m);

    /* UNPIN errors, then an unpin: the waiting client gets pinned with a new id */
    j = api(e.c, "$JS.API.CONSUMER.UNPIN.S.PC", "{}");
    JSON_EQ(j, "{\"type\":\"io.nats.jetstream.api.v1.consumer_unpin_response\",\"error\":{"
               "\"code\":400,\"err_code\":10025,\"description\":\"invalid JSON: consumer group "
               "not specified\"}}");
    json_decref(j);
    j = api(e.c, "$JS.API.CONSUMER.UNPIN.S.PC", "{\"group\":\"a b\"}");
    cr_assert_eq(jint(j, "error.err_code"), 10162);
    json_decref(j);
    j = api(e.c, "$JS.API.CONSUMER.UNPIN.S.PC", "{\"group\":\"B\"}");
    cr_assert_eq(jint(j, "error.err_code"), 10160);
    json_decref(j);
    j = api(e.c, "$JS.API.CONSUMER.UNPIN.S.PC", "{\"group\":\"A\"}");
    JSON_EQ(j, "{\"type\":\"io.nats.jetstream.api.v1.consumer_unpin_response\"}");
    json_decref(j);
    j = EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.S.PC",
              "io.nats.jetstream.advisory.v1.consumer_group_unpinned");
    KEYS(j, "type,id,timestamp,account,stream,consumer,group,reason");
    cr_assert_str_eq(jstr(j, "reason"), "admin");
    json_decref(j);
    m = js_read_msg(e.c);
    cr_assert_eq(msg_sid(&m), 6);
    cr_assert_str_eq(m.data, "m3");
    cr_assert(strncmp(m.hdr, "NATS/1.0\r\nNats-Pin-Id: ", 23) == 0);
    cr_assert(strncmp(m.hdr + 23, pin, 22) != 0, "a new pin");
    js_msg_free(&m);
    json_decref(EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PINNED.S.PC",
                      "io.nats.jetstream.advisory.v1.consumer_group_pinned"));
    /* the old id is now a wrong one */
    next(e.c, "PC", "_X.one", body);
    STATUS(e.c, "_X.one", "423 Nats-Pin-Id mismatch");
    down(&e);
}

Test(integ_jsconsx, pin_times_out)
{
    env_t e;
    up(&e);
    stream_s(e.c, 2, NULL);
    json_decref(cons(e.c, "T", "{\"durable_name\":\"T\",\"ack_policy\":\"explicit\","
                               "\"priority_groups\":[\"A\"],\"priority_policy\":\"pinned_client\","
                               "\"priority_timeout\":300000000}"));
    next(e.c, "T", "_X.one", "{\"batch\":1,\"group\":\"A\"}");
    js_msg_free_ret(js_read_msg(e.c));
    json_decref(EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.PINNED.S.T",
                      "io.nats.jetstream.advisory.v1.consumer_group_pinned"));
    next(e.c, "T", "_X.two", "{\"batch\":1,\"group\":\"A\",\"expires\":20000000000}");
    json_t *j = EVENT(&e, "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.S.T",
                      "io.nats.jetstream.advisory.v1.consumer_group_unpinned");
    cr_assert_str_eq(jstr(j, "reason"), "timeout");
    json_decref(j);
    js_msg_t m = js_read_msg(e.c);
    cr_assert_eq(msg_sid(&m), 6);
    cr_assert_str_eq(m.data, "m2");
    js_msg_free(&m);
    down(&e);
}

/* ---- pacing and sampling --------------------------------------------------------------------- */

Test(integ_jsconsx, replay_original_spacing)
{
    env_t e;
    up(&e);
    stream_s(e.c, 1, NULL);
    sleep_ms(400);
    pub(e.c, "s.2", "m2");
    json_decref(cons(e.c, "R", "{\"durable_name\":\"R\",\"ack_policy\":\"none\","
                               "\"replay_policy\":\"original\"}"));
    long long t0 = now_ms();
    next(e.c, "R", "_P.a", "{\"batch\":2,\"expires\":10000000000}");
    js_msg_t m = js_read_msg(e.c);
    cr_assert_str_eq(m.data, "m1");
    js_msg_free(&m);
    m = js_read_msg(e.c);
    cr_assert_str_eq(m.data, "m2");
    js_msg_free(&m);
    long long dt = now_ms() - t0;
    cr_assert(dt >= 350, "the second message came after %lld ms", dt);
    down(&e);
}

Test(integ_jsconsx, rate_limit_paces_push)
{
    env_t e;
    up(&e);
    /* burst = max_msg_size 300 bytes; 8000 bps = 1000 bytes/s */
    stream_s(e.c, 0, ",\"max_msg_size\":300");
    char big[201];
    memset(big, 'x', 200);
    big[200] = '\0';
    for (int i = 0; i < 4; i++)
        pub(e.c, "s.1", big);
    json_decref(cons(e.c, "RL", "{\"durable_name\":\"RL\",\"ack_policy\":\"none\","
                                "\"deliver_subject\":\"_D\",\"rate_limit_bps\":8000}"));
    long long t0 = now_ms();
    ND_SEND(e.c, "SUB _D 3\r\n");
    for (int i = 0; i < 4; i++) {
        js_msg_t m = js_read_msg(e.c);
        cr_assert_str_eq(m.subject, "s.1");
        js_msg_free(&m);
    }
    long long dt = now_ms() - t0;
    /* ~250 bytes each: one from the burst, three more at ~250 ms each */
    cr_assert(dt >= 500, "4 messages in %lld ms", dt);
    down(&e);
}

Test(integ_jsconsx, ack_metric_sampled)
{
    env_t e;
    up(&e);
    stream_s(e.c, 1, NULL);
    json_decref(cons(e.c, "SM", "{\"durable_name\":\"SM\",\"ack_policy\":\"explicit\","
                                "\"sample_freq\":\"100%\"}"));
    next(e.c, "SM", "_P.a", "1");
    js_msg_t m = js_read_msg(e.c);
    char *ack = strdup(m.reply);
    js_msg_free(&m);
    js_publish(e.c, ack, "_P.ack", NULL, "+ACK");
    js_msg_free_ret(js_expect_msg_at(__FILE__, __LINE__, e.c, "_P.ack", NULL, ""));
    free(ack);
        json_t *j = EVENT(&e, "$JS.EVENT.METRIC.CONSUMER.ACK.S.SM",
                      "io.nats.jetstream.metric.v1.consumer_ack");
    KEYS(j, "type,id,timestamp,stream,consumer,consumer_seq,stream_seq,ack_time,deliveries");
    cr_assert_eq(jint(j, "consumer_seq"), 1);
    cr_assert_eq(jint(j, "stream_seq"), 1);
    cr_assert_eq(jint(j, "deliveries"), 1);
    cr_assert(jint(j, "ack_time") > 0);
    json_decref(j);
    down(&e);
}
